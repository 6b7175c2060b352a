package logstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/fakes3"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/testdb"
)

// The tests in this file hold every store to the same contract, the one the log API and the
// build worker rely on.

type testBundle struct {
	store  logstore.Store
	newJob func() int64 // a job to log to, with no chunks yet
}

// eachStore runs test once per store, each on a fresh, empty store.
func eachStore(t *testing.T, test func(t *testing.T, b testBundle)) {
	t.Helper()
	setups := map[string]func(t *testing.T) testBundle{"Postgres": setupPostgres, "S3": setupS3}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, setup(t))
		})
	}
}

func setupPostgres(t *testing.T) testBundle {
	t.Helper()
	tx := testdb.Tx(t, "build_scheduler")
	return testBundle{store: logstore.Postgres{DB: tx}, newJob: func() int64 {
		var id int64
		require.NoError(t, tx.QueryRow(context.Background(), `
			WITH g AS (INSERT INTO groups (name, remaining) VALUES ('logs', 1) RETURNING id)
			INSERT INTO job_graph (group_id, name, target, state, command, timeout_ms, waiting_on_count, max_attempts)
			SELECT id, 'job', 'x86_64-linux', 'running', '{true}', 60000, 0, 3 FROM g RETURNING id`).Scan(&id))
		return id
	}}
}

func setupS3(t *testing.T) testBundle {
	t.Helper()
	var mu sync.Mutex
	id := int64(4)
	return testBundle{store: newS3(t, fakes3.Start(t), "logs"), newJob: func() int64 {
		// 4, 42, 422, …: each job's folder name starts with the one before it, which a listing
		// by prefix must not confuse.
		mu.Lock()
		defer mu.Unlock()
		id = id*10 + 2
		return id / 10
	}}
}

// newS3 returns an S3 store on srv's bucket under prefix.
func newS3(t *testing.T, srv fakes3.Server, prefix string) logstore.Store {
	t.Helper()
	store, err := logstore.Open(logstore.Config{
		LogStore: "s3", LogS3Endpoint: srv.URL, LogS3Region: srv.Region, LogS3Bucket: srv.Bucket, LogS3Prefix: prefix,
		LogS3AccessKey: srv.AccessKey, LogS3SecretKey: srv.SecretKey, LogS3PathStyle: true,
	}, nil)
	require.NoError(t, err)
	return store
}

// appendChunks appends n chunks to job, alternating stdout and stderr, and returns what was
// appended in order.
func appendChunks(t *testing.T, store logstore.Store, job int64, attempt, n int) []logstore.Chunk {
	t.Helper()
	var out []logstore.Chunk
	for i := range n {
		c := logstore.Chunk{Attempt: attempt, Stream: []string{"stdout", "stderr"}[i%2], Data: fmt.Appendf(nil, "attempt %d chunk %d\n", attempt, i)}
		require.NoError(t, store.Append(context.Background(), job, c.Attempt, c.Stream, c.Data))
		out = append(out, c)
	}
	return out
}

// began is before any chunk of these tests was appended.
var began = time.Now()

// requireSame checks that got holds the chunks of want in order, with increasing sequence
// numbers and times within this run.
func requireSame(t *testing.T, want, got []logstore.Chunk) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Attempt, got[i].Attempt, "chunk %d", i)
		require.Equal(t, want[i].Stream, got[i].Stream, "chunk %d", i)
		require.Equal(t, string(want[i].Data), string(got[i].Data), "chunk %d", i)
		require.WithinRange(t, got[i].CreatedAt, began.Truncate(time.Microsecond), time.Now(), "chunk %d made by this run", i)
		if i > 0 {
			require.Greater(t, got[i].Seq, got[i-1].Seq, "chunk %d", i)
		}
	}
}

// requireLog checks that job's whole log is want.
func requireLog(t *testing.T, store logstore.Store, job int64, want []logstore.Chunk) {
	t.Helper()
	got, err := store.Read(context.Background(), job, 0, 100)
	require.NoError(t, err)
	requireSame(t, want, got)
}

func TestStoreReadsChunksInAppendOrder(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, b testBundle) {
		job := b.newJob()
		requireLog(t, b.store, job, appendChunks(t, b.store, job, 1, 25))
	})
}

func TestStoreReadsAfterASequenceNumber(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, b testBundle) {
		job := b.newJob()
		want := appendChunks(t, b.store, job, 1, 12)
		all, err := b.store.Read(context.Background(), job, 0, 100)
		require.NoError(t, err)

		got, err := b.store.Read(context.Background(), job, all[4].Seq, 100)
		require.NoError(t, err)
		requireSame(t, want[5:], got)
		got, err = b.store.Read(context.Background(), job, all[11].Seq, 100)
		require.NoError(t, err)
		require.Empty(t, got, "nothing after the last chunk")
	})
}

func TestStoreReadPagesByLimit(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, b testBundle) {
		job := b.newJob()
		want := appendChunks(t, b.store, job, 1, 17)
		var got []logstore.Chunk
		var after int64
		for range 10 {
			page, err := b.store.Read(context.Background(), job, after, 5)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 5)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		requireSame(t, want, got)
	})
}

func TestStoreKeepsAttemptsAndRetriesInOrder(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, b testBundle) {
		job := b.newJob()
		// Three attempts, then a retry of the group, which numbers attempts from 1 again.
		var want []logstore.Chunk
		for _, attempt := range []int{1, 2, 3, 1} {
			want = append(want, appendChunks(t, b.store, job, attempt, 2)...)
		}
		requireLog(t, b.store, job, want)
	})
}

func TestStoreKeepsJobsApart(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, b testBundle) {
		first, second := b.newJob(), b.newJob()
		wantFirst := appendChunks(t, b.store, first, 1, 2)
		wantSecond := appendChunks(t, b.store, second, 1, 3)
		requireLog(t, b.store, first, wantFirst)
		requireLog(t, b.store, second, wantSecond)
		requireLog(t, b.store, b.newJob(), nil)
	})
}
