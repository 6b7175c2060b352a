package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/protocol"
)

// config is the fleet's configuration plus what only the command needs.
type config struct {
	minersim.Config
	classes    string
	logLevel   slog.Level
	pylonAddr  string // where the Pylon stub listens; none when empty
	pylonToken string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		cfg        config
		baseIP     string
		validators string
		scenario   string
		behaviours multiFlag
		verbose    bool
	)
	fs := flag.NewFlagSet("minersim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }
	fs.IntVar(&cfg.Miners, "miners", 10, "number of simulated miners")
	fs.StringVar(&cfg.classes, "classes", "always_on.test=1", "executors per miner: `class=count,...` (sent as the manifest, in this order)")
	fs.StringVar(&baseIP, "base-ip", minersim.DefaultBaseIP.String(), "first miner's `address`; miner i listens on base+i, skipping .0 and .255")
	fs.IntVar(&cfg.BasePort, "base-port", 0, "first miner's `port`; miner i listens on base+i; 0 lets the kernel pick every port")
	fs.StringVar(&cfg.ControlAddr, "control", "127.0.0.1:0", "control `address` serving /metagraph, /arrivals, /jobs, /stats, /miners, /healthz")
	fs.StringVar(&validators, "validators", "", "known validators: `uri-or-ss58=stake[:inactive],...` (default //Alice=100000, //minersim-validator//rich=50000, //minersim-validator//poor=5000, //minersim-validator//inactive=50000:inactive)")
	fs.StringVar(&cfg.KeySeed, "key-seed", minersim.DefaultKeySeed, "miner i's hotkey is the dev key //`seed`//i, its coldkey //seed//i//coldkey")
	fs.DurationVar(&cfg.SpinUp, "spin-up", defaultSpinUp, "simulated executor spin-up between accepting a job and reporting ready")
	fs.StringVar(&scenario, "scenario", "", "scenario `file` (JSON) scripting behaviours; -behaviour flags apply on top")
	fs.Var(&behaviours, "behaviour", "scripted behaviour `TARGET:key=value,...` (repeatable; see BEHAVIOURS)")
	fs.IntVar(&cfg.Netuid, "netuid", minersim.DefaultNetuid, "netuid reported by /metagraph")
	fs.Int64Var(&cfg.Block, "block", 0, "block number reported by /metagraph")
	fs.IntVar(&cfg.MaxFrameSize, "max-frame", minersim.DefaultMaxFrameSize, "largest frame a miner reads, in `bytes` (upstream: 50 MiB)")
	fs.IntVar(&cfg.OversizeBytes, "oversize-bytes", protocol.DefaultMaxFrameSize+1, "size of the frame sent by the oversize behaviour, in `bytes`")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", minersim.DefaultIdleTimeout, "close a connection silent for this long")
	fs.DurationVar(&cfg.PingInterval, "ping-interval", minersim.DefaultPingInterval, "how often miners ping their validators")
	fs.BoolVar(&cfg.KeepFrames, "keep-frames", false, "keep every received frame verbatim in /arrivals (memory grows with traffic)")
	fs.StringVar(&cfg.pylonAddr, "pylon", "", "`address` of a Pylon stub serving the metagraph as Pylon's neurons endpoint and recording weights set through it (GET /weights-sets); off when empty")
	fs.StringVar(&cfg.pylonToken, "pylon-token", "", "bearer `token` the Pylon stub requires; none when empty")
	fs.BoolVar(&verbose, "v", false, "log connection-level events to stderr")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if verbose {
		cfg.logLevel = slog.LevelDebug
	}
	var err error
	if cfg.BaseIP, err = netip.ParseAddr(baseIP); err != nil {
		return config{}, fmt.Errorf("-base-ip: %w", err)
	}
	if cfg.Manifest, err = parseClasses(cfg.classes); err != nil {
		return config{}, fmt.Errorf("-classes: %w", err)
	}
	if validators != "" {
		if cfg.Validators, err = parseValidators(validators); err != nil {
			return config{}, fmt.Errorf("-validators: %w", err)
		}
	}
	if scenario != "" {
		if cfg.Scenario, err = minersim.LoadScenario(scenario); err != nil {
			return config{}, err
		}
	}
	for _, b := range behaviours {
		if err := cfg.Scenario.Apply(b); err != nil {
			return config{}, fmt.Errorf("-behaviour: %w", err)
		}
	}
	return cfg, nil
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func parseClasses(s string) (protocol.Manifest, error) {
	var m protocol.Manifest
	for part := range strings.SplitSeq(s, ",") {
		class, count, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(count)
		if !ok || class == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want class=count with a positive count", part)
		}
		m = append(m, protocol.ManifestEntry{Class: class, Count: n})
	}
	return m, nil
}

func parseValidators(s string) ([]minersim.Validator, error) {
	var vs []minersim.Validator
	for part := range strings.SplitSeq(s, ",") {
		key, rest, ok := strings.Cut(strings.TrimSpace(part), "=")
		stake, inactive := strings.CutSuffix(rest, ":inactive")
		n, err := strconv.ParseFloat(stake, 64)
		if !ok || key == "" || err != nil {
			return nil, fmt.Errorf("%q: want uri-or-ss58=stake[:inactive]", part)
		}
		v := minersim.Validator{Stake: n, Inactive: inactive}
		if strings.HasPrefix(key, "/") || strings.Contains(key, " ") || strings.HasPrefix(key, "0x") {
			v.URI = key
		} else {
			v.Hotkey = key
		}
		vs = append(vs, v)
	}
	return vs, nil
}
