// Package backlog is the pushback of every enqueue endpoint: a bound on the jobs waiting in the
// queue a request would add to, checked against counts a background loop refreshes, so that a
// flood of requests gets 429s instead of growing a queue without end, and no request pays for a
// count.
package backlog

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// DefaultInterval is how often the counts are refreshed.
const DefaultInterval = time.Second

// waitingStates are the states of the jobs a bound counts: those no worker has taken yet.
var waitingStates = []string{"available", "scheduled", "retryable"}

// Key names one queue: a service's schema and a queue in it.
type Key struct {
	Service queue.Service
	Queue   string
}

// Gauge counts the jobs waiting in the queues requests have asked about, refreshing the counts
// every interval in one statement, and refuses work for a queue whose count has reached the
// bound. Between two refreshes each admitted request counts as one more job. The bound holds per
// process: replicas each admit up to it between refreshes. A request admitted just under the
// bound may add many jobs (a group of many ready jobs), so the bound is on the waiting work a
// request finds, not on the work it adds.
type Gauge struct {
	db       postgres.DBTX
	max      int
	interval time.Duration
	logger   *slog.Logger
	wake     chan struct{}

	mu     sync.Mutex
	counts map[Key]int // the last count plus the requests admitted since

	refused *prometheus.CounterVec
	waiting *prometheus.GaugeVec
}

// New returns a gauge refusing work past max waiting jobs per queue (none when max is 0),
// counting on db every interval, its metrics registered on reg.
func New(db postgres.DBTX, max int, interval time.Duration, reg prometheus.Registerer, logger *slog.Logger) *Gauge {
	g := &Gauge{
		db: db, max: max, interval: interval, logger: logger,
		wake: make(chan struct{}, 1), counts: map[Key]int{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_http_refused_total",
			Help: "Enqueue requests refused with 429 because their queue held MAX_QUEUED waiting jobs, by service, queue and route.",
		}, []string{"service", "queue", "route"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drover_queue_waiting_jobs",
			Help: "Jobs waiting (available, scheduled, retryable) in each queue an enqueue endpoint was asked to add to, as of the last count (capped at MAX_QUEUED).",
		}, []string{"service", "queue"}),
	}
	reg.MustRegister(g.refused, g.waiting)
	return g
}

// Admit returns nil when the queue key has room, and otherwise a 429 problem naming the queue,
// with a Retry-After header on c's response.
func (g *Gauge) Admit(c *echo.Context, key Key) error {
	if g.max <= 0 {
		return nil
	}
	refused := g.refused.WithLabelValues(string(key.Service), key.Queue, c.Path()) // at 0 from the first request, for rate()
	if g.take(key) {
		return nil
	}
	refused.Inc()
	retry := max(1, int(math.Ceil(2*g.interval.Seconds())))
	c.Response().Header().Set("Retry-After", strconv.Itoa(retry))
	return &problem.Error{
		Code: problem.Busy, Queue: key.Queue,
		Detail: fmt.Sprintf("queue %s of %s holds %d or more waiting jobs, its bound (MAX_QUEUED); retry after %d s",
			key.Queue, key.Service, g.max, retry),
	}
}

// Guard is a route middleware that admits a request only when the queue key has room: for a
// route that always adds to one queue.
func (g *Gauge) Guard(key Key) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if err := g.Admit(c, key); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// take admits a request for key when its count is under the bound, and then counts the job the
// request adds until the next refresh replaces the count, so that a flood between two refreshes
// stops at the bound rather than one interval's worth of requests past it. A key asked about for
// the first time starts being counted at once.
func (g *Gauge) take(key Key) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.counts[key]
	if !ok {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	if n >= g.max {
		return false
	}
	g.counts[key] = n + 1
	return true
}

// Run refreshes the counts every interval until ctx ends. A failed count keeps the previous
// ones: a database that does not answer refuses the enqueue itself.
func (g *Gauge) Run(ctx context.Context) error {
	if g.max <= 0 {
		return nil
	}
	ticker := time.NewTicker(g.interval)
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-g.wake:
		}
		err := g.Refresh(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			g.logger.WarnContext(ctx, "count waiting jobs", "error", err)
		}
		failing = err != nil
	}
}

// Refresh counts the waiting jobs of every queue asked about, in one statement.
func (g *Gauge) Refresh(ctx context.Context) error {
	g.mu.Lock()
	keys := slices.SortedFunc(maps.Keys(g.counts), func(a, b Key) int {
		return strings.Compare(string(a.Service)+"."+a.Queue, string(b.Service)+"."+b.Queue)
	})
	g.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	sql, args := countStatement(keys, g.max)
	counts := make([]int64, len(keys))
	dest := make([]any, len(keys))
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := g.db.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		return fmt.Errorf("count waiting jobs of %d queues: %w", len(keys), err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, k := range keys {
		g.counts[k] = int(counts[i])
		g.waiting.WithLabelValues(string(k.Service), k.Queue).Set(float64(counts[i]))
	}
	return nil
}

// countStatement is one SELECT with a column per key: the key's waiting jobs, each state a range
// of River's fetching index on (state, queue, priority, scheduled_at, id) read up to limit
// entries (the ORDER BY on the index's columns makes Postgres walk the index rather than scan
// the table), so a count costs at most a few thousand index entries however long the queue.
// River's tables are read, never written. The schema is in the statement, sanitized; queue
// names and the limit are parameters.
func countStatement(keys []Key, limit int) (string, []any) {
	cols := make([]string, len(keys))
	args := []any{limit}
	for i, k := range keys {
		args = append(args, k.Queue)
		table := pgx.Identifier{k.Service.Schema(), "river_job"}.Sanitize()
		parts := make([]string, len(waitingStates))
		for j, state := range waitingStates {
			parts[j] = fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM %s j WHERE j.state = '%s' AND j.queue = $%d"+
				" ORDER BY j.state, j.queue, j.priority, j.scheduled_at, j.id LIMIT $1) x)", table, state, len(args))
		}
		cols[i] = strings.Join(parts, " + ")
	}
	return "SELECT " + strings.Join(cols, ", "), args
}
