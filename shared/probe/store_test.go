package probe

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
	"drover.dev/shared/testdb"
)

func inserters(t *testing.T) queue.Inserters {
	t.Helper()
	ins, err := queue.NewInserters(nil)
	require.NoError(t, err)
	return ins
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

func TestSendCommitsRowAndJobTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for _, commit := range []bool{false, true} {
		name := map[bool]string{false: "RolledBack", true: "Committed"}[commit]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := testdb.NewPool(t, "miner_sync")
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			_, err = Send(ctx, tx, inserters(t), queue.MinerSync, queue.Scorer)
			require.NoError(t, err)
			rivertest.RequireInsertedTx[*riverpgxv5.Driver](ctx, t, tx, &queue.ProbeArgs{},
				&rivertest.RequireInsertedOpts{Queue: queue.QueueProbe, Schema: "scorer"})
			if commit {
				require.NoError(t, tx.Commit(ctx))
			} else {
				require.NoError(t, tx.Rollback(ctx))
			}
			want := map[bool]int{false: 0, true: 1}[commit]
			require.Equal(t, want, count(t, pool, "SELECT count(*) FROM miner_sync.probes"))
			require.Equal(t, want, count(t, pool, "SELECT count(*) FROM scorer.river_job WHERE kind = 'probe'"))
			for _, other := range []string{"miner_sync", "batch_runner", "build_scheduler", "populate_worker"} {
				require.Zero(t, count(t, pool, "SELECT count(*) FROM "+other+".river_job"), "job leaked into %s", other)
			}
		})
	}
}

func TestRecordArrivalKeepsTheFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "scorer")

	args := queue.ProbeArgs{ProbeID: 9, Origin: queue.BuildScheduler}
	first, stored, err := recordArrival(ctx, tx, args)
	require.NoError(t, err)
	require.True(t, stored)
	again, stored, err := recordArrival(ctx, tx, args)
	require.NoError(t, err)
	require.False(t, stored)
	require.Equal(t, first, again)
}

func TestAckCompletesProbeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t, "miner_sync")

	p, err := Send(ctx, tx, inserters(t), queue.MinerSync, queue.Scorer)
	require.NoError(t, err)
	got, err := Get(ctx, tx, queue.MinerSync, p.ID)
	require.NoError(t, err)
	require.Equal(t, StateSent, got.State)
	require.Nil(t, got.RoundTripMS)

	ack := queue.ProbeAckArgs{ProbeID: p.ID, Target: queue.Scorer, ArrivedAt: p.SentAt.Add(3_000_000)}
	acked, err := recordAck(ctx, tx, ack)
	require.NoError(t, err)
	require.True(t, acked)
	first, err := Get(ctx, tx, queue.MinerSync, p.ID)
	require.NoError(t, err)
	require.Equal(t, StateAcked, first.State)
	require.InDelta(t, 3.0, *first.LatencyMS, 0.001)

	acked, err = recordAck(ctx, tx, ack)
	require.NoError(t, err)
	require.False(t, acked)
	second, err := Get(ctx, tx, queue.MinerSync, p.ID)
	require.NoError(t, err)
	require.Equal(t, first.AckedAt, second.AckedAt, "a repeated ack changes nothing")
}

func TestGetUnknownProbeIsNotFound(t *testing.T) {
	t.Parallel()

	_, err := Get(context.Background(), testdb.Tx(t, "scorer"), queue.Scorer, 12345)
	require.ErrorIs(t, err, problem.ErrNotFound)
}
