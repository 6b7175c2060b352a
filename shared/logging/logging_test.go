package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("AutoIsJSONOffTerminal", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		logger, err := New(&buf, "info", "auto")
		require.NoError(t, err)
		logger.Info("hello", "n", 1)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
		require.Equal(t, "hello", rec["msg"])
	})
	t.Run("LevelFilters", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		logger, err := New(&buf, "warn", "text")
		require.NoError(t, err)
		logger.Info("quiet")
		require.Empty(t, buf.String())
	})
	t.Run("DurationsAreMilliseconds", func(t *testing.T) {
		t.Parallel()
		for _, format := range []string{"json", "text"} {
			var buf bytes.Buffer
			logger, err := New(&buf, "info", format)
			require.NoError(t, err)
			logger.Info("batch done", "send_spread", 1500*time.Microsecond, slog.Group("stage", "took", 2*time.Second))
			if format == "text" {
				require.Contains(t, buf.String(), "send_spread_ms=1.5 stage.took_ms=2000")
				continue
			}
			var rec map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
			require.Equal(t, 1.5, rec["send_spread_ms"])
			require.Equal(t, map[string]any{"took_ms": 2000.0}, rec["stage"])
		}
	})
	t.Run("BadValues", func(t *testing.T) {
		t.Parallel()
		_, err := New(&bytes.Buffer{}, "loud", "text")
		require.ErrorContains(t, err, "log level")
		_, err = New(&bytes.Buffer{}, "info", "xml")
		require.ErrorContains(t, err, "log format")
	})
}

// TestTraceIDs: a line logged with the context of a traced piece of work names its trace and span;
// a line without one names none.
func TestTraceIDs(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	logger, err := New(&out, "info", "json")
	require.NoError(t, err)
	ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(t.Context(), "work")
	defer span.End()
	logger.With("service", "x").InfoContext(ctx, "in the work")
	logger.Info("outside")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	sc := span.SpanContext()
	require.Contains(t, lines[0], `"trace_id":"`+sc.TraceID().String()+`","span_id":"`+sc.SpanID().String()+`"`)
	require.NotContains(t, lines[1], "trace_id")
}
