package queue

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"
)

type notifyArgs struct {
	Queue string `json:"queue"`
	N     int    `json:"n"`
}

func (notifyArgs) Kind() string { return "notify_test" }

func (a notifyArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: a.Queue} }

type notifyWorker struct {
	river.WorkerDefaults[notifyArgs]
	worked chan int
}

func (w *notifyWorker) Work(_ context.Context, job *river.Job[notifyArgs]) error {
	w.worked <- job.Args.N
	return nil
}

// TestNotifyInsertedWakesTheProducer shows that River's producers hear NotifyInserted, and an
// Announcer's notifications: a job inserted by a quiet inserter just after another (its own
// notification suppressed) waits for the producer's poll, ten seconds here, until the queue is
// announced.
func TestNotifyInsertedWakesTheProducer(t *testing.T) {
	t.Parallel()
	t.Run("NotifyInserted", func(t *testing.T) {
		t.Parallel()
		testWakesTheProducer(t, func(ctx context.Context, pool *pgxpool.Pool, q string) {
			require.NoError(t, notifyInserted(ctx, pool, "public", []string{q}))
		})
	})
	t.Run("Announcer", func(t *testing.T) {
		t.Parallel()
		testWakesTheProducer(t, func(ctx context.Context, pool *pgxpool.Pool, q string) {
			a := &Announcer{db: pool, schema: "public", logger: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1)}
			done := make(chan error)
			runCtx, stop := context.WithCancel(ctx)
			go func() { done <- a.Run(runCtx) }()
			t.Cleanup(func() { stop(); require.NoError(t, <-done) })
			a.Announce() // nothing: no notification, no wake-up
			require.Empty(t, a.wake)
			a.Announce(q, q)
		})
	})
}

// testWakesTheProducer inserts a job whose notification the inserter suppresses, and shows that
// it is worked within two seconds of announce, and not before.
func testWakesTheProducer(t *testing.T, announce func(ctx context.Context, pool *pgxpool.Pool, q string)) {
	t.Helper()
	ctx := t.Context()
	url, err := riverURL()
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q := fmt.Sprintf("notify_%x", rand.Uint32())

	w := &notifyWorker{worked: make(chan int, 20)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: "public", Queues: map[string]river.QueueConfig{q: {MaxWorkers: 1}}, Workers: workers,
		FetchCooldown: time.Millisecond, FetchPollInterval: 10 * time.Second, TestOnly: true,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		_ = client.Stop(context.Background())
		_, _ = client.JobDeleteMany(context.Background(), river.NewJobDeleteManyParams().Queues(q))
	})
	quiet, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: "public", SkipUnknownJobCheck: true, FetchCooldown: time.Second})
	require.NoError(t, err)

	worked := func(within time.Duration) (int, bool) {
		select {
		case n := <-w.worked:
			return n, true
		case <-time.After(within):
			return 0, false
		}
	}
	// An insert notifies once a second; once one is worked the producer is listening.
	for n := 1; ; n++ {
		_, err = quiet.Insert(ctx, notifyArgs{Queue: q, N: n}, nil)
		require.NoError(t, err)
		if _, ok := worked(time.Second); ok {
			break
		}
		require.Less(t, n, 15, "the producer never heard an insert")
	}
	// A notification of that insert may still arrive (the job may have been taken by the
	// producer's first fetch): let it come and go, within the quiet inserter's second.
	time.Sleep(200 * time.Millisecond)
	for len(w.worked) > 0 {
		<-w.worked
	}
	_, err = quiet.Insert(ctx, notifyArgs{Queue: q, N: 100}, nil)
	require.NoError(t, err)
	_, ok := worked(300 * time.Millisecond)
	require.False(t, ok, "the second insert's notification was not suppressed: the test shows nothing")
	announce(ctx, pool, q)
	n, ok := worked(2 * time.Second)
	require.True(t, ok, "the announcement did not wake the producer")
	require.Equal(t, 100, n)
}

// An Announcer with an Interval sends the first announcement at once and holds the ones that come
// within the interval after it, to go out together once it has passed.
func TestAnnouncerCoalescesWithinItsInterval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, err := riverURL()
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	listener, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer listener.Release()
	schema := fmt.Sprintf("announce_%x", rand.Uint32())
	_, err = listener.Exec(ctx, `LISTEN "`+schema+`.river_insert"`)
	require.NoError(t, err)

	a := &Announcer{db: pool, schema: schema, logger: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1), Interval: time.Hour}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })

	next := func(within time.Duration) bool {
		wctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		_, err := listener.Conn().WaitForNotification(wctx)
		return err == nil
	}
	a.Announce("q1")
	require.True(t, next(10*time.Second), "the first announcement goes out at once")
	for range 5 {
		a.Announce("q1", "q2")
	}
	require.False(t, next(time.Second), "the next ones wait for the interval, an hour here")
}
