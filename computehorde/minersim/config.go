package minersim

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"drover.dev/computehorde/protocol"
)

// Defaults for the zero fields of Config.
const (
	// DefaultMaxFrameSize is upstream's websocket limit: a real miner reads frames up to 50 MiB.
	DefaultMaxFrameSize = 50 << 20
	// DefaultIdleTimeout outlasts the longest quiet period of a batch, the 4-minute spin-up.
	DefaultIdleTimeout  = 6 * time.Minute
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 20 * time.Second
	DefaultNetuid       = 12
	DefaultKeySeed      = "minersim"
	// MinValidatorStake is the stake below which a miner treats a listed validator as inactive,
	// as upstream miners do.
	MinValidatorStake = 1000
)

// DefaultBaseIP is the first miner's address; the rest follow it on the loopback network.
var DefaultBaseIP = netip.MustParseAddr("127.0.0.2")

// Config describes a fleet. Only Miners is required; every other zero field takes a default.
type Config struct {
	// Miners is how many simulated miners to serve.
	Miners int
	// Manifest is every miner's executors per class; empty means always_on.test=1.
	Manifest protocol.Manifest
	// BaseIP is miner 0's address; miner i listens on BaseIP+i, skipping .0 and .255 octets.
	BaseIP netip.Addr
	// BasePort is miner 0's port and miner i listens on BasePort+i; zero lets the kernel pick
	// every port (see Fleet.Miners for the result).
	BasePort int
	// ControlAddr serves the metagraph, arrival records and statistics; empty means
	// 127.0.0.1:0.
	ControlAddr string
	// Validators are the hotkeys miners know and the metagraph lists; nil means
	// DefaultValidators().
	Validators []Validator
	// KeySeed names the miners' dev keys: miner i's hotkey is //<KeySeed>//<i> and its coldkey
	// //<KeySeed>//<i>//coldkey (hard junctions), so runs are reproducible.
	KeySeed string
	// SpinUp is how long an executor takes to report ready after accepting a job.
	SpinUp time.Duration
	// Scenario scripts misbehaviours; the zero Scenario is a fleet of honest miners.
	Scenario Scenario
	// MaxFrameSize is the miners' read limit; zero means DefaultMaxFrameSize.
	MaxFrameSize int
	// OversizeBytes is the size of the frame sent by Behaviour.Oversize; zero means one byte
	// more than protocol.DefaultMaxFrameSize, the validator decoder's default bound.
	OversizeBytes int
	// IdleTimeout closes a connection that has sent nothing, not even a pong, for this long.
	IdleTimeout time.Duration
	// WriteTimeout bounds each frame written; a stalled validator is disconnected.
	WriteTimeout time.Duration
	// PingInterval is how often a miner pings its validator, as upstream's server does.
	PingInterval time.Duration
	// Netuid and Block are reported in the metagraph.
	Netuid int
	Block  int64
	// KeepFrames stores every received frame in its Arrival; costly at scale, so off by default.
	KeepFrames bool
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger
}

// Validator is a validator hotkey the fleet's miners know and its metagraph lists.
type Validator struct {
	// URI is a dev secret URI such as "//Alice". With it the fleet holds the key and can sign
	// busy-excuse receipts in the validator's name; without it Hotkey is required.
	URI string `json:"uri,omitempty"`
	// Hotkey is the SS58 address; derived from URI when empty.
	Hotkey string  `json:"hotkey,omitempty"`
	Stake  float64 `json:"stake"`
	// Inactive lists the validator with "validator": false; miners refuse it with
	// "Inactive validator" and its receipts do not excuse.
	Inactive bool `json:"inactive,omitempty"`
}

// DefaultValidators are //Alice, the batch-runner's usual dev key, and three receipt issuers
// that let busy-excuse tests cover every stake case: one above the 30,000 excuse threshold,
// one below it and one without a validator permit.
func DefaultValidators() []Validator {
	return []Validator{
		{URI: "//Alice", Stake: 100_000},
		{URI: "//minersim-validator//rich", Stake: 50_000},
		{URI: "//minersim-validator//poor", Stake: 5_000},
		{URI: "//minersim-validator//inactive", Stake: 50_000, Inactive: true},
	}
}

func (c Config) withDefaults() Config {
	if len(c.Manifest) == 0 {
		c.Manifest = protocol.Manifest{{Class: "always_on.test", Count: 1}}
	}
	if !c.BaseIP.IsValid() {
		c.BaseIP = DefaultBaseIP
	}
	if c.ControlAddr == "" {
		c.ControlAddr = "127.0.0.1:0"
	}
	if c.Validators == nil {
		c.Validators = DefaultValidators()
	}
	if c.KeySeed == "" {
		c.KeySeed = DefaultKeySeed
	}
	c.MaxFrameSize = orDefault(c.MaxFrameSize, DefaultMaxFrameSize)
	c.OversizeBytes = orDefault(c.OversizeBytes, protocol.DefaultMaxFrameSize+1)
	c.IdleTimeout = orDefault(c.IdleTimeout, DefaultIdleTimeout)
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	c.PingInterval = orDefault(c.PingInterval, DefaultPingInterval)
	c.Netuid = orDefault(c.Netuid, DefaultNetuid)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (c Config) validate() error {
	if c.Miners <= 0 {
		return fmt.Errorf("miners must be positive, got %d", c.Miners)
	}
	if !c.BaseIP.Is4() {
		return fmt.Errorf("base ip %s: only IPv4 is supported", c.BaseIP)
	}
	for _, e := range c.Manifest {
		if e.Count <= 0 {
			return fmt.Errorf("manifest class %s: count must be positive, got %d", e.Class, e.Count)
		}
	}
	if err := c.Scenario.Validate(); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	return nil
}
