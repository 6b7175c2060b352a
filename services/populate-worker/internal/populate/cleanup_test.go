package populate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCleanupJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{KeepSuccess: true})
	b.grid(t, 4)
	b.insertSrc(t, [3]int{5, 1, -5})
	b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true, MaxCalls: 2})
	// Now: keys 1, 2 success; 3, 4 scheduled; 5 error (the failing key sorts last).
	b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true, Restriction: Restriction{"a": []byte("5")}})
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'error'`))

	_, err := b.pool.Exec(b.ctx, `DELETE FROM src WHERE a IN (3, 5); DELETE FROM dst WHERE a = 1`)
	require.NoError(t, err)
	res, err := b.engine.CleanupJobs(b.ctx, "pair", 0)
	require.NoError(t, err)
	require.Equal(t, 3, res.Removed, "success without target row, scheduled and error without key_source key")
	rows, err := b.pool.Query(b.ctx, `SELECT (key->>'a')::int || ':' || status FROM jobs ORDER BY 1`)
	require.NoError(t, err)
	var left []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		left = append(left, s)
	}
	require.Equal(t, []string{"2:success", "4:scheduled"}, left)
}
