package populate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/problem"
)

func TestIgnore(t *testing.T) {
	t.Parallel()

	// keyHash is the hash of src key (a, 1), as schedule_jobs would compute it.
	keyHash := func(t *testing.T, b *testBundle, a int) string {
		t.Helper()
		var h string
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT md5(jsonb_build_object('a', $1::int, 'b', 1)::text)`, a).Scan(&h))
		return h
	}
	t.Run("AKeyWithNoJobGetsAnIgnoreJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 3)
		job, err := b.engine.Ignore(b.ctx, "pair", keyHash(t, b, 2))
		require.NoError(t, err)
		require.Equal(t, StatusIgnore, job.Status)
		require.JSONEq(t, `{"a": 2, "b": 1}`, string(job.Key))
		require.Equal(t, 2, b.schedule(t, ScheduleOpts{}).Scheduled, "schedule_jobs leaves the ignored key alone")
		require.Equal(t, []string{keyHash(t, b, 2)}, b.hashes(t, StatusIgnore))
		again, err := b.engine.Ignore(b.ctx, "pair", keyHash(t, b, 2))
		require.NoError(t, err, "ignoring twice is harmless")
		require.Equal(t, StatusIgnore, again.Status)
	})
	t.Run("AHashOutsideKeySourceIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		_, err := b.engine.Ignore(b.ctx, "pair", keyHash(t, b, 9))
		require.ErrorIs(t, err, problem.ErrNotFound)
		require.Zero(t, b.count(t, `SELECT count(*) FROM jobs`))
	})
	t.Run("AReservedJobIsAConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 1)
		b.schedule(t, ScheduleOpts{})
		_, err := b.pool.Exec(b.ctx, `UPDATE jobs SET status = 'reserved'`)
		require.NoError(t, err)
		_, err = b.engine.Ignore(b.ctx, "pair", keyHash(t, b, 1))
		require.Equal(t, problem.Conflict, problem.CodeOf(err))
	})
	t.Run("ByKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		b.grid(t, 2)
		b.schedule(t, ScheduleOpts{})
		job, err := b.engine.IgnoreKey(b.ctx, "pair", Restriction{"a": json.RawMessage(`1`), "b": json.RawMessage(`1`)})
		require.NoError(t, err, "a scheduled job")
		require.Equal(t, keyHash(t, b, 1), job.KeyHash)
		require.Equal(t, StatusIgnore, job.Status)
		_, err = b.pool.Exec(b.ctx, `DELETE FROM jobs`)
		require.NoError(t, err)
		job, err = b.engine.IgnoreKey(b.ctx, "pair", Restriction{"b": json.RawMessage(`1`), "a": json.RawMessage(`2`)})
		require.NoError(t, err, "a key with no job")
		require.Equal(t, keyHash(t, b, 2), job.KeyHash)
		require.Equal(t, []string{keyHash(t, b, 2)}, b.hashes(t, StatusIgnore))
		_, err = b.engine.IgnoreKey(b.ctx, "pair", Restriction{"a": json.RawMessage(`3`), "b": json.RawMessage(`1`)})
		require.ErrorIs(t, err, problem.ErrNotFound)
		for _, k := range []Restriction{
			{"a": json.RawMessage(`1`)},
			{"a": json.RawMessage(`[1]`), "b": json.RawMessage(`1`)},
			{"a": json.RawMessage(`"1"`), "b": json.RawMessage(`1`)},
			{"a": json.RawMessage(`1`), "b": json.RawMessage(`1`), "v": json.RawMessage(`1`)},
		} {
			_, err = b.engine.IgnoreKey(b.ctx, "pair", k)
			require.Equal(t, problem.Unprocessable, problem.CodeOf(err), "%v", k)
		}
		require.Len(t, b.hashes(t, StatusIgnore), 1, "refused keys write nothing")
	})
}
