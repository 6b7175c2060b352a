package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/riverqueue/river"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/queue"
	"drover.dev/services/scorer/internal/api"
	"drover.dev/services/scorer/internal/direct"
	"drover.dev/services/scorer/internal/pylon"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/work"
	"drover.dev/shared/service"
)

// wire registers the score_batch worker, and the set_weights worker and its periodic job when
// weights go to the chain (setWeights), builds the River client and registers the routes.
func wire(d *service.Deps, cfg Config, params scoring.Params, signer *direct.Client, setWeights bool) error {
	d.Logger.Info("scoring parameters", "class_weights", scoring.FormatClassWeights(params.ClassWeights))
	m := work.NewMetrics(d.Server.Metrics)
	river.AddWorker(d.Workers, &work.ScoreBatchWorker{
		DB: d.Pool, Params: params, Logger: d.Logger, SetWeights: setWeights, Metrics: m,
	})
	d.Gauges(work.Gauges...)
	addWeightSetting(d, cfg, signer, m)
	if _, err := d.NewClient(); err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool)
	return nil
}

// addWeightSetting adds the set_weights worker and its periodic job when Pylon is configured, or
// a subtensor node and a hotkey to sign with (signer).
func addWeightSetting(d *service.Deps, cfg Config, signer *direct.Client, m *work.Metrics) {
	w := &work.SetWeightsWorker{
		DB: d.Pool, RateLimitBlocks: cfg.WeightsRateLimit, Logger: d.Logger, Metrics: m,
		Validator: cfg.ValidatorHotkey,
	}
	switch {
	case cfg.PylonAddress != "":
		w.Pylon = &pylon.Client{
			BaseURL: cfg.PylonAddress, Identity: cfg.PylonIdentity, Token: cfg.PylonToken, Netuid: cfg.Netuid,
			Timeout: cfg.PylonTimeout, MaxBytes: pylon.DefaultMaxBytes,
		}
	case signer != nil:
		w.Direct, w.Validator = signer, signer.Key.Address()
		d.Logger.Info("no PYLON_ADDRESS: set_weights is signed here and submitted to the subtensor node",
			"node", signer.URL, "netuid", signer.Netuid, "hotkey", w.Validator)
	default:
		d.Logger.Info("weights are served on GET /v1/weights, not set on chain (SCORER_WEIGHTS_MODE=serve-only, or a test)")
		return
	}
	river.AddWorker(d.Workers, w)
	d.PeriodicJobs = append(d.PeriodicJobs, river.NewPeriodicJob(
		river.PeriodicInterval(cfg.WeightsInterval),
		func() (river.JobArgs, *river.InsertOpts) { return queue.SetWeightsArgs{Reason: "periodic"}, nil },
		&river.PeriodicJobOpts{ID: "set_weights", RunOnStart: true},
	))
}

// pylonAddress checks PYLON_ADDRESS and the netuid; an address without a scheme (host:port, as
// ComputeHorde's deployments often write it) is taken as http.
func pylonAddress(c Config) (string, error) {
	if c.PylonAddress == "" {
		return "", nil
	}
	addr := c.PylonAddress
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("SCORER_PYLON_ADDRESS: %q is not an http(s)://host:port address", c.PylonAddress)
	}
	if c.Netuid < 0 || c.Netuid > 65535 {
		return "", fmt.Errorf("SCORER_BITTENSOR_NETUID: %d is not a netuid (0..65535)", c.Netuid)
	}
	return addr, nil
}

// directClient is the signer of set_weights when no Pylon is configured and a subtensor node is
// (SUBTENSOR_URL, or BITTENSOR_NETWORK); nil when weights go through Pylon or nowhere. The node
// without a hotkey to sign with, or a VALIDATOR_HOTKEY other than the hotkey's, stops the start.
func directClient(c Config) (*direct.Client, error) {
	if c.PylonAddress != "" {
		return nil, nil
	}
	node := c.SubtensorURL
	switch {
	case node == "" && c.Network != "":
		u, err := subtensor.NetworkURL(c.Network)
		if err != nil {
			return nil, err
		}
		node = u
	case node == "":
		return nil, nil
	}
	if u, err := url.Parse(node); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("SCORER_SUBTENSOR_URL: %q is not a ws(s)://host:port address", node)
	}
	if c.Netuid < 0 || c.Netuid > 65535 {
		return nil, fmt.Errorf("SCORER_BITTENSOR_NETUID: %d is not a netuid (0..65535)", c.Netuid)
	}
	keys := hotkey.Settings{
		Prefix: "SCORER_", URI: c.HotkeyURI, Path: c.WalletPath,
		WalletName: c.WalletName, WalletHotkey: c.WalletHotkey, WalletDir: c.WalletDir,
	}
	key, err := keys.Load()
	if err != nil {
		return nil, fmt.Errorf("signing set_weights for %s: %w", node, err)
	}
	if c.ValidatorHotkey != "" && c.ValidatorHotkey != key.Address() {
		return nil, fmt.Errorf("SCORER_VALIDATOR_HOTKEY %s is not the signing hotkey %s", c.ValidatorHotkey, key.Address())
	}
	return &direct.Client{URL: node, Netuid: uint16(c.Netuid), Key: key, Timeout: c.SubtensorTimeout}, nil
}
