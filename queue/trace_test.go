package queue

import (
	"context"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// TestContinueTrace: a job is worked in the trace its metadata names, as a child of its
// inserter's span, unless River's leader inserted it as a periodic job: that starts its own.
func TestContinueTrace(t *testing.T) {
	t.Parallel()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name     string
		metadata string
		want     string // the trace the worker's context is in; "" for none
	}{
		{"Inserted", `{"traceparent": "` + parent + `"}`, "0af7651916cd43dd8448eb211c80319c"},
		{"Periodic", `{"traceparent": "` + parent + `", "periodic": true}`, ""},
		{"Untraced", `{}`, ""},
		{"NotJSON", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got trace.SpanContext
			err := (&continueTrace{}).Work(context.Background(), &rivertype.JobRow{Metadata: []byte(tc.metadata)},
				func(ctx context.Context) error { got = trace.SpanContextFromContext(ctx); return nil })
			require.NoError(t, err)
			if tc.want == "" {
				require.False(t, got.IsValid())
				return
			}
			require.Equal(t, tc.want, got.TraceID().String())
			require.Equal(t, "b7ad6b7169203331", got.SpanID().String())
			require.True(t, got.IsRemote())
		})
	}
}
