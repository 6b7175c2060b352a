// Command miner-sync keeps the miners table in step with the subnet's metagraph.
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"drover.dev/queue"
	"drover.dev/services/miner-sync/internal/api"
	"drover.dev/shared/config"
	"drover.dev/shared/probe"
	"drover.dev/shared/service"
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

func main() {
	var cfg Config
	service.Main(queue.MinerSync.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	source, err := sourceOf(cfg)
	if err != nil {
		return err
	}
	syncTimeout := cfg.SourceTimeout + 30*time.Second
	rescue := rescueAfter(syncTimeout)
	spec := service.Spec{
		Service:  queue.MinerSync,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   map[string]int{queue.QueueMetagraph: 1},
		// Every kind has its own Timeout; River's client-wide one must not exceed RescueStuckJobsAfter.
		JobTimeout:           rescue,
		RescueStuckJobsAfter: rescue,
		OpenAPI:              api.OpenAPI,
	}
	return service.Run(ctx, spec, stdout, func(d *service.Deps) error { return wire(d, cfg, source, syncTimeout) })
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
