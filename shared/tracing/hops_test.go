package tracing_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
	"drover.dev/shared/testdb"
	"drover.dev/shared/tracing"
	"drover.dev/shared/web"
)

// recorder holds every span this package's tests end. Every test here runs traced: TestMain
// installs the SDK's provider, as tracing.Start does, before any server, pool or client is built.
var recorder = tracetest.NewSpanRecorder()

func TestMain(m *testing.M) {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	os.Exit(m.Run())
}

// ended is the ended span of trace called name, if any.
func ended(traceID trace.TraceID, name string) (sdktrace.ReadOnlySpan, bool) {
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID() == traceID && s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// names are the names of trace's ended spans, for a failure's message.
func names(traceID trace.TraceID) []string {
	var out []string
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID() == traceID {
			out = append(out, s.Name())
		}
	}
	return out
}

// waitEnded waits for span name of trace to end: servers end theirs after answering.
func waitEnded(t *testing.T, traceID trace.TraceID, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var s sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		var ok bool
		s, ok = ended(traceID, name)
		return ok
	}, 10*time.Second, 10*time.Millisecond, "span %q of the trace among %v", name, names(traceID))
	return s
}

// TestHTTPHop: a request sent with Transport carries the caller's trace to a server built by web,
// whose span is named after the route and is a child of the client's span.
func TestHTTPHop(t *testing.T) {
	t.Parallel()
	s, err := web.New(web.Config{AuthDisabled: true, BodyLimit: 1024}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	var handlerTrace trace.TraceID
	s.API.GET("/things/:id", func(c *echo.Context) error {
		handlerTrace = trace.SpanContextFromContext(c.Request().Context()).TraceID()
		return c.NoContent(http.StatusNoContent)
	})
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })

	ctx, root := otel.Tracer("test").Start(t.Context(), "caller")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/v1/things/7", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tracing.Transport(nil)}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	root.End()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	id := root.SpanContext().TraceID()
	require.Equal(t, id, handlerTrace, "the handler works in the caller's trace")
	client := waitEnded(t, id, "HTTP GET")
	require.Equal(t, root.SpanContext().SpanID(), client.Parent().SpanID())
	server := waitEnded(t, id, "GET /v1/things/:id")
	require.Equal(t, client.SpanContext().SpanID(), server.Parent().SpanID())
	require.True(t, server.Parent().IsRemote())
}

// TestHTTPProbesAreNotTraced: health, readiness and metrics requests make no spans.
func TestHTTPProbesAreNotTraced(t *testing.T) {
	t.Parallel()
	s, err := web.New(web.Config{AuthDisabled: true, BodyLimit: 1024}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ctx, root := otel.Tracer("test").Start(t.Context(), "prober")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/healthz", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req) // no client span either: only the server could make one
	require.NoError(t, err)
	resp.Body.Close()
	root.End()
	_, ok := ended(root.SpanContext().TraceID(), "GET /healthz")
	require.False(t, ok)
	_, ok = ended(root.SpanContext().TraceID(), "GET")
	require.False(t, ok)
}

// TestPgxHop: a query of a traced piece of work is a child span of it; a query outside any trace
// makes no span.
func TestPgxHop(t *testing.T) {
	t.Parallel()
	pool, err := postgres.Open(t.Context(), testdb.New(t), postgres.Options{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	before := len(recorder.Ended())
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "-- name: Untraced :one\nselect 1").Scan(&n))

	ctx, root := otel.Tracer("test").Start(t.Context(), "work")
	require.NoError(t, pool.QueryRow(ctx, "-- name: CountThings :one\nselect 2").Scan(&n))
	root.End()
	var queries []string
	children := 0 // the query's span; pgx's prepare of it is that span's child
	for _, s := range recorder.Ended()[before:] {
		queries = append(queries, s.Name())
		if s.Name() == "CountThings" {
			require.Equal(t, root.SpanContext().TraceID(), s.SpanContext().TraceID())
			if s.Parent().SpanID() == root.SpanContext().SpanID() {
				children++
			}
		}
	}
	require.Equal(t, 1, children, "the query is the work's child")
	require.Contains(t, queries, "CountThings", "the query's span is named after sqlc's name for it")
	require.NotContains(t, queries, "Untraced", "a query outside a trace makes no span")
}

type hopArgs struct{}

func (hopArgs) Kind() string { return "trace_hop" }

func (hopArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: "trace_hop"} }

type hopWorker struct {
	river.WorkerDefaults[hopArgs]
	worked chan trace.SpanContext
}

func (w *hopWorker) Work(ctx context.Context, _ *river.Job[hopArgs]) error {
	w.worked <- trace.SpanContextFromContext(ctx)
	return nil
}

// TestRiverHop: a job inserted in a traced piece of work carries its trace through River's insert
// and fetch to the worker, whose span is a child of the insert's; the worker's context is in it.
func TestRiverHop(t *testing.T) {
	t.Parallel()
	pool, err := postgres.Open(t.Context(), testdb.New(t), postgres.Options{Schema: queue.MinerSync.Schema(), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w := &hopWorker{worked: make(chan trace.SpanContext, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := queue.NewClient(pool, queue.MinerSync, queue.ClientConfig{Queues: map[string]int{"trace_hop": 1}, Workers: workers})
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	inserter, err := queue.NewInserter(pool, queue.MinerSync)
	require.NoError(t, err)

	ctx, root := otel.Tracer("test").Start(t.Context(), "enqueue")
	_, err = inserter.Insert(ctx, hopArgs{}, nil)
	require.NoError(t, err)
	root.End()
	var inWorker trace.SpanContext
	select {
	case inWorker = <-w.worked:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the job was not worked")
	}

	id := root.SpanContext().TraceID()
	require.Equal(t, id, inWorker.TraceID(), "the worker works in the inserter's trace")
	insert := waitEnded(t, id, "river.insert_many")
	require.Equal(t, root.SpanContext().SpanID(), insert.Parent().SpanID())
	work := waitEnded(t, id, "river.work/trace_hop")
	require.Equal(t, insert.SpanContext().SpanID(), work.Parent().SpanID(), "the work span's parent is the insert's")
	require.Equal(t, work.SpanContext().SpanID(), inWorker.SpanID(), "the worker's context holds the work span")
}
