package probe

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/queue/queuetest"
	"drover.dev/shared/testdb"
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

// ackCount counts the probe_ack jobs of probe id waiting in miner-sync's queue, seen from tx.
func ackCount(t *testing.T, tx pgx.Tx, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, tx.QueryRow(context.Background(),
		`SELECT count(*) FROM miner_sync.river_job WHERE kind = 'probe_ack' AND (args->>'probe_id')::bigint = $1`, id).Scan(&n))
	return n
}

func TestProbeRetriedInRiverUIIsNotAnsweredTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "scorer")
	logs := &queuetest.UIActionLog{}
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, &Worker{
		Pool: tx, Inserters: inserters(t), Self: queue.Scorer, Logger: logs.Logger(),
	})
	args := queue.ProbeArgs{ProbeID: time.Now().UnixNano(), Origin: queue.MinerSync, SentAt: time.Now()}
	res, err := w.Work(ctx, t, tx, args, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, 1, ackCount(t, tx, args.ProbeID))
	require.Empty(t, logs.UIActions(t), "no button was pressed")

	res, err = w.WorkJob(ctx, t, tx, retried(t, tx, res.Job.ID))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCancelled, res.EventKind, "a retry does not end completed having done nothing")
	require.Contains(t, res.Job.Errors[len(res.Job.Errors)-1].Error, "already arrived")
	require.Contains(t, res.Job.Errors[len(res.Job.Errors)-1].Error, "use POST /v1/probes")
	require.Equal(t, 1, ackCount(t, tx, args.ProbeID), "the probe is answered once")
	actions := logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, "probe", actions[0].Kind)
	require.Equal(t, res.Job.ID, actions[0].JobID)
	require.Equal(t, "retry", actions[0].Action)
	require.Contains(t, actions[0].Did, "nothing run, job cancelled")
}

func TestProbeAckRetriedInRiverUIChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "miner_sync")
	logs := &queuetest.UIActionLog{}
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, &AckWorker{
		Pool: tx, Logger: logs.Logger(),
	})
	p, err := Send(ctx, tx, inserters(t), queue.MinerSync, queue.Scorer)
	require.NoError(t, err)
	res, err := w.Work(ctx, t, tx, queue.ProbeAckArgs{ProbeID: p.ID, Target: queue.Scorer, ArrivedAt: p.SentAt}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	acked, err := Get(ctx, tx, queue.MinerSync, p.ID)
	require.NoError(t, err)
	require.Equal(t, StateAcked, acked.State)

	res, err = w.WorkJob(ctx, t, tx, retried(t, tx, res.Job.ID))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCancelled, res.EventKind)
	require.Contains(t, res.Job.Errors[len(res.Job.Errors)-1].Error, "already acknowledged")
	again, err := Get(ctx, tx, queue.MinerSync, p.ID)
	require.NoError(t, err)
	require.Equal(t, acked.AckedAt, again.AckedAt)
	actions := logs.UIActions(t)
	require.Len(t, actions, 1)
	require.Equal(t, "probe_ack", actions[0].Kind)
	require.Equal(t, "retry", actions[0].Action)
}

func TestProbeJobsHaveTheirOwnTimeout(t *testing.T) {
	t.Parallel()
	require.Equal(t, Timeout, (&Worker{}).Timeout(nil))
	require.Equal(t, Timeout, (&AckWorker{}).Timeout(nil))
	require.Positive(t, Timeout)
}
