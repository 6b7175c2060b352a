package populate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
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

// drainRun works the waiting populate_make jobs one at a time, in River's order (a run's first),
// as one River worker would, until none is left.
func (b *testBundle) drainRun(t *testing.T) {
	t.Helper()
	for {
		var args queue.PopulateMakeArgs
		id, ok := b.startNext(t, queue.QueuePopulate, &args)
		if !ok {
			return
		}
		_, err := b.engine.MakeKey(b.ctx, AskerOf(args), args.Table, args.KeyHash, MakeOpts{JobID: id}, b.endRiverJob(t, id))
		require.NoError(t, err)
	}
}

// startNext fetches the next available River job of queue q as River's producer does (it is then
// running) and returns its id with its args decoded into args; false when none is available.
func (b *testBundle) startNext(t *testing.T, q string, args any) (int64, bool) {
	t.Helper()
	jobs := queuetest.FetchAsDeadProcess(b.ctx, t, b.pool, "", q, "test-worker", 1)
	if len(jobs) == 0 {
		return 0, false
	}
	require.NoError(t, json.Unmarshal(jobs[0].EncodedArgs, args))
	return jobs[0].ID, true
}

// endRiverJob is the CompleteFunc of River job id in tests: it ends the job in the state the
// River worker's would (completed when the key was made, handed to a run, or a run's entry settled, discarded on
// make's error, cancelled otherwise), with River's own driver call.
func (b *testBundle) endRiverJob(t *testing.T, id int64) CompleteFunc {
	t.Helper()
	return func(ctx context.Context, tx pgx.Tx, end End) error {
		state := rivertype.JobStateCancelled
		switch {
		case end.Outcome == OutcomeMade || end.Outcome == OutcomeInTarget || end.Outcome == OutcomeYielded || end.Outcome == OutcomeWaiting:
			state = rivertype.JobStateCompleted
		case end.Outcome == OutcomeError:
			state = rivertype.JobStateDiscarded
		case end.Outcome != OutcomeCancelled && end.Settled > 0:
			state = rivertype.JobStateCompleted
		}
		queuetest.Finish(ctx, t, tx, "", id, state)
		return nil
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
			var got End
			end, err := b.engine.MakeKey(b.ctx, Background, "pair", stale[1], MakeOpts{}, func(_ context.Context, _ pgx.Tx, end End) error {
				got = end
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, end, got, "the River path settles its job too")
			require.Equal(t, OutcomeSkipped, end.Outcome, "the run made it: nothing for this job to do")
			require.Contains(t, end.Note, map[bool]string{false: "has no job any more", true: "key already made"}[keep])

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
		return b.engine.enqueueMakes(b.ctx, tx, "pair", Background, hashes)
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

// TestRetriedMakes is River UI's Retry as the engine sees it: a make job that ended is delivered
// again (MakeOpts.Retried). A key in error is made again, outside the counts of the run whose
// job it was; a delivery that is not a Retry leaves an errored key to reschedule.
func TestRetriedMakes(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.insertSrc(t, [3]int{1, 1, -1}, [3]int{2, 1, 2})
	res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
	require.Len(t, res.ErrorList, 1)
	hash := res.ErrorList[0].KeyHash
	_, err := b.pool.Exec(b.ctx, `UPDATE src SET v = 1 WHERE a = 1`)
	require.NoError(t, err)

	end, err := b.engine.MakeKey(b.ctx, Background, "pair", hash, MakeOpts{}, nil)
	require.NoError(t, err)
	require.Equal(t, OutcomeSkipped, end.Outcome, "a duplicate delivery does not make an errored key")
	require.Contains(t, end.Note, "POST /v1/jobs/pair/"+hash+"/reschedule")

	var run int64
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT max(id) FROM populate_runs`).Scan(&run))
	end, err = b.engine.MakeKey(b.ctx, ForRun(run), "pair", hash, MakeOpts{Retried: true}, nil)
	require.NoError(t, err)
	require.Equal(t, End{Outcome: OutcomeMade, Revived: true}, end)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM dst`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
	got, err := b.engine.GetRun(b.ctx, run)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1}, []int64{got.Made, got.Errors}, "the ended run keeps what it saw")

	end, err = b.engine.MakeKey(b.ctx, Background, "pair", hash, MakeOpts{Retried: true}, nil)
	require.NoError(t, err)
	require.Equal(t, OutcomeSkipped, end.Outcome, "a made key is not made twice")
	require.Equal(t, []string{"1/1", "2/1", "1/1"}, b.calls.list(), "the failed make, the other key, the retried make")
}

// TestRunsShareKeys: two runs over the same keys split them as DataJoint's callers do. A run's
// make that finds its key being made by the other run's moves on to the next key, and counts
// the key made elsewhere when that make ends; a key another make holds when the run hands keys
// to River is passed over. Each run's success count is its own makes; their sum is the keys made.
func TestRunsShareKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.grid(t, 4)
	b.schedule(t, ScheduleOpts{})
	hashes := b.hashes(t, StatusScheduled)
	one, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, SkipSchedule: true})
	require.NoError(t, err)
	two, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, SkipSchedule: true})
	require.NoError(t, err)

	require.Equal(t, []string{hashes[0]}, b.queuedKeys(t, one.ID))
	require.Equal(t, []string{hashes[1]}, b.queuedKeys(t, two.ID), "run two takes first a key run one has not queued")

	// A make of run one's has reserved the second key and is making it.
	tbl, err := b.engine.tables.Get("pair")
	require.NoError(t, err)
	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	r, err := b.engine.reserveKey(b.ctx, conn, tbl, hashes[1], b.engine.runMetadata("test"), false, false)
	require.NoError(t, err)
	require.NotNil(t, r)
	r.by = ForRun(one.ID)

	// Run two's make of that key moves run two on to its next free key.
	end, err := b.engine.MakeKey(b.ctx, ForRun(two.ID), "pair", hashes[1], MakeOpts{}, nil)
	require.NoError(t, err)
	require.Equal(t, OutcomeWaiting, end.Outcome, end.Note)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM populate_run_keys WHERE run_id = $1 AND state = 'waiting'`, two.ID))
	require.Equal(t, []string{hashes[2]}, b.queuedKeys(t, two.ID), "run two took its next key, passing over run one's queued one")
	got, err := b.engine.GetRun(b.ctx, two.ID)
	require.NoError(t, err)
	require.Equal(t, RunRunning, got.State, "run two waits for the key")
	require.EqualValues(t, 4, got.Remaining)

	// Run one's make ends: run two counts the key made elsewhere.
	_, err = b.engine.run(b.ctx, r, nil)
	require.NoError(t, err)
	got, err = b.engine.GetRun(b.ctx, two.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, got.MadeElsewhere)

	// A key held by a make when a run hands out its next keys is passed over.
	r, err = b.engine.reserveKey(b.ctx, conn, tbl, hashes[3], b.engine.runMetadata("test"), false, false)
	require.NoError(t, err)
	r.by = ForRun(one.ID)
	b.drainRun(t)
	_, err = b.engine.run(b.ctx, r, nil)
	require.NoError(t, err)
	b.drainRun(t)

	one, err = b.engine.GetRun(b.ctx, one.ID)
	require.NoError(t, err)
	two, err = b.engine.GetRun(b.ctx, two.ID)
	require.NoError(t, err)
	require.Equal(t, RunDone, one.State)
	require.Equal(t, RunDone, two.State)
	require.Positive(t, one.Made)
	require.Positive(t, two.Made)
	require.EqualValues(t, 4, one.Made+two.Made, "each key counted made in one run")
	require.EqualValues(t, 4, one.Made+one.MadeElsewhere)
	require.EqualValues(t, 4, two.Made+two.MadeElsewhere)
	require.Len(t, b.calls.list(), 4, "each key made once")
}

// TestAWaitingKeyOutlivesTheMakeItWaitedFor: a run whose make found its key reserved by another
// make waits for that make's end. When that make dies instead (its lease runs out), the reclaim
// pass gives the key a make of its own; that make's end counts the key made elsewhere in the
// run, which ends: it does not wait for a make that will never end.
func TestAWaitingKeyOutlivesTheMakeItWaitedFor(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{OrphanTimeout: time.Microsecond}) // a reservation's lease has run out at once
	b.grid(t, 1)
	b.schedule(t, ScheduleOpts{})
	hashes := b.hashes(t, StatusScheduled)
	run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, SkipSchedule: true})
	require.NoError(t, err)

	// Another make reserves the key, and its process is gone: nothing ends the reservation.
	tbl, err := b.engine.tables.Get("pair")
	require.NoError(t, err)
	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	held, err := b.engine.reserveKey(b.ctx, conn, tbl, hashes[0], b.engine.runMetadata("test"), false, false)
	require.NoError(t, err)
	require.NotNil(t, held)

	// The run's make finds the key held and leaves the run waiting for it.
	var args queue.PopulateMakeArgs
	id, ok := b.startNext(t, queue.QueuePopulate, &args)
	require.True(t, ok, "the run's make job")
	end, err := b.engine.MakeKey(b.ctx, AskerOf(args), args.Table, args.KeyHash, MakeOpts{JobID: id}, b.endRiverJob(t, id))
	require.NoError(t, err)
	require.Equal(t, OutcomeWaiting, end.Outcome, end.Note)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM populate_run_keys WHERE run_id = $1 AND state = 'waiting'`, run.ID))

	// The reclaim pass takes the dead make's reservation back and enqueues a make of the key.
	n, err := b.engine.Reclaim(b.ctx)
	require.NoError(t, err)
	require.Positive(t, n)
	b.drainRun(t)

	got, err := b.engine.GetRun(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, RunDone, got.State, "the run ended: %+v", got)
	require.EqualValues(t, 0, got.Made, "%+v", got)
	require.EqualValues(t, 1, got.MadeElsewhere, "the key counted once, by the make that made it: %+v", got)
	require.Len(t, b.calls.list(), 1, "the key made once")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM dst`))
}

// queuedKeys is run's keys queued for River, in its order.
func (b *testBundle) queuedKeys(t *testing.T, run int64) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT key_hash FROM populate_run_keys WHERE run_id = $1 AND state = 'queued' ORDER BY seq`, run)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// TestRunSchedulesTheChangeWaitingForItsInterval: the schedule_jobs call before a run is
// rate-limited by min_scheduling_interval, as DataJoint's is; but rows inserted just before the
// run, whose own schedule job waits out the same interval, are the run's to make: the run
// schedules them anyway, and takes them.
func TestRunSchedulesTheChangeWaitingForItsInterval(t *testing.T) {
	t.Parallel()
	b := scheduledGrid(t, Config{MinSchedulingInterval: time.Hour}, 3)
	b.insertSrc(t, [3]int{4, 1, 4}, [3]int{5, 1, 5})

	quiet, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true})
	require.NoError(t, err)
	require.EqualValues(t, 3, quiet.Total, "no change waits: the interval holds, the run takes the keys scheduled")
	_, err = b.engine.CancelRun(b.ctx, quiet.ID)
	require.NoError(t, err)

	_, err = b.engine.river.Insert(b.ctx, queue.PopulateScheduleArgs{Table: "pair"}, nil)
	require.NoError(t, err)
	run, err := b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true})
	require.NoError(t, err)
	require.EqualValues(t, 5, run.Total, "the inserted rows' schedule waited: the run scheduled them and took them")
}
