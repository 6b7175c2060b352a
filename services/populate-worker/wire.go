package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"drover.dev/services/populate-worker/internal/api"
	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/services/populate-worker/internal/signing"
	"drover.dev/services/populate-worker/internal/wiring"
	"drover.dev/shared/service"
	"drover.dev/shared/tracing"
)

// wire builds the computed tables and the keys that sign their function makes, starts what makes
// keys (wiring.Start: the engine, its workers and periodic jobs, the River client and the loops
// beside it), then adds the routes.
func wire(ctx context.Context, cfg Config, ln net.Listener, deps *service.Deps) error {
	reg, err := registry(cfg, fmt.Sprintf("http://127.0.0.1:%d/examples/functions/energy", ln.Addr().(*net.TCPAddr).Port))
	if err != nil {
		return err
	}
	keys, unsigned, err := functionKeys(reg, cfg.FunctionSecret, os.Getenv)
	if err != nil {
		return err
	}
	if len(unsigned) > 0 {
		deps.Logger.WarnContext(ctx, "function makes are called unsigned: set POPULATE_WORKER_FUNCTION_SECRET, which the functions check", "tables", unsigned)
	}
	deps.Gauges(populate.JobGauges(reg.Names)...)
	engine, err := wiring.Start(ctx, deps, reg, cfg.Settings, wiring.Options{
		WorkerID:   cfg.WorkerID,
		HTTPClient: &http.Client{Timeout: 5 * time.Minute, Transport: signing.Transport(keys, tracing.Transport(nil))},
		Periodic:   true,
	})
	if err != nil {
		return err
	}
	api.Routes(deps.Server, engine, api.Examples{Function: cfg.Examples, Seed: cfg.Examples && cfg.ExamplesSeed, FunctionSecret: cfg.FunctionSecret}, cfg.WriteTimeout, deps.Backlog,
		api.Admin{Tokens: cfg.AdminTokens, APITokens: cfg.APITokens, Disabled: cfg.AuthDisabled})
	return nil
}
