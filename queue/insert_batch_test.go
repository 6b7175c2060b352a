package queue

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"
)

type batchInsertArgs struct {
	N int `json:"n"`
}

func (batchInsertArgs) Kind() string { return "batch_insert_test" }

func (batchInsertArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: "batch_insert", MaxAttempts: 7, Priority: 2}
}

// TestBatchInsertMany shows that the insert BatchInsertMany queues is InsertManyTx's: sent in a
// batch with a statement of the caller's own, on the caller's transaction, it leaves the jobs as
// InsertManyTx does; before the client's first InsertManyTx (River's driver has not detected the
// server yet) it queues nothing.
func TestBatchInsertMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := riverTx(t)
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	require.NoError(t, err)

	b := &pgx.Batch{}
	require.ErrorIs(t, BatchInsertMany(ctx, b, client, []river.InsertManyParams{{Args: batchInsertArgs{N: 1}}}), ErrNotBatched)
	require.Zero(t, b.Len())

	_, err = client.InsertManyTx(ctx, tx, []river.InsertManyParams{{Args: batchInsertArgs{N: 1}}})
	require.NoError(t, err)
	require.NoError(t, BatchInsertMany(ctx, b, client, []river.InsertManyParams{{Args: batchInsertArgs{N: 2}}, {Args: batchInsertArgs{N: 3}}}))
	b.Queue(`INSERT INTO outcome VALUES ('batched')`)
	require.NoError(t, tx.SendBatch(ctx, b).Close())

	rows, err := tx.Query(ctx, `SELECT args->>'n', queue, priority, max_attempts, state::text, metadata::text, tags
		FROM river_job WHERE kind = 'batch_insert_test' ORDER BY id`)
	require.NoError(t, err)
	type job struct {
		N, Queue           string
		Priority, Attempts int
		State, Meta        string
		Tags               []string
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.N, &j.Queue, &j.Priority, &j.Attempts, &j.State, &j.Meta, &j.Tags)
	})
	require.NoError(t, err)
	want := job{N: "1", Queue: "batch_insert", Priority: 2, Attempts: 7, State: "available", Meta: "{}", Tags: []string{}}
	require.Equal(t, want, jobs[0], "InsertManyTx's job")
	require.Len(t, jobs, 3)
	for i, j := range jobs[1:] {
		want.N = []string{"2", "3"}[i]
		require.Equal(t, want, j, "a batched job is as InsertManyTx inserts it")
	}
	var outcome string
	require.NoError(t, tx.QueryRow(ctx, `SELECT state FROM outcome`).Scan(&outcome))
	require.Equal(t, "batched", outcome)
}
