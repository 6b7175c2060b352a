package work

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// retried presses River UI's Retry on finished job id in tx and returns the job as it now is.
func retried(t *testing.T, tx pgx.Tx, id int64) *rivertype.JobRow {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	require.NoError(t, err)
	job, err := client.JobRetryTx(context.Background(), tx, id)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateAvailable, job.State)
	return job
}
