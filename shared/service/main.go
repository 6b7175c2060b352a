package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"

	"drover.dev/shared/config"
)

// The modes every command built on Main has besides serving, named by its first argument.
const (
	// ModeCheckConfig reads the configuration exactly as at start, checks it without connecting
	// anywhere, prints every problem and exits 1 when there is one.
	ModeCheckConfig = "check-config"
	// ModeHealthcheck probes a running instance: `healthcheck [URL]` exits 0 when URL answers 2xx
	// within 3 s; without URL, the /readyz of the listen address the configuration names (its
	// HTTPAddr, on 127.0.0.1 when the host is empty or any). Images without a shell or curl
	// (distroless) run it as their HEALTHCHECK.
	ModeHealthcheck = "healthcheck"
)

// Main is the whole of a command's main function: it reads the environment variables named
// envPrefix_* (e.g. BUILD_WORKER_*) into settings (a pointer to the command's Config), checks
// them (Check), answers --help, runs run until SIGINT or SIGTERM, and exits 1 with the error
// printed when the configuration or run fails, each problem on its own line after the command's
// name (the prefix in lower case with dashes: build-worker). `check-config` stops after the check,
// `healthcheck URL` probes a running instance instead.
func Main(envPrefix string, settings any, run func(ctx context.Context, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := strings.ToLower(strings.ReplaceAll(envPrefix, "_", "-"))
	err := mainErr(ctx, envPrefix, settings, os.Args[1:], os.Stdout, run)
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err != nil {
		for _, e := range Problems(err) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, e)
		}
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, envPrefix string, settings any, args []string, stdout io.Writer,
	run func(ctx context.Context, stdout io.Writer) error) error {
	mode := ""
	if len(args) > 0 && (args[0] == ModeCheckConfig || args[0] == ModeHealthcheck) {
		mode, args = args[0], args[1:]
	}
	if mode == ModeHealthcheck {
		if len(args) == 0 {
			// The environment of the running instance gives its address; problems elsewhere in the
			// configuration are not this probe's business (the instance would not be running).
			_ = config.Load(envPrefix, settings, nil, io.Discard)
			args = []string{readyzURL(settings)}
		}
		return Healthcheck(ctx, args)
	}
	// Load reads every variable it can even when some are missing or do not parse, so the check
	// of the rest still runs: every problem is named at once.
	err := config.Load(envPrefix, settings, args, stdout)
	if errors.Is(err, config.ErrHelp) {
		return err
	}
	if err := errors.Join(err, Check(envPrefix, settings)); err != nil {
		return err
	}
	if mode == ModeCheckConfig {
		fmt.Fprintf(stdout, "%s: configuration OK%s\n", strings.ToLower(strings.ReplaceAll(envPrefix, "_", "-")), connections(envPrefix, settings))
		return nil
	}
	return run(ctx, stdout)
}

// connections says what the process opens at most in Postgres: its pool and River's listener,
// the figure a deployment's connection budget adds up (README, Connection budget).
func connections(envPrefix string, settings any) string {
	c, ok := settings.(interface{ CommonConfig() *config.Common })
	if !ok {
		return ""
	}
	common := *c.CommonConfig()
	pool := common.PoolSize(envPrefix)
	if pool == 0 {
		return "; Postgres connections: pgx's default pool + River's listener"
	}
	return fmt.Sprintf("; Postgres connections: at most %d (pool %d + River's listener %d)",
		common.ProcessConns(envPrefix), pool, config.ListenerConns)
}

// Problems splits an error joined with errors.Join (a configuration's problems) into its parts.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []error{err}
}

// readyzURL is the /readyz URL of the listen address in settings' HTTPAddr field.
func readyzURL(settings any) string {
	addr := ":8080"
	if v := reflect.Indirect(reflect.ValueOf(settings)); v.Kind() == reflect.Struct {
		if f := v.FieldByName("HTTPAddr"); f.IsValid() && f.Kind() == reflect.String {
			addr = f.String()
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/readyz" // Healthcheck reports what is wrong with it
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}

// Healthcheck GETs the URL in args (one) and fails unless it answers 2xx within 3 s.
func Healthcheck(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: %s [URL] (e.g. http://127.0.0.1:8083/readyz)", ModeHealthcheck)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("healthcheck: %s answered %s", args[0], resp.Status)
	}
	return nil
}
