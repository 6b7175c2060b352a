package main

import (
	"fmt"
	"os"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/shared/config"
	"drover.dev/shared/probe"
	"drover.dev/shared/service"
)

// Config is the batch-runner's configuration, read from BATCH_RUNNER_* environment variables.
type Config struct {
	config.Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8082" desc:"HTTP listen address"`

	HotkeyURI  string `envconfig:"HOTKEY_URI" secret:"true" desc:"validator hotkey as a secret URI, e.g. //Alice for development"`
	WalletPath string `envconfig:"WALLET_PATH" desc:"validator hotkey as a Bittensor wallet hotkey file (used when HOTKEY_URI is empty)"`
	// ComputeHorde's names for the same wallet: <HOST_WALLET_DIR>/<WALLET_NAME>/hotkeys/<HOTKEY_NAME>.
	WalletName   string `envconfig:"BITTENSOR_WALLET_NAME" desc:"validator wallet name, ComputeHorde's setting (used when HOTKEY_URI and WALLET_PATH are empty)"`
	WalletHotkey string `envconfig:"BITTENSOR_WALLET_HOTKEY_NAME" default:"default" desc:"the wallet's hotkey name"`
	WalletDir    string `envconfig:"HOST_WALLET_DIR" default:"~/.bittensor/wallets" desc:"folder of wallets in Bittensor's layout: <dir>/<wallet>/hotkeys/<hotkey>"`

	Cycle       time.Duration `envconfig:"CYCLE" default:"2h24m24s" desc:"period of batches (upstream: 722 blocks of 12 s)"`
	RunOnStart  bool          `envconfig:"RUN_ON_START" default:"false" desc:"run a batch as soon as the service leads"`
	PeakEvery   int64         `envconfig:"PEAK_EVERY" default:"1" desc:"every n-th batch is a peak batch for scoring"`
	JobTimeout  time.Duration `envconfig:"JOB_TIMEOUT" default:"15m" desc:"longest a batch (or a shard) may run before River cancels it (a process that died is noticed by its lease, not by this)"`
	Lease       time.Duration `envconfig:"LEASE" default:"20s" desc:"how long a running batch (or shard) stays its process's without a renewal (renewed every quarter of it); once it runs out, another replica takes the batch over"`
	LeaseSweep  time.Duration `envconfig:"LEASE_SWEEP" default:"10s" desc:"how often each replica looks for batches and shards whose lease ran out: a batch whose process died is taken over within LEASE + LEASE_SWEEP"`
	RescueAfter time.Duration `envconfig:"RESCUE_AFTER" desc:"River's RescueStuckJobsAfter: how long a running job goes before River's rescuer looks at it, which takes it back once its kind's own timeout has passed too; at most the shortest job timeout (JOB_TIMEOUT, and 30s of a probe), which it is when zero"`

	Generators   string        `envconfig:"GENERATORS" default:"*=hashcat,always_on.test=pow,always_on.cpu.8c.16gb=pow" desc:"job generator per executor class: pow (CPU) or hashcat (needs a GPU), e.g. *=pow,spin_up-4min.gpu-24gb=hashcat; a class without a GPU never gets hashcat: named, it stops the start; through *, the class is skipped with an event"`
	PoWTimeLimit time.Duration `envconfig:"POW_TIME_LIMIT" default:"10s" desc:"time limit of proof-of-work jobs"`
	PoWRange     uint64        `envconfig:"POW_RANGE" default:"32768" desc:"difficulty of proof-of-work jobs: the range of the secret, of which a miner hashes half on average"`
	Headroom     float64       `envconfig:"HEADROOM" default:"1.2" desc:"jobs pregenerated per job of the previous batch"`

	ClassTablePath string                   `envconfig:"CLASS_TABLE" desc:"JSON executor class table; the built-in table when empty"`
	SpinUps        map[string]time.Duration `envconfig:"SPIN_UPS" desc:"spin-up overrides per class, e.g. *:1s or always_on.test:500ms"`
	MinSpinUp      time.Duration            `envconfig:"MIN_SPIN_UP" default:"2s" desc:"floor of every spin-up in the stagger"`
	ClassCaps      map[string]int           `envconfig:"CLASS_CAPS" default:"always_on.llm.a6000:100" desc:"executors tested per miner and class at most"`

	ManifestTimeout time.Duration `envconfig:"MANIFEST_TIMEOUT" default:"30s" desc:"per miner: connect, auth and manifest"`
	ReadyGrace      time.Duration `envconfig:"READY_GRACE" default:"10s" desc:"wait for executor ready past the spin-up"`
	JobExtra        time.Duration `envconfig:"JOB_EXTRA" default:"2m" desc:"wait past a job's time limit, to record slow answers"`
	ReceiptTimeout  time.Duration `envconfig:"RECEIPT_TIMEOUT" default:"5s" desc:"for the JobFinished receipts"`
	WriteTimeout    time.Duration `envconfig:"WRITE_TIMEOUT_MINER" default:"5s" desc:"deadline of every write to a miner"`
	SlowSend        time.Duration `envconfig:"SLOW_SEND" default:"100ms" desc:"a job request send slower than this is a system event"`
	MaxFrameSize    int64         `envconfig:"MAX_FRAME_SIZE" default:"1048576" desc:"largest frame read from a miner"`
	ExcuseMinStake  float64       `envconfig:"EXCUSE_MIN_STAKE" default:"30000" desc:"stake a validator needs for its receipts to excuse a busy miner"`

	ShardMiners  int           `envconfig:"SHARD_MINERS" default:"0" desc:"miners per shard: a batch of more miners is split into shards (run_batch_shard jobs any replica works) released at one instant agreed through Postgres; 0 runs every batch in one process"`
	ShardWorkers int           `envconfig:"SHARD_WORKERS" default:"2" desc:"shards this process works at once (worker slots of the batch_shards queue); 2 or more lets the shards of a batch meet in one process"`
	ShardWait    time.Duration `envconfig:"SHARD_WAIT" default:"5m" desc:"how long a ready shard waits for the others before the send instant is fixed without them"`
	SendMargin   time.Duration `envconfig:"SEND_MARGIN" default:"250ms" desc:"the agreed send instant lies this far past the moment it is fixed: well above the replicas' clock skew and SHARD_POLL"`
	ShardPoll    time.Duration `envconfig:"SHARD_POLL" default:"25ms" desc:"how often a ready shard looks whether the other shards are ready"`
}

// Check lists every problem of the configuration that can be seen without the network (the
// hotkey is loaded, the class table read); the service refuses to start with any
// (service.Main), and `batch-runner check-config` prints them.
func (c Config) Check() []error {
	var errs []error
	if err := service.CheckListenAddr("BATCH_RUNNER_HTTP_ADDR", c.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	if _, err := loadHotkey(c); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := generators(c); err != nil {
		errs = append(errs, err)
	}
	if _, err := rescueAfter(c); err != nil {
		errs = append(errs, err)
	}
	if err := checkSharding(c); err != nil {
		errs = append(errs, err)
	}
	if err := checkLease(c); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkLease refuses a lease a renewal could hardly keep (a renewal every quarter of it, each
// given that quarter to get through) and a sweep that never runs.
func checkLease(cfg Config) error {
	switch {
	case cfg.Lease < time.Second:
		return fmt.Errorf("BATCH_RUNNER_LEASE %s: at least 1s", cfg.Lease)
	case cfg.LeaseSweep <= 0:
		return fmt.Errorf("BATCH_RUNNER_LEASE_SWEEP %s: must be positive", cfg.LeaseSweep)
	}
	return nil
}

// rescueAfter is River's RescueStuckJobsAfter. The rescuer (every 30 s) looks at running jobs
// attempted longer ago than that and takes back those whose kind's own timeout has passed too, so
// at most the shortest timeout of any kind this service works, a job of a process that died is
// back within its own timeout and 30 s: a batch within JOB_TIMEOUT + 30 s, a probe within a
// minute. Longer, a killed batch would stay running past its timeout, so it is refused.
func rescueAfter(cfg Config) (time.Duration, error) {
	shortest := min(cfg.JobTimeout, probe.Timeout)
	switch {
	case cfg.JobTimeout <= 0:
		return 0, fmt.Errorf("BATCH_RUNNER_JOB_TIMEOUT %s: must be positive", cfg.JobTimeout)
	case cfg.RescueAfter == 0:
		return shortest, nil
	case cfg.RescueAfter < 0 || cfg.RescueAfter > shortest:
		return 0, fmt.Errorf("BATCH_RUNNER_RESCUE_AFTER %s: must be positive and at most %s, the shortest job timeout (BATCH_RUNNER_JOB_TIMEOUT %s, a probe's %s), or a job of a process that died stays running past its timeout",
			cfg.RescueAfter, shortest, cfg.JobTimeout, probe.Timeout)
	}
	return cfg.RescueAfter, nil
}

// checkSharding refuses settings under which shards could not meet: no slot to work one, a
// margin that a waiting shard's next poll could overrun, or a job timeout that two waits for the
// other shards (the stagger's start and the send instant) would use up.
func checkSharding(cfg Config) error {
	switch {
	case cfg.ShardMiners < 0:
		return fmt.Errorf("BATCH_RUNNER_SHARD_MINERS %d is negative", cfg.ShardMiners)
	case cfg.ShardMiners > 0 && cfg.JobTimeout <= 2*cfg.ShardWait:
		return fmt.Errorf("BATCH_RUNNER_JOB_TIMEOUT %s must exceed twice BATCH_RUNNER_SHARD_WAIT %s", cfg.JobTimeout, cfg.ShardWait)
	case cfg.ShardWorkers < 1:
		return fmt.Errorf("BATCH_RUNNER_SHARD_WORKERS %d: at least 1", cfg.ShardWorkers)
	case cfg.ShardPoll <= 0 || cfg.SendMargin <= 2*cfg.ShardPoll:
		return fmt.Errorf("BATCH_RUNNER_SEND_MARGIN %s must exceed twice BATCH_RUNNER_SHARD_POLL %s (positive)", cfg.SendMargin, cfg.ShardPoll)
	}
	return nil
}

// batchConfig builds the batch settings and loads the validator hotkey.
func batchConfig(cfg Config) (batch.Config, error) {
	key, err := loadHotkey(cfg)
	if err != nil {
		return batch.Config{}, err
	}
	gens, classes, err := generators(cfg)
	if err != nil {
		return batch.Config{}, err
	}
	return batch.Config{
		Key: key, Classes: classes, SpinUps: cfg.SpinUps, MinSpinUp: cfg.MinSpinUp, ClassCaps: cfg.ClassCaps,
		Generators: gens, ManifestTimeout: cfg.ManifestTimeout, ReadyGrace: cfg.ReadyGrace, JobExtra: cfg.JobExtra,
		ReceiptTimeout: cfg.ReceiptTimeout, WriteTimeout: cfg.WriteTimeout, SlowSend: cfg.SlowSend,
		MaxFrameSize: cfg.MaxFrameSize, ExcuseMinStake: cfg.ExcuseMinStake,
	}.WithDefaults(), nil
}

// generators reads the executor class table (the built-in one, or CLASS_TABLE's file) and the
// job generator of each class.
func generators(cfg Config) (batch.Generators, protocol.ClassTable, error) {
	gens, err := batch.ParseGenerators(cfg.Generators, synthetic.PoWGenerator{Range: cfg.PoWRange, Limit: cfg.PoWTimeLimit})
	if err != nil {
		return nil, protocol.ClassTable{}, fmt.Errorf("BATCH_RUNNER_GENERATORS: %w", err)
	}
	classes := protocol.DefaultClassTable()
	if cfg.ClassTablePath != "" {
		data, err := os.ReadFile(cfg.ClassTablePath)
		if err != nil {
			return nil, protocol.ClassTable{}, fmt.Errorf("BATCH_RUNNER_CLASS_TABLE: %w", err)
		}
		if classes, err = protocol.ParseClassTable(data); err != nil {
			return nil, protocol.ClassTable{}, fmt.Errorf("BATCH_RUNNER_CLASS_TABLE %s: %w", cfg.ClassTablePath, err)
		}
	}
	if gens, _, err = gens.ForClasses(classes); err != nil {
		return nil, protocol.ClassTable{}, fmt.Errorf("BATCH_RUNNER_GENERATORS: %w", err)
	}
	return gens, classes, nil
}

func loadHotkey(cfg Config) (*hotkey.Keypair, error) {
	return hotkey.Settings{
		Prefix: "BATCH_RUNNER_", URI: cfg.HotkeyURI, Path: cfg.WalletPath,
		WalletName: cfg.WalletName, WalletHotkey: cfg.WalletHotkey, WalletDir: cfg.WalletDir,
	}.Load()
}
