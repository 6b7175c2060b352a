package buildworker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// reaperEnv marks a process as a worker's group reaper: the worker's own executable, started
// again with this variable set, turns into a reaper in this package's init, before main runs.
const reaperEnv = "DROVER_BUILD_GROUP_REAPER"

func init() {
	if os.Getenv(reaperEnv) == "1" {
		reapGroups(os.Stdin)
		os.Exit(0)
	}
}

// reapGroups is the reaper's life. It reads "+pgid" and "-pgid" lines (a build's process group
// started and ended) from the worker until end of file, and then SIGKILLs every group still
// running. The worker holds the only write end of the pipe, so end of file means the worker has
// exited, whatever killed it. Signals meant for the worker (a terminal's ^C, a SIGTERM to its
// group) are ignored, so the reaper lives exactly as long as the worker.
func reapGroups(r io.Reader) {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	live := map[int]bool{}
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		line := lines.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		if line[0] == '+' {
			live[pgid] = true
		} else {
			delete(live, pgid)
		}
	}
	for pgid := range live {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// groupReaper is the worker's side of the reaper: it starts the reaper process on first use and
// tells it of every build's process group. A reaper that died (killed by hand, say) is started
// again on the next message and told of the groups still running. The zero value is ready.
type groupReaper struct {
	mu     sync.Mutex
	pipe   *os.File
	proc   *os.Process
	live   map[int]bool
	logger *slog.Logger
}

func (g *groupReaper) add(pgid int)    { g.send('+', pgid) }
func (g *groupReaper) remove(pgid int) { g.send('-', pgid) }

// setLogger names where a reaper that cannot be started is reported.
func (g *groupReaper) setLogger(l *slog.Logger) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.logger = l
}

// ensure starts the reaper if none is running, so that a build starts with its reaper already
// listening (the first build would otherwise run unguarded while the reaper starts).
func (g *groupReaper) ensure() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pipe == nil {
		g.restart()
	}
}

func (g *groupReaper) send(op byte, pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = map[int]bool{}
	}
	if op == '+' {
		g.live[pgid] = true
	} else {
		delete(g.live, pgid)
	}
	line := fmt.Sprintf("%c%d\n", op, pgid)
	if g.pipe != nil {
		if _, err := io.WriteString(g.pipe, line); err == nil {
			return
		}
		g.stop()
	}
	g.restart()
}

// restart starts a reaper, reporting a failure: builds then run without one.
func (g *groupReaper) restart() {
	if err := g.start(); err != nil && g.logger != nil {
		g.logger.Error("start build group reaper: a build may outlive this worker", "error", err)
	}
}

// start starts a reaper and tells it of every live group.
func (g *groupReaper) start() error {
	self, err := executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("reaper pipe: %w", err)
	}
	// Never cancelled: the reaper must outlive whatever context the worker is in.
	cmd := exec.CommandContext(context.Background(), self)
	cmd.Env = append(os.Environ(), reaperEnv+"=1")
	cmd.Stdin, cmd.Stderr = r, os.Stderr
	// Its own process group: a signal sent to the worker's group does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("start reaper: %w", err)
	}
	g.pipe, g.proc = w, cmd.Process
	for pgid := range g.live {
		if _, err := fmt.Fprintf(w, "+%d\n", pgid); err != nil {
			return fmt.Errorf("tell reaper of group %d: %w", pgid, err)
		}
	}
	return nil
}

// stop closes the pipe to a reaper that stopped reading and collects its exit.
func (g *groupReaper) stop() {
	g.pipe.Close()
	_, _ = g.proc.Wait()
	g.pipe, g.proc = nil, nil
}

// executable is this program. On Linux /proc/self/exe names the running binary even after it was
// replaced on disk by an upgrade.
func executable() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own executable for the reaper: %w", err)
	}
	return self, nil
}
