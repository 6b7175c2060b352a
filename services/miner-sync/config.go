package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"drover.dev/computehorde/subtensor"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/shared/config"
	"drover.dev/shared/probe"
	"drover.dev/shared/service"
	"drover.dev/shared/tracing"
)

// Config is the miner-sync's configuration, read from MINER_SYNC_* environment variables.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8081" desc:"HTTP listen address"`

	MetagraphURL     string        `envconfig:"METAGRAPH_URL" desc:"where the metagraph comes from: pylon+http(s)://host:port (Pylon's neurons endpoint), subtensor+ws(s)://host:port (a subtensor node), http(s)://… (GET, JSON) or file:///path; every sync fails with an event when empty"`
	Netuid           int           `envconfig:"BITTENSOR_NETUID" default:"12" desc:"the subnet whose neurons Pylon is asked for"`
	PylonToken       string        `envconfig:"PYLON_IDENTITY_TOKEN" secret:"true" desc:"bearer token sent to Pylon"`
	PylonAddress     string        `envconfig:"PYLON_ADDRESS" desc:"Pylon's http(s)://host:port (host:port means http), ComputeHorde's setting: the source when METAGRAPH_URL is empty"`
	Network          string        `envconfig:"BITTENSOR_NETWORK" desc:"finney, test or host:port of a subtensor node, ComputeHorde's setting: the source (subtensor+ws://…) when neither METAGRAPH_URL nor PYLON_ADDRESS is set"`
	SyncInterval     time.Duration `envconfig:"SYNC_INTERVAL" default:"1m" desc:"how often the metagraph is synced (also once at start)"`
	SourceTimeout    time.Duration `envconfig:"SOURCE_TIMEOUT" default:"10s" desc:"longest a metagraph fetch may take, body included"`
	SourceMaxBytes   int64         `envconfig:"SOURCE_MAX_BYTES" default:"4194304" desc:"largest metagraph answer accepted, in bytes (4,096 UIDs at ~300 bytes each take 1.2 MiB)"`
	SourceMaxEntries int           `envconfig:"SOURCE_MAX_ENTRIES" default:"4096" desc:"most metagraph entries accepted (Bittensor caps a subnet at 4,096 UIDs)"`
}

// rescueAfter is River's RescueStuckJobsAfter: the shortest timeout of any kind the service works
// (a sync's, a probe's). River's rescuer (every 30 s) takes back a running job once both it and
// the kind's own timeout have passed, so a job of a process that died is back within its own
// timeout and 30 s.
func rescueAfter(syncTimeout time.Duration) time.Duration { return min(syncTimeout, probe.Timeout) }

// Check lists every problem of the configuration that can be seen without the network; the
// service refuses to start with any (service.Main), and `miner-sync check-config` prints them.
// Without a metagraph source every sync would fail, so none is a problem here.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("MINER_SYNC_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	source, err := sourceOf(c)
	switch {
	case err != nil:
		errs = append(errs, err)
	case source == nil:
		errs = append(errs, errors.New("no metagraph source: set MINER_SYNC_METAGRAPH_URL (pylon+http://…, subtensor+ws://…, http(s)://… or file:///…), or ComputeHorde's PYLON_ADDRESS or BITTENSOR_NETWORK"))
	}
	return errs
}

// sourceOf builds the metagraph source METAGRAPH_URL names, or ComputeHorde's PYLON_ADDRESS when
// it is empty; nil when neither is set.
func sourceOf(cfg Config) (metagraph.Source, error) {
	if cfg.MetagraphURL == "" {
		var err error
		if cfg.MetagraphURL, err = aliasSource(cfg); cfg.MetagraphURL == "" || err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(cfg.MetagraphURL)
	if err != nil {
		return nil, fmt.Errorf("MINER_SYNC_METAGRAPH_URL: %w", err)
	}
	if strings.Contains(u.Scheme, "+") && (cfg.Netuid < 0 || cfg.Netuid > 65535) {
		return nil, fmt.Errorf("MINER_SYNC_BITTENSOR_NETUID: %d is not a netuid (0..65535)", cfg.Netuid)
	}
	switch u.Scheme {
	case "pylon+http", "pylon+https":
		return &metagraph.PylonSource{
			BaseURL: strings.TrimPrefix(cfg.MetagraphURL, "pylon+"), Token: cfg.PylonToken, Netuid: cfg.Netuid,
			Timeout: cfg.SourceTimeout, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries,
			Client: &http.Client{Transport: tracing.Transport(nil)},
		}, nil
	case "subtensor+ws", "subtensor+wss":
		return &metagraph.SubtensorSource{
			URL: strings.TrimPrefix(cfg.MetagraphURL, "subtensor+"), Netuid: cfg.Netuid,
			Timeout: cfg.SourceTimeout, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries,
		}, nil
	case "http", "https":
		return &metagraph.HTTPSource{URL: cfg.MetagraphURL, Client: &http.Client{Transport: tracing.Transport(nil)}, Timeout: cfg.SourceTimeout, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries}, nil
	case "file":
		return &metagraph.FileSource{Path: u.Path, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries}, nil
	}
	return nil, fmt.Errorf("MINER_SYNC_METAGRAPH_URL: scheme %q: want pylon+http(s), subtensor+ws(s), http, https or file", u.Scheme)
}

// aliasSource is the METAGRAPH_URL that ComputeHorde's settings name: pylon+PYLON_ADDRESS, or
// else the subtensor node BITTENSOR_NETWORK names.
func aliasSource(cfg Config) (string, error) {
	if cfg.PylonAddress != "" {
		addr := cfg.PylonAddress
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		return "pylon+" + addr, nil
	}
	if cfg.Network == "" {
		return "", nil
	}
	node, err := subtensor.NetworkURL(cfg.Network)
	if err != nil {
		return "", err
	}
	return "subtensor+" + node, nil
}
