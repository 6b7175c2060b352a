// Package tracing turns on OpenTelemetry tracing for a Drover process from the standard OTEL_*
// environment variables, and gives the other shared packages the pieces that carry a trace
// across a hop: the HTTP server's and clients' handlers, and pgx's query tracer.
//
// Tracing is off unless an exporter is configured (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER other than "none"). Off, nothing is
// installed: the global tracer provider stays OpenTelemetry's no-op one, and every Wrap function
// of this package returns what it was given.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Configured reports whether the environment asks for traces to be exported. It reads only
// whether an exporter is named; everything else (endpoint, protocol, headers, sampler, batch
// sizes, resource attributes) is the SDK's to read.
func Configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "none":
		return false
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// Enabled reports whether Start installed a tracer provider in this process.
func Enabled() bool {
	_, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	return ok
}

// Start installs the process's tracer provider and propagators when Configured, and returns the
// function that flushes and stops them at shutdown. service is the service.name a process
// reports unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another.
//
// The exporter comes from autoexport (OTEL_TRACES_EXPORTER, default otlp;
// OTEL_EXPORTER_OTLP_PROTOCOL, default http/protobuf), the sampler from OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on), the propagators from OTEL_PROPAGATORS
// (default W3C trace context and baggage). OpenTelemetry's own errors (a collector that does not
// answer) go to logger, at most one line a minute.
func Start(ctx context.Context, service string, logger *slog.Logger) (stop func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if !Configured() {
		return noop, nil
	}
	exporter, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return noop, fmt.Errorf("trace exporter (OTEL_* variables): %w", err)
	}
	// Later detectors win: the environment's service.name overrides the process's own.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return noop, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetErrorHandler(&errorLog{logger: logger})
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(autoprop.NewTextMapPropagator())
	return provider.Shutdown, nil
}

// QueryTracer is the pgx tracer (pgx.ConnConfig.Tracer) that makes each query of a traced piece
// of work a child span of it, or nil when tracing is off. It never starts a trace of its own:
// River's fetches and the service's loops outside a trace stay untraced.
func QueryTracer() pgx.QueryTracer {
	if !Enabled() {
		return nil
	}
	return otelpgx.NewTracer(otelpgx.WithSpanNameCtxFunc(queryName), otelpgx.WithDisableAcquireTracer())
}

// queryName names a query's span after sqlc's name for it ("-- name: BatchInsert :one"), which
// says which query of the code ran, and after its first word (SELECT) otherwise, as otelpgx does.
func queryName(ctx context.Context, stmt string) string {
	if rest, ok := strings.CutPrefix(stmt, "-- name: "); ok {
		if name, _, ok := strings.Cut(rest, " "); ok {
			return name
		}
	}
	return otelpgx.SQLOperationName(ctx, stmt)
}

// Transport is base (http.DefaultTransport when nil) with each outgoing request as a client span
// that carries the trace to the server in its headers when the process traces. It decides at its
// first request, so a client built before Start (a service's configuration) is traced too; until
// then, and when tracing is off, requests go through base as they are.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &lazyTransport{base: base}
}

// lazyTransport is Transport's: otelhttp's transport over base once tracing is on, else base.
type lazyTransport struct {
	base http.RoundTripper
	once sync.Once
	rt   http.RoundTripper
}

func (t *lazyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.once.Do(func() {
		t.rt = t.base
		if Enabled() {
			t.rt = otelhttp.NewTransport(t.base)
		}
	})
	return t.rt.RoundTrip(r)
}

// Handler is h with every request under /v1/ as a server span, continuing the caller's trace
// when its headers carry one, or h itself when tracing is off. Probes, metrics and River UI's
// polling are left out: they would bury the work in noise.
func Handler(h http.Handler) http.Handler {
	if !Enabled() {
		return h
	}
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithFilter(func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }),
		// The router sets the request's Pattern (echo does), and otelhttp names the span again with
		// it once the handler returns: "GET /v1/batches/:id", as OpenTelemetry's conventions ask.
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Pattern != "" {
				return r.Method + " " + r.Pattern
			}
			return r.Method
		}),
	)
}

// Do runs f in a span called name, made by the tracer called tracer, and records f's error on it.
// Outside a trace it starts one, when the process traces.
func Do(ctx context.Context, tracer, name string, f func(context.Context) error) error {
	ctx, span := otel.Tracer(tracer).Start(ctx, name)
	defer span.End()
	err := f(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// Parent is ctx's span as a W3C traceparent, for work that a later process continues from a
// row rather than from a River job's metadata (a populate run's makes, a build's dependents'
// links); nil outside a sampled trace.
func Parent(ctx context.Context) *string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	tp := carrier.Get("traceparent")
	return &tp
}

// SpanContext is the span a W3C traceparent (Parent) names, marked remote; invalid when it
// names none.
func SpanContext(traceparent string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// errorLog logs OpenTelemetry's errors, at most one line every errorLogEvery with the number of
// those it left out: a collector that is down fails every export, every few seconds.
type errorLog struct {
	logger  *slog.Logger
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// errorLogEvery is the least time between two lines of errorLog.
const errorLogEvery = time.Minute

func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.last) >= errorLogEvery {
		l.logger.Warn("tracing: spans not exported", "error", err, "errors_not_logged", l.skipped, "next_line_in", errorLogEvery)
		l.last, l.skipped = now, 0
		return
	}
	l.skipped++
}
