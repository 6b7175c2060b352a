package main

import (
	"net/http"

	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/api"
	"drover.dev/services/scorer/internal/direct"
	"drover.dev/services/scorer/internal/pylon"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/work"
	"drover.dev/shared/service"
	"drover.dev/shared/tracing"
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
			HTTP: &http.Client{Transport: tracing.Transport(nil)},
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
