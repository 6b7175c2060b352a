package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// statementTimes is a pgx tracer that adds up, per statement, how many times it ran and the time
// from sending it to reading its result (round trip, lock waits and execution), for -profile.
type statementTimes struct {
	mu    sync.Mutex
	stats map[string]*statementStat
}

type statementStat struct {
	n     int
	total time.Duration
}

type traceStart struct {
	sql   string
	start time.Time
}

type traceKey struct{}

var spaces = regexp.MustCompile(`\s+`)

func (s *statementTimes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return s.start(ctx, data.SQL)
}

func (s *statementTimes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s.end(ctx)
}

// A batch counts as one round trip, named by its statements.
func (s *statementTimes) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, len(data.Batch.QueuedQueries))
	for i, q := range data.Batch.QueuedQueries {
		sqls[i] = q.SQL
	}
	return s.start(ctx, "batch: "+strings.Join(sqls, "; "))
}

func (s *statementTimes) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (s *statementTimes) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.end(ctx)
}

func (s *statementTimes) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	return s.start(ctx, "copy into "+data.TableName.Sanitize())
}

func (s *statementTimes) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	s.end(ctx)
}

func (s *statementTimes) start(ctx context.Context, sql string) context.Context {
	sql = spaces.ReplaceAllString(sql, " ")
	return context.WithValue(ctx, traceKey{}, traceStart{sql: sql[:min(len(sql), 70)], start: time.Now()})
}

func (s *statementTimes) end(ctx context.Context) {
	st, ok := ctx.Value(traceKey{}).(traceStart)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats == nil {
		s.stats = map[string]*statementStat{}
	}
	e := s.stats[st.sql]
	if e == nil {
		e = &statementStat{}
		s.stats[st.sql] = e
	}
	e.n++
	e.total += time.Since(st.start)
}

// print writes the statements by total time, largest first, and forgets them.
func (s *statementTimes) print(out io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.stats))
	for k := range s.stats {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(s.stats[b].total - s.stats[a].total) })
	for _, k := range keys {
		e := s.stats[k]
		fmt.Fprintf(out, "  %8d x %8.3f ms = %8.0f ms  %s\n", e.n, float64(e.total.Microseconds())/1000/float64(e.n), float64(e.total.Milliseconds()), k)
	}
	s.stats = nil
}
