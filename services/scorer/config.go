package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/subtensor"
	"drover.dev/services/scorer/internal/direct"
	"drover.dev/services/scorer/internal/pylon"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/work"
	"drover.dev/shared/config"
	"drover.dev/shared/probe"
	"drover.dev/shared/service"
)

// Config is the scorer's configuration, read from SCORER_* environment variables. The scoring
// constants default to upstream ComputeHorde's.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8083" desc:"HTTP listen address"`
	Workers  int    `envconfig:"WORKERS" default:"2" desc:"score_batch jobs worked at once"`

	ClassWeights      string  `envconfig:"CLASS_WEIGHTS" default:"spin_up-4min.gpu-24gb=99,always_on.llm.a6000=1,always_on.test=0" desc:"executor class weights, class=weight,...; a class not listed weighs 0"`
	ExcusedScore      float64 `envconfig:"EXCUSED_SCORE" default:"1.0" desc:"score of a job excused by valid busy receipts (completed 1, failed 0)"`
	HordeClass        string  `envconfig:"HORDE_CLASS" default:"spin_up-4min.gpu-24gb" desc:"executor class scored with horde_score"`
	HordeAlpha        float64 `envconfig:"HORDE_ALPHA" default:"0" desc:"horde_score α: weight of the horde's average score"`
	HordeBeta         float64 `envconfig:"HORDE_BETA" default:"0" desc:"horde_score β: steepness 10^β of the sigmoid over 1/n"`
	HordeDelta        float64 `envconfig:"HORDE_DELTA" default:"1" desc:"horde_score δ: where the sigmoid over 1/n is 0.5"`
	DancingMultiplier float64 `envconfig:"DANCING_MULTIPLIER" default:"1.3" desc:"bonus for a miner whose weighted executor count changed between the two last peak batches"`
	DancingRatio      float64 `envconfig:"DANCING_RATIO" default:"1.4" desc:"change (high/low) of the weighted executor count that earns the dancing bonus"`
	NonPeakPenalty    float64 `envconfig:"NON_PEAK_PENALTY" default:"0.8" desc:"multiplier for a miner keeping too few of its peak executors in a non-peak batch"`
	NonPeakMinRatio   float64 `envconfig:"NON_PEAK_MIN_RATIO" default:"0.1" desc:"share of its peak executors, per class, a miner must keep outside the peak"`

	WeightsMode      string        `envconfig:"WEIGHTS_MODE" default:"set" desc:"set: the weights go to the chain, through PYLON_ADDRESS or signed here for SUBTENSOR_URL (or BITTENSOR_NETWORK), and a configuration with neither is refused; serve-only: they are only served on GET /v1/weights, the chain settings ignored"`
	PylonAddress     string        `envconfig:"PYLON_ADDRESS" desc:"Pylon's http(s)://host:port: the weights are set on chain through it"`
	PylonIdentity    string        `envconfig:"PYLON_IDENTITY_NAME" default:"validator" desc:"the identity Pylon sets weights for"`
	PylonToken       string        `envconfig:"PYLON_IDENTITY_TOKEN" secret:"true" desc:"bearer token sent to Pylon"`
	PylonTimeout     time.Duration `envconfig:"PYLON_TIMEOUT" default:"30s" desc:"longest each call to Pylon may take, answer included"`
	Netuid           int           `envconfig:"BITTENSOR_NETUID" default:"12" desc:"the subnet the weights are set on"`
	WeightsInterval  time.Duration `envconfig:"WEIGHTS_INTERVAL" default:"5m" desc:"how often the latest weights are sent (also after every scoring, and once at start)"`
	WeightsRateLimit int64         `envconfig:"WEIGHTS_RATE_LIMIT_BLOCKS" default:"100" desc:"the subnet's weights_set_rate_limit: blocks that must pass between two weight settings"`
	ValidatorHotkey  string        `envconfig:"VALIDATOR_HOTKEY" desc:"the validator's SS58 hotkey: its last_update in Pylon's neurons confirms the weights sent are on chain; no confirmation when empty (signing directly, the hotkey's own address)"`

	// Without Pylon, scorer signs set_weights itself and submits it to a subtensor node.
	SubtensorURL     string        `envconfig:"SUBTENSOR_URL" desc:"ws(s)://host:port of a subtensor node: without PYLON_ADDRESS, scorer signs set_weights with the validator hotkey and submits it there (refused while the subnet has commit-reveal on)"`
	Network          string        `envconfig:"BITTENSOR_NETWORK" desc:"ComputeHorde's name for the node: finney, test or host:port; used when SUBTENSOR_URL is empty"`
	SubtensorTimeout time.Duration `envconfig:"SUBTENSOR_TIMEOUT" default:"30s" desc:"longest the read of the subnet, and the submission, may each take"`
	HotkeyURI        string        `envconfig:"HOTKEY_URI" secret:"true" desc:"validator hotkey that signs set_weights, as a secret URI (//Alice for development)"`
	WalletPath       string        `envconfig:"WALLET_PATH" desc:"validator hotkey as a Bittensor wallet hotkey file (used when HOTKEY_URI is empty)"`
	WalletName       string        `envconfig:"BITTENSOR_WALLET_NAME" desc:"validator wallet name, ComputeHorde's setting (used when HOTKEY_URI and WALLET_PATH are empty)"`
	WalletHotkey     string        `envconfig:"BITTENSOR_WALLET_HOTKEY_NAME" default:"default" desc:"the wallet's hotkey name"`
	WalletDir        string        `envconfig:"HOST_WALLET_DIR" default:"~/.bittensor/wallets" desc:"folder of wallets in Bittensor's layout: <dir>/<wallet>/hotkeys/<hotkey>"`
}

// rescueAfter is River's RescueStuckJobsAfter: the shortest timeout of any kind the service
// works. River's rescuer (every 30 s) takes back a running job once both it and the kind's own
// timeout have passed, so a job of a process that died is back within its own timeout and 30 s.
func rescueAfter(cfg Config, signer *direct.Client) time.Duration {
	shortest := min(probe.Timeout, work.ScoreTimeout)
	switch {
	case cfg.PylonAddress != "":
		shortest = min(shortest, (&work.SetWeightsWorker{Pylon: &pylon.Client{Timeout: cfg.PylonTimeout}}).Timeout(nil))
	case signer != nil:
		shortest = min(shortest, (&work.SetWeightsWorker{Direct: signer}).Timeout(nil))
	}
	return shortest
}

// Check lists every problem of the configuration that can be seen without the network; the
// service refuses to start with any (service.Main), and `scorer check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("SCORER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.params(); err != nil {
		errs = append(errs, err)
	}
	if err := c.checkWeightsMode(); err != nil {
		errs = append(errs, err)
	}
	if _, err := pylonAddress(c.forMode()); err != nil {
		errs = append(errs, err)
	}
	if _, err := directClient(c.forMode()); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// Weights modes (WEIGHTS_MODE).
const (
	weightsSet       = "set"
	weightsServeOnly = "serve-only"
)

// forMode drops the chain settings of a serve-only scorer, so that it never sets weights
// whatever else its environment holds (a shared ConfigMap's subtensor URL).
func (c Config) forMode() Config {
	if c.WeightsMode == weightsServeOnly {
		c.PylonAddress, c.SubtensorURL, c.Network = "", "", ""
	}
	return c
}

// checkWeightsMode refuses a scorer that would neither set weights nor say it only serves them:
// a validator whose weights never reach the chain loses its subnet's emissions silently.
func (c Config) checkWeightsMode() error {
	chain := c.PylonAddress != "" || c.SubtensorURL != "" || c.Network != ""
	switch c.WeightsMode {
	case weightsSet:
		if !chain {
			return fmt.Errorf("SCORER_WEIGHTS_MODE is %q but nothing sets the weights on chain: set SCORER_PYLON_ADDRESS (Pylon), "+
				"or SCORER_SUBTENSOR_URL or BITTENSOR_NETWORK with the validator hotkey; or SCORER_WEIGHTS_MODE=%s to only serve them", weightsSet, weightsServeOnly)
		}
	case weightsServeOnly:
	default:
		return fmt.Errorf("SCORER_WEIGHTS_MODE: %q, want %s or %s", c.WeightsMode, weightsSet, weightsServeOnly)
	}
	return nil
}

// params reads the scoring constants; a service with meaningless ones refuses to start.
func (c Config) params() (scoring.Params, error) {
	weights, err := scoring.ParseClassWeights(c.ClassWeights)
	if err != nil {
		return scoring.Params{}, fmt.Errorf("SCORER_CLASS_WEIGHTS: %w", err)
	}
	p := scoring.Params{
		ClassWeights: weights, ExcusedScore: c.ExcusedScore, HordeClass: c.HordeClass,
		HordeAlpha: c.HordeAlpha, HordeBeta: c.HordeBeta, HordeDelta: c.HordeDelta,
		DancingMultiplier: c.DancingMultiplier, DancingRatio: c.DancingRatio,
		NonPeakPenalty: c.NonPeakPenalty, NonPeakMinRatio: c.NonPeakMinRatio,
	}
	return p, p.Validate()
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
