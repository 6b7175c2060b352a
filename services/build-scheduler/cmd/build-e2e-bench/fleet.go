package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"drover.dev/shared/apiclient"
	"drover.dev/shared/procattr"
)

// client calls the scheduler's API at base.
type client struct {
	base string
	api  apiclient.Client
}

func (c client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.api.Do(ctx, method, c.base+path, body, out)
	return err
}

// fleet runs the scheduler and worker processes on the scratch database.
type fleet struct {
	dir, bin, dbURL string
	procs           []process
	n               int
}

type process struct {
	binary string
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
}

// start runs binary with its settings (prefix_NAME) on a free port, waits for /readyz and
// returns its base URL.
func (f *fleet) start(ctx context.Context, binary, prefix string, settings map[string]string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	f.n++
	logPath := filepath.Join(f.dir, fmt.Sprintf("%s-%d.log", binary, f.n))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), filepath.Join(f.bin, binary)) //nolint:gosec // our own binaries
	cmd.Env = os.Environ()
	set := map[string]string{
		"DATABASE_URL": f.dbURL, "API_TOKENS": apiToken, "HTTP_ADDR": addr, "LOG_LEVEL": "warn", "LOG_FORMAT": "text",
		"WORKER_ID": fmt.Sprintf("%s-%d", binary, f.n),
	}
	for k, v := range settings {
		set[k] = v
	}
	for k, v := range set {
		cmd.Env = append(cmd.Env, prefix+"_"+k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	procattr.DieWithParent(cmd) // a bench killed mid-run leaves no fleet behind
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return "", fmt.Errorf("start %s: %w", binary, err)
	}
	p := process{binary: binary, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // its log says why
		close(p.done)
	}()
	f.procs = append(f.procs, p)
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if apiclient.Answers(ctx, base+"/readyz") {
			return base, nil
		}
		exited := false
		select {
		case <-p.done:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) {
			tail, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("%s on %s not ready (exited: %t); its log:\n%s", binary, addr, exited, lastLines(tail, 20))
		}
	}
}

// pids are the running processes' ids.
func (f *fleet) pids() []int {
	var ids []int
	for _, p := range f.procs {
		ids = append(ids, p.cmd.Process.Pid)
	}
	return ids
}

// stop ends every process with SIGTERM, as a deployment would, workers first.
func (f *fleet) stop() { f.stopWhere(func(process) bool { return true }) }

// stopWorkers ends the build-worker processes, leaving the scheduler running.
func (f *fleet) stopWorkers() {
	f.stopWhere(func(p process) bool { return p.binary == "build-worker" })
}

func (f *fleet) stopWhere(which func(process) bool) {
	var kept []process
	for i := len(f.procs) - 1; i >= 0; i-- {
		p := f.procs[i]
		if !which(p) {
			kept = append([]process{p}, kept...)
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	f.procs = kept
}

func freeAddr() (string, error) {
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
