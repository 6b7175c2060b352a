package jobgraph

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/testdb"
)

// A claim commits without waiting for the WAL flush, and only the claim: the setting is local to
// the claim's own transaction, so the pooled connection goes back with durable commits.
func TestClaimCommitsAsynchronouslyAlone(t *testing.T) {
	t.Parallel()

	t.Run("OffInsideTheClaimsTransaction", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		b.submit(t, spec("a", "linux"))
		b.take(t, "linux")
		var setting string
		require.NoError(t, b.tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&setting))
		require.Equal(t, "off", setting)
	})

	t.Run("OnAgainForTheConnection", func(t *testing.T) {
		t.Parallel()
		b, ctx := setup(t)
		pool := testdb.NewPool(t, "build_scheduler")
		plan, err := dag.Validate(dag.Submission{Name: "g", Jobs: []dag.JobSpec{spec("a", "linux")}}, dag.DefaultLimits)
		require.NoError(t, err)
		var g int64
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) { g, err = b.graph.SubmitTx(ctx, tx, plan, 2); return err }))
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()

		c, ok, err := ClaimNext(ctx, conn, "linux", "w1", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		var (
			setting string
			state   JobState
		)
		require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&setting))
		require.Equal(t, "on", setting)
		require.NoError(t, conn.QueryRow(ctx, `SELECT state::text FROM job_graph WHERE id = $1 AND group_id = $2`,
			c.JobID, g).Scan(&state))
		require.Equal(t, Running, state, "the claim committed")
	})
}
