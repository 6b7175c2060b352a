package populate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// waitingMakes counts the populate_make River jobs that would still run.
const waitingMakes = `SELECT count(*) FROM river_job WHERE kind = 'populate_make'
	AND state IN ('available', 'pending', 'retryable', 'scheduled')`

func TestSettleRiverJobs(t *testing.T) {
	t.Parallel()

	t.Run("PopulateRemovesTheRiverJobsOfItsKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{KeepSuccess: true})
		b.grid(t, 3)
		b.insertSrc(t, [3]int{9, 1, -1})
		b.schedule(t, ScheduleOpts{})
		require.Equal(t, 4, b.count(t, waitingMakes))

		res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		require.Equal(t, 3, res.SuccessCount)
		require.Len(t, res.ErrorList, 1)
		require.Zero(t, b.count(t, waitingMakes), "neither a made nor an errored key runs make again")
		require.Equal(t, 3, b.count(t, `SELECT count(*) FROM dst`))
		require.Equal(t, 3, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'success'`))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'error'`))

		_, err := b.engine.Reschedule(b.ctx, "pair", b.hashes(t, StatusError)[0])
		require.NoError(t, err)
		require.Equal(t, 1, b.count(t, waitingMakes), "reschedule enqueues the errored key's make anew")
	})
	t.Run("OtherKeysKeepTheirRiverJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 5)
		b.schedule(t, ScheduleOpts{})
		res := b.populate(t, Opts{ReserveJobs: true, Restriction: Restriction{"a": []byte(`[1, 2]`)}})
		require.Equal(t, 2, res.SuccessCount)
		require.Equal(t, 3, b.count(t, waitingMakes))
		require.Equal(t, 3, b.count(t, `SELECT count(*) FROM river_job r JOIN jobs j
			ON j.key_hash = r.args->>'key_hash' AND j.status = 'scheduled'`))
	})
	t.Run("ARolledBackFinishLeavesTheRiverJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		b.schedule(t, ScheduleOpts{})
		// Both finishing transactions (success deletes the job, error marks it) fail at commit.
		_, err := b.pool.Exec(b.ctx, `
			CREATE FUNCTION refuse_finish() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF TG_OP = 'DELETE' OR NEW.status = 'error' THEN RAISE EXCEPTION 'refused'; END IF;
				RETURN NULL;
			END $$;
			CREATE CONSTRAINT TRIGGER refuse_finish AFTER UPDATE OR DELETE ON jobs
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_finish()`)
		require.NoError(t, err)

		_, err = b.engine.Populate(b.ctx, "pair", Opts{ReserveJobs: true, SkipSchedule: true})
		require.ErrorContains(t, err, "refused")
		require.Equal(t, 1, b.count(t, waitingMakes), "the River job rolled back with the rows")
		require.Zero(t, b.count(t, `SELECT count(*) FROM dst`))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'reserved'`), "left for the reclaim")
	})
}
