package backlog

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
	"drover.dev/shared/testdb"
)

type testBundle struct {
	tx  pgx.Tx
	reg *prometheus.Registry
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	tx := testdb.Tx(t, "")
	ins, err := queue.NewInserter(nil, queue.BuildScheduler)
	require.NoError(t, err)
	insert := func(n int, opts *river.InsertOpts) {
		for range n {
			_, err := ins.InsertTx(t.Context(), tx, queue.ProbeArgs{ProbeID: 1, Origin: queue.Scorer}, opts)
			require.NoError(t, err)
		}
	}
	insert(3, nil)                                                       // available
	insert(2, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}) // scheduled
	insert(1, &river.InsertOpts{Queue: "other"})                         // another queue
	return &testBundle{tx: tx, reg: prometheus.NewRegistry()}
}

// admit asks g about key for a request.
func admit(t *testing.T, g *Gauge, key Key) (*httptest.ResponseRecorder, error) {
	t.Helper()
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/probes", nil), rec)
	return rec, g.Admit(c, key)
}

var probes = Key{Service: queue.BuildScheduler, Queue: queue.QueueProbe}

func TestAdmitRefusesAFullQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := New(b.tx, 5, time.Second, b.reg, slog.New(slog.DiscardHandler))

	_, err := admit(t, g, probes)
	require.NoError(t, err, "a queue not counted yet is admitted")
	require.NoError(t, g.Refresh(t.Context()))
	rec, err := admit(t, g, probes)
	var pe *problem.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, problem.Busy, pe.Code)
	require.Equal(t, queue.QueueProbe, pe.Queue)
	require.Contains(t, pe.Detail, "build-scheduler")
	require.Equal(t, "2", rec.Header().Get("Retry-After"))
	require.InDelta(t, 5, testutil.ToFloat64(g.waiting.WithLabelValues("build-scheduler", "probe")), 0,
		"available and scheduled jobs count")

	other := Key{Service: queue.BuildScheduler, Queue: "other"}
	_, err = admit(t, g, other)
	require.NoError(t, err)
	require.NoError(t, g.Refresh(t.Context()))
	_, err = admit(t, g, other)
	require.NoError(t, err, "one waiting job is under the bound")
	require.InDelta(t, 1, testutil.ToFloat64(g.refused.WithLabelValues("build-scheduler", "probe", "")), 0, "one refusal counted")
}

func TestCountsAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := New(b.tx, 2, time.Second, b.reg, slog.New(slog.DiscardHandler))
	_, _ = admit(t, g, probes)
	require.NoError(t, g.Refresh(t.Context()))
	require.InDelta(t, 4, testutil.ToFloat64(g.waiting.WithLabelValues("build-scheduler", "probe")), 0,
		"each state is read up to the bound")
}

func TestZeroBoundAdmitsEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := New(b.tx, 0, time.Second, b.reg, slog.New(slog.DiscardHandler))
	require.NoError(t, g.Run(t.Context()), "nothing to count")
	_, err := admit(t, g, probes)
	require.NoError(t, err)
}
