package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"drover.dev/shared/procattr"
)

// jaegerConfig is the all-in-one configuration devrun starts Jaeger with.
//
//go:embed jaeger.yaml
var jaegerConfig []byte

// The addresses of make run's Jaeger (jaeger.yaml): OTLP/HTTP in, the UI and query API out.
const (
	jaegerOTLP = "http://127.0.0.1:4318"
	jaegerUI   = "http://127.0.0.1:16686"
	// jaegerQuery is where a person starts reading traces: Jaeger's query API (its web UI is not in
	// its Go module; README.md, Tracing).
	jaegerQuery = jaegerUI + "/api/traces?service=batch-demo&limit=1"
)

// jaegerAddrs are the fixed addresses Jaeger listens on, checked free before it starts.
var jaegerAddrs = []string{"127.0.0.1:4318", "127.0.0.1:16686", "127.0.0.1:16685"}

// tracing is make run's side of the services' traces: where they go, and the Jaeger it runs.
type tracing struct {
	// env is what every process devrun starts gets: the OTLP endpoint, or nothing (untraced).
	env map[string]string

	bin    string        // Jaeger's binary (scripts/jaeger.sh path); empty when devrun runs none
	failed string        // the marker a failed build leaves
	ready  chan struct{} // closed once Jaeger answers
	once   sync.Once

	mu      sync.Mutex // guards proc and stopped: Jaeger may start after the build, while devrun stops
	proc    *service
	stopped bool
}

// startTracing decides where the services' traces go, before the fleet starts:
//   - to the collector the environment names (OTEL_EXPORTER_OTLP_ENDPOINT...), as it is;
//   - to make run's Jaeger, started now when it is built, or once the background build
//     (scripts/jaeger.sh background) finishes, which the fleet does not wait for;
//   - nowhere, when Jaeger is not wanted (-jaeger ""), its build failed, or it does not start.
func startTracing(ctx context.Context, opts options, p *printer) *tracing {
	t := &tracing{ready: make(chan struct{})}
	switch {
	case strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")) == "none":
		p.info("OTEL_TRACES_EXPORTER=none: running untraced")
		return t
	case userCollector() != "":
		p.info("traces go to %s (from the environment)", userCollector())
		return t
	case opts.jaeger == "":
		return t
	}
	t.bin, t.failed = opts.jaeger, opts.jaeger+".failed"
	if _, err := os.Stat(t.failed); err == nil && !exists(t.bin) {
		p.info("Jaeger could not be built (log %s; retry: scripts/jaeger.sh build): running untraced",
			filepath.Join(opts.logs, "jaeger-build.log"))
		return t
	}
	// Spans reach Jaeger once it listens; the exporters retry for a minute meanwhile.
	t.env = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": jaegerOTLP, "OTEL_BSP_SCHEDULE_DELAY": "500"}
	if exists(t.bin) {
		if err := t.start(ctx, opts); err != nil {
			p.info("Jaeger did not start (%v; log %s): running untraced", err, filepath.Join(opts.logs, "jaeger.log"))
			t.env = nil
			return t
		}
		p.ok("%-16s %s   traces of every service, query API only (log %s)", "jaeger", jaegerQuery, filepath.Join(opts.logs, "jaeger.log"))
		return t
	}
	p.info("Jaeger is being built in the background (log %s); the fleet does not wait for it, its link follows when it answers",
		filepath.Join(opts.logs, "jaeger-build.log"))
	go t.startWhenBuilt(ctx, opts, p)
	return t
}

// userCollector is the OTLP endpoint the environment already names, if any.
func userCollector() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	if v := os.Getenv("OTEL_TRACES_EXPORTER"); v != "" {
		return "OTEL_TRACES_EXPORTER=" + v
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// start runs Jaeger with devrun's configuration and waits until its query API answers.
func (t *tracing) start(ctx context.Context, opts options) error {
	config := filepath.Join(opts.logs, "jaeger.yaml")
	if err := os.WriteFile(config, jaegerConfig, 0o644); err != nil {
		return err
	}
	proc := &service{name: "jaeger", addrs: jaegerAddrs, url: jaegerUI}
	if err := proc.checkPorts(ctx); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(opts.logs, "jaeger.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(t.bin, "--config", config) //nolint:noctx // stopped with SIGTERM by stop
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	procattr.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	proc.cmd, proc.exited = cmd, make(chan error, 1)
	go func() { proc.exited <- cmd.Wait(); logFile.Close() }()
	t.mu.Lock()
	stopped := t.stopped
	t.proc = proc
	t.mu.Unlock()
	if stopped {
		stopProc(proc)
		return errors.New("devrun is stopping")
	}
	if err := proc.waitReady(ctx, 30*time.Second, "/api/services"); err != nil {
		t.stop()
		return err
	}
	t.once.Do(func() { close(t.ready) })
	return nil
}

// startWhenBuilt waits for the background build, then starts Jaeger and says where it is.
func (t *tracing) startWhenBuilt(ctx context.Context, opts options, p *printer) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for !exists(t.bin) {
		if exists(t.failed) {
			p.info("Jaeger could not be built (log %s): the services' traces are dropped", filepath.Join(opts.logs, "jaeger-build.log"))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if err := t.start(ctx, opts); err != nil {
		p.info("Jaeger did not start (%v; log %s): the services' traces are dropped", err, filepath.Join(opts.logs, "jaeger.log"))
		return
	}
	p.ok("%-16s %s   Jaeger is built and answers, query API only (log %s)", "jaeger", jaegerQuery, filepath.Join(opts.logs, "jaeger.log"))
}

// answering reports whether Jaeger answers now.
func (t *tracing) answering() bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}

// stop stops Jaeger if devrun started it, and keeps one that is still to start from starting.
func (t *tracing) stop() {
	t.mu.Lock()
	t.stopped = true
	proc := t.proc
	t.proc = nil
	t.mu.Unlock()
	if proc != nil {
		stopProc(proc)
	}
}

// stopProc stops Jaeger's process: SIGTERM, then SIGKILL after 5 s.
func stopProc(proc *service) {
	_ = proc.cmd.Process.Signal(syscall.SIGTERM)
	var exit error // how Jaeger ended is nothing to act on: it was told to stop
	select {
	case exit = <-proc.exited:
	case <-time.After(5 * time.Second):
		_ = proc.cmd.Process.Kill()
		exit = <-proc.exited
	}
	_ = exit
}

// demoTraces are the demos whose traces make run links: each demo program traces itself under
// its own service name, so its latest trace is the demo's.
var demoTraces = []struct{ demo, service string }{
	{"batch", "batch-demo"},
	{"build", "build-demo"},
}

// showTraces prints a link to each demo's trace, with the services it spans and its waterfall. A
// trace Jaeger does not hold (yet) is said, not a failure of the demos: the demos did their work.
func (t *tracing) showTraces(ctx context.Context, p *printer) {
	p.step("traces in Jaeger: %s", jaegerUI)
	for _, d := range demoTraces {
		tr, err := latestTrace(ctx, d.service)
		if err != nil {
			p.info("%-6s demo's trace: not found (%v)", d.demo, err)
			continue
		}
		p.ok("%-6s demo   %s/api/traces/%s   %d spans: %s", d.demo, jaegerUI, tr.ID, tr.Spans, strings.Join(tr.Services, ", "))
		for _, line := range tr.Waterfall {
			p.info("  %s", line)
		}
	}
	p.info("(the links answer JSON: make run's Jaeger, built from its Go module, has no web UI; README.md, Tracing)")
}

// jaegerTrace is what Jaeger's query API answers of a trace, as far as devrun reads it.
type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// jaegerSpan is a span as Jaeger's query API answers it; times are in microseconds.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	StartTime     int64  `json:"startTime"`
	Duration      int64  `json:"duration"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

// tag is the value of the span's tag key, as text; "" when it has none.
func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// traceSummary is one trace: its id, its span count, the services it spans, and its waterfall.
type traceSummary struct {
	ID        string
	Spans     int
	Services  []string
	Waterfall []string
}

// latestTrace finds the newest trace service started, waiting up to 20 s for its spans to arrive
// (every process exports its spans in batches).
func latestTrace(ctx context.Context, service string) (traceSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	q := url.Values{"service": {service}, "limit": {"1"}, "lookback": {"1h"}}
	for {
		var page struct {
			Data []jaegerTrace `json:"data"`
		}
		err := getJSON(ctx, jaegerUI+"/api/traces?"+q.Encode(), &page)
		if err == nil && len(page.Data) > 0 {
			// The search answers the spans it matched; the trace itself has them all.
			var full struct {
				Data []jaegerTrace `json:"data"`
			}
			if err := getJSON(ctx, jaegerUI+"/api/traces/"+page.Data[0].TraceID, &full); err == nil && len(full.Data) == 1 {
				return summarize(full.Data[0]), nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("no trace of %s in Jaeger", service)
			}
			return traceSummary{}, err
		case <-time.After(time.Second):
		}
	}
}

func summarize(tr jaegerTrace) traceSummary {
	s := traceSummary{ID: tr.TraceID, Spans: len(tr.Spans)}
	for _, span := range tr.Spans {
		if name := tr.Processes[span.ProcessID].ServiceName; !slices.Contains(s.Services, name) {
			s.Services = append(s.Services, name)
		}
	}
	slices.Sort(s.Services)
	s.Waterfall = waterfall(tr)
	return s
}

// waterfallWidth is the width of the longest bar of a waterfall, in characters.
const waterfallWidth = 30

// waterfall draws the trace's work as a person reads a trace view: each span of work indented
// under its parent, in the order they started, with when it started and how long it took as a
// bar. Queries, outgoing calls and River's inserts are left out (their spans are in the trace):
// they would bury the stages, jobs and builds in detail.
func waterfall(tr jaegerTrace) []string {
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	shown := func(s jaegerSpan) bool {
		return s.tag("db.system") == "" && s.tag("db.system.name") == "" && s.tag("span.kind") != "client" &&
			s.OperationName != "river.insert_many"
	}
	// parent is the nearest shown ancestor, as Jaeger nests spans (the first reference).
	parent := func(s jaegerSpan) string {
		for len(s.References) > 0 {
			p, ok := byID[s.References[0].SpanID]
			if !ok {
				return ""
			}
			if shown(p) {
				return p.SpanID
			}
			s = p
		}
		return ""
	}
	children := map[string][]jaegerSpan{}
	var start, end int64
	for _, s := range tr.Spans {
		if start == 0 || s.StartTime < start {
			start = s.StartTime
		}
		end = max(end, s.StartTime+s.Duration)
		if shown(s) {
			children[parent(s)] = append(children[parent(s)], s)
		}
	}
	total := max(end-start, 1)
	var lines []string
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		kids := children[id]
		slices.SortFunc(kids, func(a, b jaegerSpan) int { return int(a.StartTime - b.StartTime) })
		for _, s := range kids {
			from := int((s.StartTime - start) * waterfallWidth / total)
			width := max(int(s.Duration*waterfallWidth/total), 1)
			bar := strings.Repeat(" ", from) + strings.Repeat("█", min(width, waterfallWidth-from+1))
			name := strings.Repeat("  ", depth) + s.OperationName
			lines = append(lines, fmt.Sprintf("%-34.34s %-16s %-*s %8.1f ms", name, tr.Processes[s.ProcessID].ServiceName,
				waterfallWidth+1, bar, float64(s.Duration)/1000))
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	return lines
}

// traceLate waits for a Jaeger that was still being built when the demos ran, then runs the batch
// and build demos again so that their traces are there to look at, and links them.
func (t *tracing) traceLate(ctx context.Context, opts options, f *fleet, p *printer) {
	select {
	case <-ctx.Done():
		return
	case <-t.ready:
	}
	p.step("Jaeger answers now, after the demos: running the batch and build demos again to trace them")
	for _, d := range demos {
		if d.name == "batch" || d.name == "build" {
			d.helper = nil // the build demo's worker runs already
			_ = runDemo(ctx, opts, f, p, d)
		}
	}
	t.showTraces(ctx, p)
}
