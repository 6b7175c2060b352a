package populate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
)

func TestScheduleJobs(t *testing.T) {
	t.Parallel()

	t.Run("SchedulesMissingKeysAndTheirFeedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 5)
		_, err := b.pool.Exec(b.ctx, `INSERT INTO dst (a, b, doubled) VALUES (1, 1, 2)`)
		require.NoError(t, err)
		require.Equal(t, ScheduleResult{Scheduled: 4}, b.schedule(t, ScheduleOpts{}))
		require.Equal(t, 4, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'scheduled' AND NOT enqueued`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'`), "no River job per key")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_feed'`), "the feed job, in the same transaction")
		require.Equal(t, FeedResult{Enqueued: 4}, b.feed(t))
		require.Equal(t, 4, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make'`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs WHERE NOT enqueued`))
		require.Equal(t, ScheduleResult{}, b.schedule(t, ScheduleOpts{}), "scheduled keys are never scheduled twice")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_feed'`), "nothing scheduled, no feed job")
	})
	t.Run("RiverJobsAreWhatRiverWouldInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{}).Scheduled)
		b.feed(t)
		hash := b.hashes(t, StatusScheduled)[0]
		for _, args := range []interface {
			Kind() string
			InsertOpts() river.InsertOpts
		}{FeedArgs{Table: "pair"}, queue.PopulateMakeArgs{Table: "pair", KeyHash: hash}} {
			want, err := json.Marshal(args)
			require.NoError(t, err)
			var match bool
			var q, state, metadata string
			var maxAttempts, priority, attempt int
			require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT args = $1::jsonb, queue, state::text, metadata::text,
				max_attempts, priority, attempt FROM river_job WHERE kind = $2`, string(want), args.Kind()).Scan(
				&match, &q, &state, &metadata, &maxAttempts, &priority, &attempt))
			require.True(t, match, "args are %T as River marshals them", args)
			opts := args.InsertOpts()
			require.Equal(t, []any{opts.Queue, "available", "{}", opts.MaxAttempts, max(opts.Priority, 1), 0},
				[]any{q, state, metadata, maxAttempts, priority, attempt}, args.Kind())
		}
	})
	t.Run("WakesTheFeedAndMakeProducersAsRiverDoes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		conn, err := b.pool.Acquire(b.ctx)
		require.NoError(t, err)
		defer conn.Release()
		_, err = conn.Exec(b.ctx, `LISTEN "populate_worker.river_insert"`)
		require.NoError(t, err)
		next := func() string {
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			defer cancel()
			n, err := conn.Conn().WaitForNotification(ctx)
			require.NoError(t, err)
			return n.Payload
		}
		// River's own insert notifies this channel: the test listens where River's producers do.
		for _, args := range []river.JobArgs{FeedArgs{Table: "other"}, queue.PopulateMakeArgs{Table: "other", KeyHash: "x"}} {
			_, err = b.engine.river.Insert(b.ctx, args, nil)
			require.NoError(t, err)
		}
		feed, mk := next(), next()
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{}).Scheduled)
		require.JSONEq(t, feed, next(), "schedule_jobs notifies the feed queue as River's insert did")
		b.feed(t)
		require.JSONEq(t, mk, next(), "the feeder notifies the make queue as River's insert did")
	})
	t.Run("AJobInsertedMeanwhileIsLeftAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 3)
		// Another transaction inserts an ignore job for key (2, 1) and commits while schedule_jobs
		// waits on it: the plain insert fails on the primary key and the call is done again.
		other, err := b.pool.Begin(b.ctx)
		require.NoError(t, err)
		defer func() { _ = other.Rollback(b.ctx) }()
		_, err = other.Exec(b.ctx, `INSERT INTO jobs (table_name, key_hash, status, key)
			VALUES ('pair', md5('{"a": 2, "b": 1}'::jsonb::text), 'ignore', '{"a": 2, "b": 1}')`)
		require.NoError(t, err)
		type outcome struct {
			res ScheduleResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := b.engine.ScheduleJobs(b.ctx, "pair", ScheduleOpts{})
			done <- outcome{res, err}
		}()
		require.Eventually(t, func() bool {
			return b.count(t, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
		}, 10*time.Second, 10*time.Millisecond, "schedule_jobs waits on the other transaction's key")
		require.NoError(t, other.Commit(b.ctx))
		got := <-done
		require.NoError(t, got.err)
		require.Equal(t, ScheduleResult{Scheduled: 2}, got.res)
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'ignore'`))
		require.Equal(t, FeedResult{Enqueued: 2}, b.feed(t), "the ignored key gets no make")
	})
	t.Run("AntijoinOnPrimaryKeyOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.insertSrc(t, [3]int{1, 1, 10}, [3]int{2, 1, 20})
		// dst's v differs from src's v: matching on it would reschedule key (1,1) (#1405).
		_, err := b.pool.Exec(b.ctx, `INSERT INTO dst (a, b, v, doubled) VALUES (1, 1, 99, 20)`)
		require.NoError(t, err)
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{}).Scheduled)
	})
	t.Run("KeyHashHasNoCollisions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.insertSrc(t, [3]int{1, 23, 1}, [3]int{12, 3, 1})
		require.Equal(t, 2, b.schedule(t, ScheduleOpts{}).Scheduled)
		require.Equal(t, 2, b.count(t, `SELECT count(DISTINCT key_hash) FROM jobs`))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE key_hash = md5('{"a": 1, "b": 23}'::jsonb::text)`))
	})
	t.Run("SecondScheduleInsideTheIntervalIsSuppressed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{MinSchedulingInterval: time.Hour})
		b.grid(t, 2)
		require.Equal(t, 2, b.schedule(t, ScheduleOpts{}).Scheduled)
		b.insertSrc(t, [3]int{3, 1, 3})
		require.Equal(t, ScheduleResult{Suppressed: true}, b.schedule(t, ScheduleOpts{}))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs`), "nothing written while suppressed")
		zero := time.Duration(0)
		require.Equal(t, 1, b.schedule(t, ScheduleOpts{MinInterval: &zero}).Scheduled, "a per-call override schedules")
	})
	t.Run("ForceReschedulesErrorAndIgnoreOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{KeepSuccess: true})
		b.grid(t, 5)
		b.schedule(t, ScheduleOpts{})
		hashes := b.hashes(t, StatusScheduled)
		_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET status = CASE key_hash
			WHEN $1 THEN 'error' WHEN $2 THEN 'ignore' WHEN $3 THEN 'reserved' WHEN $4 THEN 'success' ELSE status END`,
			hashes[0], hashes[1], hashes[2], hashes[3])
		require.NoError(t, err)
		require.Zero(t, b.schedule(t, ScheduleOpts{}).Scheduled, "without force nothing changes")
		require.Equal(t, FeedResult{Enqueued: 1}, b.feed(t), "the key left scheduled")
		require.Equal(t, 2, b.schedule(t, ScheduleOpts{Force: true}).Scheduled)
		require.Equal(t, 3, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`))
		require.Equal(t, FeedResult{Enqueued: 2}, b.feed(t), "the forced keys get a make each")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'reserved'`))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'success'`))
	})
	t.Run("RestrictionLimitsTheKeysScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 5)
		r := Restriction{"a": json.RawMessage(`[2, 4]`), "b": json.RawMessage(`1`)}
		require.Equal(t, ScheduleResult{Scheduled: 2}, b.schedule(t, ScheduleOpts{Restriction: r}))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE key->>'a' IN ('2', '4')`))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs`))
		require.Equal(t, FeedResult{Enqueued: 2}, b.feed(t))
		require.Equal(t, 3, b.schedule(t, ScheduleOpts{}).Scheduled, "the rest is scheduled unrestricted")
	})
	t.Run("BadRestrictionWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 3)
		for _, r := range []Restriction{
			{"a": json.RawMessage(`"1"`)},
			{"a": json.RawMessage(`1.5`)},
			{"a": json.RawMessage(`true`)},
			{"a": json.RawMessage(`2147483648`)}, // a is an int column
			{"v": json.RawMessage(`1`)},
		} {
			_, err := b.engine.ScheduleJobs(b.ctx, "pair", ScheduleOpts{Restriction: r})
			var p *problem.Error
			require.ErrorAs(t, err, &p, "%v", r)
			require.Equal(t, problem.Unprocessable, p.Code)
		}
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM scheduling_events`), "no scheduling event claimed")
	})
	t.Run("UnknownTableIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		_, err := b.engine.ScheduleJobs(b.ctx, "nope", ScheduleOpts{})
		require.ErrorContains(t, err, "not found")
	})
}
