package populate

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"drover.dev/shared/tracing"
)

// tracer makes the span of a populate run's start; OpenTelemetry's no-op one unless the process
// traces. The makes' spans are otelriver's, of their River jobs.
var tracer = otel.Tracer("drover.dev/services/populate-worker/internal/populate")

// tracedMakes is how many makes of a run are spans of its trace: its first keys, in the run's
// order. A run of a million keys is one trace of a hundred makes, not a million.
const tracedMakes = 100

// inRunTrace is ctx with the run's span (parent, its tracing.Parent) as the parent of the makes it queues next, from
// the run's key seq on: each make of the run is then the run's child, not the child of the make
// that happened to end before it. Past tracedMakes the parent is kept but not sampled, so those
// makes are not recorded.
func inRunTrace(ctx context.Context, parent *string, seq int32) context.Context {
	if parent == nil {
		return ctx
	}
	sc := tracing.SpanContext(*parent)
	if !sc.IsValid() {
		return ctx
	}
	if seq >= tracedMakes {
		sc = sc.WithTraceFlags(sc.TraceFlags().WithSampled(false))
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// unsampled is ctx with its trace kept but no longer sampled: the feeder's makes, a background's
// thousands, are not spans of the trace whose schedule fed them (the feed job's span is).
func unsampled(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc.WithTraceFlags(sc.TraceFlags().WithSampled(false)))
}
