package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"drover.dev/computehorde/subtensor"
	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/api"
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/work"
	"drover.dev/shared/service"
)

// wire registers the sync_metagraph worker and the periodic sync, builds the River client, and
// registers the routes, which insert syncs with it.
func wire(d *service.Deps, cfg Config, source metagraph.Source, syncTimeout time.Duration) error {
	river.AddWorker(d.Workers, &work.SyncMetagraphWorker{
		DB: d.Pool, Source: source, Logger: d.Logger, JobTimeout: syncTimeout,
		Metrics: work.NewMetrics(d.Server.Metrics),
	})
	d.Gauges(work.Gauges...)
	d.PeriodicJobs = append(d.PeriodicJobs, river.NewPeriodicJob(
		river.PeriodicInterval(cfg.SyncInterval),
		func() (river.JobArgs, *river.InsertOpts) { return queue.SyncMetagraphArgs{Reason: "periodic"}, nil },
		&river.PeriodicJobOpts{ID: "sync_metagraph", RunOnStart: true},
	))
	if _, err := d.NewClient(); err != nil {
		return err
	}
	api.Routes(d.Server.API, d.Pool, d.Inserters[queue.MinerSync])
	return nil
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
		}, nil
	case "subtensor+ws", "subtensor+wss":
		return &metagraph.SubtensorSource{
			URL: strings.TrimPrefix(cfg.MetagraphURL, "subtensor+"), Netuid: cfg.Netuid,
			Timeout: cfg.SourceTimeout, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries,
		}, nil
	case "http", "https":
		return &metagraph.HTTPSource{URL: cfg.MetagraphURL, Timeout: cfg.SourceTimeout, MaxBytes: cfg.SourceMaxBytes, MaxEntries: cfg.SourceMaxEntries}, nil
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
