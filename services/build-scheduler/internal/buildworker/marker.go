package buildworker

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Marker records the builds a worker runs as running (worker, start time) and their groups as
// dispatching, in one statement per period for all of them, off the builds' critical path: River's
// fetch is the claim, and a build needs no write of its own before it starts. A build whose
// report comes first (any build shorter than a period) is never marked: its report records the
// same, so the builds that are recorded running are the ones that run longer than a period, and
// the API lists a build running at most a period after River UI does.
type Marker struct {
	Pool   *pgxpool.Pool
	Period time.Duration
	Logger *slog.Logger

	mu      sync.Mutex
	running map[int64]started // by River job id
	groups  map[int64]bool    // groups whose builds started since the last mark
	marked  map[int64]bool    // groups this marker has made dispatching already
}

// started is a build that started on this worker.
type started struct {
	build  jobgraph.Build
	worker string
	at     time.Time // when River started its River job
}

// start records that the River job riverID started build b on worker at.
func (m *Marker) start(riverID int64, b jobgraph.Build, worker string, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running, m.groups, m.marked = map[int64]started{}, map[int64]bool{}, map[int64]bool{}
	}
	m.running[riverID] = started{build: b, worker: worker, at: at}
	if !m.marked[b.GroupID] {
		m.groups[b.GroupID] = true
	}
}

// done forgets the River job riverID: its build was reported, or given up.
func (m *Marker) done(riverID int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, riverID)
}

// Run marks every Period until ctx ends.
func (m *Marker) Run(ctx context.Context) error {
	tick := time.NewTicker(m.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := m.mark(ctx); err != nil && ctx.Err() == nil {
			m.Logger.WarnContext(ctx, "record running builds", "error", err)
		}
	}
}

// mark records, in one statement, the builds that have run for a period and are not marked yet,
// and the groups of the builds that started since the last mark.
func (m *Marker) mark(ctx context.Context) error {
	var batch jobgraph.Started
	due := time.Now().Add(-m.Period)
	m.mu.Lock()
	for id, s := range m.running {
		if s.at.Before(due) {
			batch.Add(s.build, s.worker, s.at)
			delete(m.running, id)
		}
	}
	groups := slices.Sorted(maps.Keys(m.groups))
	clear(m.groups)
	if len(m.marked) > 100_000 { // a long-lived worker forgets old groups rather than grow
		clear(m.marked)
	}
	for _, g := range groups {
		m.marked[g] = true
	}
	m.mu.Unlock()
	batch.Groups = groups
	return batch.Mark(ctx, m.Pool)
}
