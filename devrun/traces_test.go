package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jaegerBinary is make run's Jaeger as make test builds it (scripts/jaeger.sh build), or "" when
// it is not built: the fleet then runs untraced, and the trace checks skip, except under CI.
func jaegerBinary(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "jaeger.sh"), "path").Output()
	require.NoError(t, err, "scripts/jaeger.sh path")
	path := strings.TrimSpace(string(out))
	if !exists(path) {
		return ""
	}
	return path
}

// fullTrace is a trace as Jaeger's query API answers it, with the fields the checks read.
type fullTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		ProcessID     string `json:"processID"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// span is one span of a trace, flattened for the checks.
type span struct {
	id, name, service, parent string
	refs                      string   // every reference, for a failure's message
	refIDs                    []string // the spans every reference names
	tags                      map[string]string
}

func (tr fullTrace) spans() []span {
	out := make([]span, 0, len(tr.Spans))
	for _, s := range tr.Spans {
		sp := span{id: s.SpanID, name: s.OperationName, service: tr.Processes[s.ProcessID].ServiceName, tags: map[string]string{}}
		sp.refs = fmt.Sprint(s.References)
		for _, r := range s.References {
			sp.refIDs = append(sp.refIDs, r.SpanID)
		}
		// The parent is the first reference, as Jaeger's UI nests spans. A River job's span has its
		// inserter's span both as parent and as otelriver's link; Jaeger keeps one reference of
		// the two, FOLLOWS_FROM. That it is in this trace at all says the parent was set: a link
		// alone would have left it a trace of its own.
		if len(s.References) > 0 && s.References[0].TraceID == tr.TraceID {
			sp.parent = s.References[0].SpanID
		}
		for _, tag := range s.Tags {
			sp.tags[tag.Key] = fmt.Sprint(tag.Value)
		}
		out = append(out, sp)
	}
	return out
}

// demoTrace waits until the newest trace of the demo service holds spans named every one of want,
// and returns its spans.
func demoTrace(t *testing.T, demoService string, want ...string) (string, []span) {
	t.Helper()
	return demoTraceOf(t, url.Values{"service": {demoService}}, want...)
}

// demoTraceOf waits until the newest trace Jaeger finds for search holds spans named every one of
// want, and returns its spans.
func demoTraceOf(t *testing.T, search url.Values, want ...string) (string, []span) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // hang guard: spans are exported every 0.5 s
	defer cancel()
	var names []string
	for {
		var found struct {
			Data []fullTrace `json:"data"`
		}
		q := url.Values{"limit": {"1"}, "lookback": {"1h"}}
		for k, v := range search {
			q[k] = v
		}
		if err := getJSON(ctx, jaegerUI+"/api/traces?"+q.Encode(), &found); err == nil && len(found.Data) == 1 {
			var full struct {
				Data []fullTrace `json:"data"`
			}
			require.NoError(t, getJSON(ctx, jaegerUI+"/api/traces/"+found.Data[0].TraceID, &full))
			require.Len(t, full.Data, 1)
			spans := full.Data[0].spans()
			names = names[:0]
			for _, s := range spans {
				names = append(names, s.name)
			}
			if missing := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return slices.Contains(names, n) }); len(missing) == 0 {
				return full.Data[0].TraceID, spans
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the trace of %v never held all of %v; it holds %v", search, want, names)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// requireOneTree checks that spans are one tree: one root, and every other span's parent is a
// span of the trace, so no hop lost the trace's context.
func requireOneTree(t *testing.T, spans []span, root string) map[string]span {
	t.Helper()
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	for _, s := range spans {
		if s.parent == "" {
			require.Equal(t, root, s.name, "the only span without a parent is the demo's own (references: %s)", s.refs)
			continue
		}
		_, ok := byID[s.parent]
		require.True(t, ok, "span %q of %s has its parent %s in the trace", s.name, s.service, s.parent)
	}
	return byID
}

// parentChain is the names of s's ancestors, nearest first.
func parentChain(byID map[string]span, s span) []string {
	var chain []string
	for s.parent != "" {
		s = byID[s.parent]
		chain = append(chain, s.service+":"+s.name)
	}
	return chain
}

// testDemoTraces reads the demo batch's and build group's traces through Jaeger's query API, as a
// person looking at them would: one trace per demo, spanning the services it crossed, with the
// River jobs between them and their parents intact.
func testDemoTraces(t *testing.T, opts options) {
	t.Helper()
	if opts.jaeger == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Jaeger is not built: make test builds it (scripts/jaeger.sh build)")
		}
		t.Skip("Jaeger is not built (scripts/jaeger.sh build): the fleet ran untraced")
	}
	t.Run("Batch", func(t *testing.T) {
		id, spans := demoTrace(t, "batch-demo", "batch demo", "river.work/sync_metagraph", "river.work/run_batch",
			"batch.manifests", "batch.generate", "batch.availability", "batch.hot", "batch.receipts",
			"river.work/score_batch", "river.work/set_weights")
		byID := requireOneTree(t, spans, "batch demo")
		services := map[string]bool{}
		for _, s := range spans {
			services[s.service] = true
			switch s.name {
			case "batch.hot":
				require.Equal(t, []string{"batch-runner:river.work/run_batch", "batch-runner:river.insert_many",
					"batch-runner:POST /v1/batches", "batch-demo:HTTP POST", "batch-demo:batch demo"}, parentChain(byID, s))
				require.NotEmpty(t, s.tags["batch.hot.sent"], "the hot phase's counts are on its span")
			case "river.work/score_batch":
				require.Equal(t, "scorer", s.service)
				require.Contains(t, parentChain(byID, s), "batch-runner:river.work/run_batch")
			case "river.work/set_weights":
				require.Equal(t, "scorer", s.service)
				require.Contains(t, parentChain(byID, s), "scorer:river.work/score_batch")
			case "river.work/sync_metagraph":
				require.Equal(t, "miner-sync", s.service)
			}
		}
		for _, svc := range []string{"batch-demo", "miner-sync", "batch-runner", "scorer"} {
			require.True(t, services[svc], "the batch's trace %s has spans of %s", id, svc)
		}
		requireLogged(t, opts, "batch-runner", id)
	})
	t.Run("Build", func(t *testing.T) {
		id, spans := demoTrace(t, "build-demo", "build demo", "build fetch", "build link", "build docs-build")
		byID := requireOneTree(t, spans, "build demo")
		for _, s := range spans {
			if !strings.HasPrefix(s.name, "build ") || s.name == "build demo" {
				continue
			}
			require.Equal(t, "build-worker", s.service)
			for _, tag := range []string{"build.attempt", "build.worker", "build.exit_code", "build.group_id"} {
				require.NotEmpty(t, s.tags[tag], "%s of %s", tag, s.name)
			}
			require.Contains(t, parentChain(byID, s), "build-scheduler:POST /v1/groups", "%s descends from the group's submit", s.name)
			if s.name == "build docs-build" {
				require.Equal(t, "failed", s.tags["build.outcome"])
				require.Equal(t, "1", s.tags["build.exit_code"])
			}
		}
		// link waits on compile-lib and compile-cli: one released it (its ancestor), and its span
		// links to the other's.
		named := map[string]span{}
		for _, s := range spans {
			named[s.name] = s
		}
		link := named["build link"]
		for _, dep := range []string{"build compile-lib", "build compile-cli"} {
			d, ok := named[dep]
			require.True(t, ok, dep)
			isParent := slices.Contains(parentChain(byID, link), "build-worker:"+dep)
			require.True(t, isParent || slices.Contains(link.refIDs, d.id),
				"build link's span descends from or links to %s (references %s)", dep, link.refs)
		}
		requireLogged(t, opts, "build-scheduler", id)
	})
	t.Run("Populate", func(t *testing.T) {
		// The populate demo does not trace itself: a run's trace starts at its POST.
		id, spans := demoTraceOf(t, url.Values{"service": {"populate-worker"}, "operation": {"populate example_signal_stats"}},
			"populate example_signal_stats", "river.work/populate_make")
		byID := requireOneTree(t, spans, "POST /v1/tables/:name/populate")
		makes := 0
		for _, s := range spans {
			if s.name == "river.work/populate_make" {
				makes++
				require.Contains(t, parentChain(byID, s), "populate-worker:populate example_signal_stats",
					"a make of the trace is the run's: the feeder's, for the run's schedule, are not traced")
			}
		}
		require.LessOrEqual(t, makes, 100, "at most the run's first hundred makes are traced")
		requireLogged(t, opts, "populate-worker", id)
	})
}

// requireLogged checks that a line of service's log names the trace, so a log line leads to it.
func requireLogged(t *testing.T, opts options, service, traceID string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(opts.logs, service+".log"))
	require.NoError(t, err)
	require.Contains(t, string(log), `"trace_id":"`+traceID+`"`, "a line of %s's log carries the trace's id", service)
}
