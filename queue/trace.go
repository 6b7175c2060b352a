package queue

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// traced reports whether the process exports traces: shared/tracing installed the SDK's tracer
// provider before the clients were built.
func traced() bool {
	_, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	return ok
}

// traceMiddleware is what carries a trace across River when the process traces, and nothing when
// it does not. otelriver's middleware writes the inserting span's W3C trace context into each
// job's metadata (traceparent, tracestate) and makes a span of each job worked;
// continueTrace, outside it, makes that span a child of the inserting one, so that a piece of work
// that crosses services is one trace.
func traceMiddleware() []rivertype.Middleware {
	if !traced() {
		return nil
	}
	return []rivertype.Middleware{
		&continueTrace{},
		otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			EnableTracePropagation:      true,
			EnableWorkSpanJobKindSuffix: true,
		}),
	}
}

// continueTrace puts the trace context its job's inserter wrote into the job's metadata into the
// context the job is worked with, except for a periodic job's. otelriver only links a worked job's
// span to its inserter's, which leaves every hop a trace of its own; as the parent, the
// inserter's span joins them.
type continueTrace struct{ river.MiddlewareDefaults }

func (*continueTrace) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var carrier struct {
		TraceParent string `json:"traceparent"`
		TraceState  string `json:"tracestate"`
		Periodic    bool   `json:"periodic"`
	}
	// A periodic job starts a trace of its own: River's leader inserts every job due at once in
	// one insert, which would make the sync, the cleanup and the watchdog one trace. otelriver's
	// link to that insert stays.
	if json.Unmarshal(job.Metadata, &carrier) == nil && carrier.TraceParent != "" && !carrier.Periodic {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{
			"traceparent": carrier.TraceParent, "tracestate": carrier.TraceState,
		})
	}
	return doInner(ctx)
}
