// Command scorer turns finished batches into per-miner scores and the weights a validator sets on chain.
//
// Run it with --help for every environment variable it reads.
package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/api"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/work"
	"drover.dev/shared/config"
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
}

func main() {
	var cfg Config
	service.Main(queue.Scorer.EnvPrefix(), &cfg, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, cfg, nil, stdout)
	})
}

// run runs the service until ctx ends. It listens on ln, or on cfg.HTTPAddr when ln is nil.
func run(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	params, err := cfg.params()
	if err != nil {
		return err
	}
	spec := service.Spec{
		Service:  queue.Scorer,
		Config:   cfg.Common,
		Settings: &cfg,
		HTTPAddr: cfg.HTTPAddr,
		Listener: ln,
		Queues:   map[string]int{queue.QueueScoring: max(cfg.Workers, 1)},
		OpenAPI:  api.OpenAPI,
	}
	return service.Run(ctx, spec, stdout, func(deps *service.Deps) error {
		deps.Logger.Info("scoring parameters", "class_weights", scoring.FormatClassWeights(params.ClassWeights))
		river.AddWorker(deps.Workers, &work.ScoreBatchWorker{DB: deps.Pool, Params: params, Logger: deps.Logger})
		if _, err := deps.NewClient(); err != nil {
			return err
		}
		api.Routes(deps.Server.API, deps.Pool)
		return nil
	})
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
