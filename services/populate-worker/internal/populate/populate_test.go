package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
)

// result is what a test reads of an ended run.
type result struct {
	SuccessCount int
	Skipped      int
	ErrorList    []RunError
	// Stopped is true when an error ended the run early (state failed).
	Stopped bool
}

// populate starts a run and works its River make jobs to the end (drainRun), returning its
// outcome.
func (b *testBundle) populate(t *testing.T, opts Opts) result {
	t.Helper()
	run, err := b.engine.Populate(b.ctx, "pair", opts)
	require.NoError(t, err)
	b.drainRun(t)
	run, err = b.engine.GetRun(b.ctx, run.ID)
	require.NoError(t, err)
	require.NotEqual(t, RunRunning, run.State, "%+v", run)
	return result{SuccessCount: int(run.Made), Skipped: int(run.Skipped), ErrorList: run.ErrorList, Stopped: run.State == RunFailed}
}

// drainRun works the waiting populate_run_make jobs one at a time, oldest first, as one River
// worker would, until none is left; the background populate_make jobs stay waiting.
func (b *testBundle) drainRun(t *testing.T) {
	t.Helper()
	for {
		var args queue.PopulateRunMakeArgs
		id, ok := b.startNext(t, args.Kind(), &args)
		if !ok {
			return
		}
		_, err := b.engine.MakeRunKey(b.ctx, args.RunID, args.Table, args.KeyHash, endRiverJob(id))
		require.NoError(t, err)
	}
}

// startNext marks the oldest available River job of kind running, as River's fetch does, and
// returns its id with its args decoded into args; false when none is available.
func (b *testBundle) startNext(t *testing.T, kind string, args any) (int64, bool) {
	t.Helper()
	var id int64
	err := b.pool.QueryRow(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE id = (SELECT id FROM river_job WHERE kind = $1 AND state = 'available' ORDER BY id LIMIT 1)
		RETURNING id, args`, kind).Scan(&id, args)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	require.NoError(t, err)
	return id, true
}

// endRiverJob is the CompleteFunc of River job id in tests: completed, or discarded on error.
func endRiverJob(id int64) CompleteFunc {
	return func(ctx context.Context, tx pgx.Tx, makeErr error) error {
		_, err := tx.Exec(ctx, `UPDATE river_job SET state = CASE WHEN $2 THEN 'discarded' ELSE 'completed' END::river_job_state,
			finalized_at = now() WHERE id = $1`, id, makeErr != nil)
		return err
	}
}

func TestPopulate(t *testing.T) {
	t.Parallel()

	for _, reserve := range []bool{true, false} {
		name := map[bool]string{true: "Reserved", false: "Direct"}[reserve]
		t.Run(name+"FillsEverything", func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{})
			b.grid(t, 10)
			res := b.populate(t, Opts{ReserveJobs: reserve})
			require.Equal(t, 10, res.SuccessCount)
			require.Empty(t, res.ErrorList)
			require.Equal(t, 10, b.count(t, `SELECT count(*) FROM dst`))
			require.Equal(t, 30, b.count(t, `SELECT sum(doubled) FROM dst WHERE a <= 5`))
		})
		t.Run(name+"RestrictedFillsExactlyTheSubset", func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{})
			b.grid(t, 20)
			res := b.populate(t, Opts{ReserveJobs: reserve, Restriction: Restriction{"a": json.RawMessage(`[2, 4, 6, 8, 10]`)}})
			require.Equal(t, 5, res.SuccessCount, "DataJoint #1413")
			require.Equal(t, 5, b.count(t, `SELECT count(*) FROM dst WHERE a IN (2, 4, 6, 8, 10)`))
			require.Equal(t, 5, b.count(t, `SELECT count(*) FROM dst`))
		})
		t.Run(name+"MaxCalls", func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{})
			b.grid(t, 10)
			require.Equal(t, 3, b.populate(t, Opts{ReserveJobs: reserve, MaxCalls: 3}).SuccessCount)
			require.Equal(t, 3, b.count(t, `SELECT count(*) FROM dst`))
		})
	}
	t.Run("OrderIsHonoured", func(t *testing.T) {
		t.Parallel()
		for _, order := range []Order{OrderOriginal, OrderReverse, OrderRandom} {
			b := setup(t, Config{})
			b.grid(t, 30)
			b.populate(t, Opts{ReserveJobs: true, Order: order})
			calls := b.calls.list()
			asc := slices.Clone(calls)
			slices.SortFunc(asc, func(x, y string) int { return keyNum(x) - keyNum(y) })
			desc := slices.Clone(asc)
			slices.Reverse(desc)
			switch order {
			case OrderOriginal:
				require.Equal(t, asc, calls)
			case OrderReverse:
				require.Equal(t, desc, calls)
			case OrderRandom:
				require.NotEqual(t, asc, calls) // 1 in 30! of failing by chance
				require.NotEqual(t, desc, calls)
			}
		}
	})
	t.Run("ErrorAndIgnoreKeysAreSkipped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 6)
		b.insertSrc(t, [3]int{7, 1, -1})
		res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true, Order: OrderReverse})
		require.Equal(t, 6, res.SuccessCount)
		require.Len(t, res.ErrorList, 1)
		_, err := b.pool.Exec(b.ctx, `DELETE FROM dst WHERE a = 3`)
		require.NoError(t, err)
		b.schedule(t, ScheduleOpts{})
		_, err = b.engine.Ignore(b.ctx, "pair", b.hashes(t, StatusScheduled)[0])
		require.NoError(t, err)
		res = b.populate(t, Opts{ReserveJobs: true, MaxCalls: 1})
		require.Zero(t, res.SuccessCount, "max_calls is not spent on error or ignore keys (#1062)")
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM src WHERE NOT EXISTS (SELECT 1 FROM dst WHERE dst.a = src.a)`))
		require.Zero(t, b.populate(t, Opts{}).SuccessCount, "direct populate skips them too")
	})
	t.Run("SuppressErrorsRecordsOneErrorPerKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.insertSrc(t, [3]int{1, 1, -1}, [3]int{2, 1, 2}, [3]int{3, 1, -3})
		res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		require.Equal(t, 1, res.SuccessCount)
		require.Len(t, res.ErrorList, 2)
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'error' AND error_message LIKE 'ValueError: negative v %'`))
	})
	t.Run("WithoutSuppressErrorsTheFirstErrorStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.insertSrc(t, [3]int{1, 1, -1}, [3]int{2, 1, 2})
		res := b.populate(t, Opts{ReserveJobs: true})
		require.True(t, res.Stopped)
		require.Zero(t, res.SuccessCount)
		require.Len(t, res.ErrorList, 1)
	})
	t.Run("SeveralProcessesFillEverything", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 100)
		require.Equal(t, 100, b.populate(t, Opts{ReserveJobs: true, Processes: 4}).SuccessCount)
		require.Len(t, b.calls.list(), 100)
	})
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeyRescheduledAfterItsMakeIsSettledNotMade/KeepSuccess=%v", keep), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{KeepSuccess: keep})
			b.grid(t, 3)
			require.Equal(t, 3, b.populate(t, Opts{ReserveJobs: true}).SuccessCount)
			_, err := b.pool.Exec(b.ctx, `DELETE FROM jobs`)
			require.NoError(t, err)
			// What a schedule_jobs whose snapshot predates a make's commit leaves behind: a
			// scheduled job, with its River make, for keys already in the target.
			stale := b.scheduleStale(t, `{"a": 1, "b": 1}`, `{"a": 2, "b": 1}`)
			b.insertSrc(t, [3]int{4, 1, 4})
			b.schedule(t, ScheduleOpts{})

			res := b.populate(t, Opts{ReserveJobs: true, SkipSchedule: true, Processes: 2})
			require.Equal(t, 1, res.SuccessCount, "the made key only")
			require.Equal(t, 2, res.Skipped, "the stale keys needed no make")
			require.Empty(t, res.ErrorList)
			completed := false
			makeErr, err := b.engine.MakeKey(b.ctx, "pair", stale[1], func(context.Context, pgx.Tx, error) error {
				completed = true
				return nil
			})
			require.NoError(t, err)
			require.NoError(t, makeErr)
			require.True(t, completed, "the River path settles its job too")

			require.Equal(t, []string{"1/1", "2/1", "3/1", "4/1"}, b.calls.list(), "no key made twice")
			require.Equal(t, 4, b.count(t, `SELECT count(*) FROM dst`))
			require.Equal(t, map[bool]int{false: 0, true: 3}[keep], b.count(t, `SELECT count(*) FROM jobs WHERE status = 'success'`))
			require.Zero(t, b.count(t, `SELECT count(*) FROM jobs WHERE status <> 'success'`))
			require.NotZero(t, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_make' AND args->>'key_hash' = $1`, stale[0]),
				"the stale key's River make is left to run and find it made, as River UI shows")
		})
	}
	t.Run("BadInputIsRejectedAndWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 3)
		for _, opts := range []Opts{
			{ReserveJobs: true, Restriction: Restriction{"v": json.RawMessage(`1`)}},
			{ReserveJobs: true, Restriction: Restriction{"a": json.RawMessage(`{"$gt": 1}`)}},
			{ReserveJobs: true, Restriction: Restriction{"a": json.RawMessage(`[]`)}},
			{ReserveJobs: true, Restriction: Restriction{"a; DROP TABLE jobs": json.RawMessage(`1`)}},
			{ReserveJobs: true, Order: "sideways"},
			{ReserveJobs: true, Processes: 99},
		} {
			_, err := b.engine.Populate(b.ctx, "pair", opts)
			require.Equal(t, problem.Unprocessable, problem.CodeOf(err), "%+v: %v", opts, err)
		}
		_, err := b.engine.Populate(b.ctx, "nope", Opts{})
		require.Equal(t, problem.NotFound, problem.CodeOf(err))
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM scheduling_events`))
		require.Zero(t, b.count(t, `SELECT count(*) FROM dst`))
	})
}

// scheduleStale inserts a scheduled job and its River make for each key, whatever the target
// holds, and returns their hashes in order.
func (b *testBundle) scheduleStale(t *testing.T, keys ...string) []string {
	t.Helper()
	var hashes []string
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		for _, k := range keys {
			var h string
			if err := tx.QueryRow(b.ctx, `INSERT INTO jobs (table_name, key_hash, status, key)
				VALUES ('pair', md5($1::jsonb::text), 'scheduled', $1::jsonb) RETURNING key_hash`, k).Scan(&h); err != nil {
				return err
			}
			hashes = append(hashes, h)
		}
		return b.engine.enqueueMakes(b.ctx, tx, "pair", hashes)
	}))
	return hashes
}

// keyNum is a of a callLog entry "a/b".
func keyNum(s string) int {
	n := 0
	for _, c := range s {
		if c == '/' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
