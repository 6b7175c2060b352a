package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/procattr"
)

// service is one Drover service as devrun runs it.
type service struct {
	name   string
	prefix string // env prefix
	port   int
	addrs  []string          // the fixed addresses it listens on
	env    map[string]string // settings make run needs beyond the defaults
	url    string
	cmd    *exec.Cmd
	exited chan error

	// What start was given, so that a supervised process restarts as it started.
	binary  string
	args    []string
	extra   map[string]string
	started bool
}

// services lists the five services and their local ports.
func services() []*service {
	list := []*service{
		{name: "miner-sync", prefix: "MINER_SYNC", port: 8081, env: map[string]string{
			"MINER_SYNC_METAGRAPH_URL":        "pylon+" + pylonURL,
			"MINER_SYNC_PYLON_IDENTITY_TOKEN": pylonToken,
			"MINER_SYNC_BITTENSOR_NETUID":     "12",
		}},
		{name: "batch-runner", prefix: "BATCH_RUNNER", port: 8082, env: batchRunnerEnv},
		{name: "scorer", prefix: "SCORER", port: 8083, env: map[string]string{
			// Upstream weighs always_on.test 0; make run's fleet has only always-on classes.
			"SCORER_CLASS_WEIGHTS": "spin_up-4min.gpu-24gb=99,always_on.gpu-24gb=10,always_on.test=1",
			// Weights go to the chain through minersim's Pylon stub.
			"SCORER_PYLON_ADDRESS":        pylonURL,
			"SCORER_PYLON_IDENTITY_TOKEN": pylonToken,
			"SCORER_BITTENSOR_NETUID":     "12",
		}},
		{name: "build-scheduler", prefix: "BUILD_SCHEDULER", port: 8084},
		{name: "populate-worker", prefix: "POPULATE_WORKER", port: 8085, env: map[string]string{
			// Lets the demo seed the example pipelines' manual table over the API.
			"POPULATE_WORKER_EXAMPLES_SEED": "true",
			// Signs the calls to the example function make, which then refuses unsigned ones;
			// a fresh secret each run, as nothing outside the worker needs it.
			"POPULATE_WORKER_FUNCTION_SECRET": rand.Text(),
		}},
	}
	for _, s := range list {
		s.addrs = []string{fmt.Sprintf("127.0.0.1:%d", s.port)}
	}
	return list
}

// fleet is the set of processes devrun started.
type fleet struct {
	services []*service
	extra    []*service // helpers such as build-worker
	minersim bool       // the simulated fleet (and its Pylon stub) runs

	mu       sync.Mutex    // held while a supervised process restarts, and while stop signals
	stopping chan struct{} // closed by stop: supervised processes are no longer restarted
}

// url returns the base URL of the named service.
func (f *fleet) url(name string) string {
	if s := f.serviceNamed(name); s != nil {
		return s.url
	}
	return ""
}

// pid is the process id of s as it now runs (a supervised process's changes when it restarts).
func (f *fleet) pid(s *service) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.cmd.Process.Pid
}

// kill sends SIGKILL to s as it now runs: no shutdown path runs, as when a machine dies.
func (f *fleet) kill(s *service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return s.cmd.Process.Signal(syscall.SIGKILL)
}

// serviceNamed returns the service called name, nil when there is none.
func (f *fleet) serviceNamed(name string) *service {
	for _, s := range f.services {
		if s.name == name {
			return s
		}
	}
	return nil
}

// extraNamed returns the helper process called name (minersim, build-worker), nil when it was
// not started.
func (f *fleet) extraNamed(name string) *service {
	for _, s := range f.extra {
		if s.name == name {
			return s
		}
	}
	return nil
}

// env is the environment every child gets: the parent's, plus the database and the token.
func env(opts options, extra map[string]string) []string {
	out := append(os.Environ(), "DATABASE_URL="+opts.databaseURL, "API_TOKENS="+opts.token, "LOG_FORMAT=json")
	for k, v := range opts.otel {
		out = append(out, k+"="+v)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// fixedListeners lists the processes make run starts on fixed addresses: the five services, and
// minersim and each demo's helper when they are built.
func fixedListeners(opts options) []*service {
	list := services()
	if built(opts, "minersim") {
		list = append(list, minersimProcess())
	}
	for _, d := range demos {
		if d.helper != nil && built(opts, d.binary) {
			list = append(list, &service{name: d.helper.name, addrs: d.helper.addrs})
		}
	}
	return list
}

// checkPorts requires that every fixed address make run needs is free, before anything starts:
// a fleet an interrupted run left behind is named, rather than found later as a child that
// exits during start.
func checkPorts(ctx context.Context, opts options) error {
	var errs []error
	for _, s := range fixedListeners(opts) {
		errs = append(errs, s.checkPorts(ctx))
	}
	return errors.Join(errs...)
}

// checkPorts requires that every address s listens on is free.
func (s *service) checkPorts(ctx context.Context) error {
	var errs []error
	for _, addr := range s.addrs {
		errs = append(errs, checkPort(ctx, s.name, addr))
	}
	return errors.Join(errs...)
}

// built reports whether binary is in opts.bin.
func built(opts options, binary string) bool {
	_, err := os.Stat(filepath.Join(opts.bin, binary))
	return err == nil
}

func startFleet(ctx context.Context, opts options, p *printer) (*fleet, error) {
	f := &fleet{services: services(), stopping: make(chan struct{})}
	if err := f.startMinersim(ctx, opts, p); err != nil {
		return f, err
	}
	for _, s := range f.services {
		s.url = fmt.Sprintf("http://127.0.0.1:%d", s.port)
		dbURL, err := roleURL(opts.databaseURL, s.name)
		if err != nil {
			return f, err
		}
		env := map[string]string{
			s.prefix + "_HTTP_ADDR":    fmt.Sprintf("127.0.0.1:%d", s.port),
			s.prefix + "_DATABASE_URL": dbURL,
		}
		for k, v := range s.env {
			env[k] = v
		}
		if s.name == "populate-worker" {
			// make run's token has the admin scope too: drover tables apply works on its fleet.
			env["POPULATE_WORKER_ADMIN_TOKENS"] = opts.token
		}
		if err := s.start(ctx, opts, s.name, nil, env); err != nil {
			return f, err
		}
	}
	for _, s := range f.services {
		if err := s.waitReady(ctx, 30*time.Second, "/readyz"); err != nil {
			return f, err
		}
		p.ok("%-16s %s   as role %s   (log %s)", s.name, s.url, roleName(s.name), filepath.Join(opts.logs, s.name+".log"))
		f.supervise(ctx, opts, p, s)
	}
	return f, nil
}

// start launches binary (from opts.bin) as s with args and extra environment.
func (s *service) start(ctx context.Context, opts options, binary string, args []string, extra map[string]string) error {
	s.binary, s.args, s.extra = binary, args, extra
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if s.started {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND // a restart keeps what the last run logged
	}
	logFile, err := os.OpenFile(filepath.Join(opts.logs, s.name+".log"), flags, 0o644)
	if err != nil {
		return err
	}
	s.started = true
	// Not CommandContext: a cancelled context would SIGKILL the child, and devrun stops its
	// children in order with SIGTERM so each drains.
	s.cmd = exec.Command(filepath.Join(opts.bin, binary), args...) //nolint:noctx // see above
	s.cmd.Env = env(opts, extra)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C reaches devrun, which stops children in order
	procattr.DieWithParent(s.cmd)                           // and a devrun (or test) that is killed takes them with it
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	cmd, exited := s.cmd, make(chan error, 1)
	s.exited = exited
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	return nil
}

// waitReady polls path until it answers 200.
func (s *service) waitReady(ctx context.Context, patience time.Duration, path string) error {
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err
			// The likeliest reason: another process took one of its ports since checkPorts.
			return errors.Join(fmt.Errorf("%s exited during start (see its log): %w", s.name, err), s.checkPorts(ctx))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if apiclient.Answers(ctx, s.url+path) {
			return nil
		}
	}
	return fmt.Errorf("%s not ready after %s at %s", s.name, patience, s.url)
}

// stop sends SIGTERM to every child and waits for it to drain, killing stragglers.
func (f *fleet) stop(p *printer) {
	f.mu.Lock()
	if f.stopping != nil { // nil in a fleet startFleet did not make: nothing supervised
		select {
		case <-f.stopping:
		default:
			close(f.stopping)
		}
	}
	all := append(append([]*service{}, f.extra...), f.services...)
	for _, s := range all {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	f.mu.Unlock()
	for _, s := range all {
		if s.cmd == nil || s.cmd.Process == nil {
			continue
		}
		select {
		case err := <-s.exited:
			if err != nil {
				p.info("%s: %v", s.name, err)
			}
		case <-time.After(40 * time.Second):
			_ = s.cmd.Process.Kill()
			p.fail("%s did not stop within 40s; killed", s.name)
		}
	}
	if len(all) > 0 {
		p.step("stopped %d processes", len(all))
	}
}

// runCommand runs a binary to completion with its output in logPath.
func runCommand(ctx context.Context, binary string, args, env []string, logPath string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	procattr.DieWithParent(cmd)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s exited with %d", filepath.Base(binary), exit.ExitCode())
		}
		return err
	}
	return nil
}

func redact(databaseURL string) string {
	if u, err := url.Parse(databaseURL); err == nil {
		return u.Redacted()
	}
	return strings.Repeat("*", 8)
}
