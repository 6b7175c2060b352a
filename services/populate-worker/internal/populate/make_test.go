package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"drover.dev/shared/postgres"
)

// failing is a pair table whose make writes a side effect and then fails with err.
func failing(err error) Table {
	return Table{
		Name: "pair", Target: "dst", PrimaryKey: []string{"a", "b"}, KeySource: "SELECT a, b FROM src",
		Make: func(ctx context.Context, tx pgx.Tx, key Key) ([]Row, error) {
			if _, e := tx.Exec(ctx, `INSERT INTO side_effects VALUES ('written by a failing make')`); e != nil {
				return nil, e
			}
			return nil, err
		},
	}
}

func (b *testBundle) onlyJob(t *testing.T) Job {
	t.Helper()
	jobs, err := JobList(b.ctx, b.pool, JobListParams{Table: "pair", Limit: 10})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

func TestMakeErrors(t *testing.T) {
	t.Parallel()

	t.Run("LongMessageTruncatedAndHugeStackIntact", func(t *testing.T) {
		t.Parallel()
		stack := strings.Repeat("frame at make.go:42\n", 4498)[:89_942]
		b := setup(t, Config{}, failing(&MakeError{Class: "ValueError", Message: strings.Repeat("m", 2135), Stack: stack}))
		b.grid(t, 1)
		res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		require.Len(t, res.ErrorList, 1)
		job := b.onlyJob(t)
		require.Equal(t, StatusError, job.Status)
		require.Equal(t, 2047, utf8.RuneCountInString(*job.ErrorMessage))
		require.True(t, strings.HasPrefix(*job.ErrorMessage, "ValueError: mmm"))
		require.True(t, strings.HasSuffix(*job.ErrorMessage, "...truncated"))
		require.Equal(t, stack, *job.ErrorStack)
		require.NotNil(t, job.RunDuration)
		require.Zero(t, b.count(t, `SELECT count(*) FROM side_effects`), "make's writes are rolled back")
	})
	t.Run("ShortMessageUnchanged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{}, failing(errors.New("plain failure")))
		b.grid(t, 1)
		b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		require.Equal(t, "errors.errorString: plain failure", *b.onlyJob(t).ErrorMessage)
	})
	t.Run("PanicIsRecorded", func(t *testing.T) {
		t.Parallel()
		tbl := failing(nil)
		tbl.Make = func(context.Context, pgx.Tx, Key) ([]Row, error) { panic("index out of range") }
		b := setup(t, Config{}, tbl)
		b.grid(t, 1)
		b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		job := b.onlyJob(t)
		require.Equal(t, "panic: index out of range", *job.ErrorMessage)
		require.Contains(t, *job.ErrorStack, "goroutine")
	})
}

// blocking is a pair table whose make waits for its context to end.
func blocking(started chan<- struct{}) Table {
	tbl := failing(nil)
	tbl.Make = func(ctx context.Context, tx pgx.Tx, key Key) ([]Row, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return tbl
}

func TestInterruptedMakeIsRecorded(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name     string
		stopping bool
		want     string
	}{
		{"Interrupt", false, "KeyboardInterrupt: make interrupted: context canceled"},
		{"SIGTERM", true, "SystemExit: SIGTERM received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			b := setup(t, Config{}, blocking(started))
			b.grid(t, 1)
			b.schedule(t, ScheduleOpts{})
			if tc.stopping {
				b.engine.SetStopping()
			}
			ctx, cancel := context.WithCancel(b.ctx)
			go func() { <-started; cancel() }()
			end, err := b.engine.MakeKey(ctx, Background, "pair", b.hashes(t, StatusScheduled)[0], MakeOpts{}, nil)
			require.NoError(t, err)
			require.Equal(t, OutcomeError, end.Outcome)
			job := b.onlyJob(t)
			require.Equal(t, StatusError, job.Status)
			require.Equal(t, tc.want, *job.ErrorMessage)
		})
	}
}

func TestThreePartMake(t *testing.T) {
	t.Parallel()

	three := func(b **testBundle, changeInput bool) Table {
		return Table{
			Name: "pair", Target: "dst", PrimaryKey: []string{"a", "b"}, KeySource: "SELECT a, b FROM src",
			Fetch: func(ctx context.Context, db postgres.DBTX, key Key) (any, error) {
				a, _ := key.Int64("a")
				var v int
				err := db.QueryRow(ctx, `SELECT v FROM src WHERE a = $1`, a).Scan(&v)
				return v, err
			},
			Compute: func(ctx context.Context, key Key, fetched any) ([]Row, error) {
				if changeInput { // another writer updates the input while we compute
					if _, err := (*b).pool.Exec(ctx, `UPDATE src SET v = v + 100`); err != nil {
						return nil, err
					}
				}
				return []Row{{"doubled": 2 * fetched.(int)}}, nil
			},
		}
	}
	t.Run("InsertsWhenInputUnchanged", func(t *testing.T) {
		t.Parallel()
		var b *testBundle
		b = setup(t, Config{}, three(&b, false))
		b.grid(t, 2)
		require.Equal(t, 2, b.populate(t, Opts{ReserveJobs: true}).SuccessCount)
		require.Equal(t, 6, b.count(t, `SELECT sum(doubled) FROM dst`))
	})
	t.Run("AbortsWhenInputChanged", func(t *testing.T) {
		t.Parallel()
		var b *testBundle
		b = setup(t, Config{}, three(&b, true))
		b.grid(t, 1)
		res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
		require.Zero(t, res.SuccessCount)
		require.Contains(t, *b.onlyJob(t).ErrorMessage, "input changed during make")
		require.Zero(t, b.count(t, `SELECT count(*) FROM dst`))
	})
}

func TestHTTPFunctionMake(t *testing.T) {
	t.Parallel()

	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req FunctionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode the function request: %v", err) // not require: this is the server's goroutine
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a, _ := req.Key.Int64("a")
		if a == 2 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(FunctionResponse{Error: &MakeError{Class: "ZeroDivisionError", Message: "division by zero", Stack: "Traceback (most recent call last):"}})
			return
		}
		_ = json.NewEncoder(w).Encode(FunctionResponse{Rows: []Row{{"a": a, "doubled": 2 * a}}})
	}))
	t.Cleanup(fn.Close)
	b := setup(t, Config{KeepSuccess: true}, Table{
		Name: "pair", Target: "dst", PrimaryKey: []string{"a", "b"}, KeySource: "SELECT a, b FROM src", FunctionURL: fn.URL,
	})
	b.grid(t, 3)
	res := b.populate(t, Opts{ReserveJobs: true, SuppressErrors: true})
	require.Equal(t, 2, res.SuccessCount)
	require.Equal(t, "ZeroDivisionError: division by zero", res.ErrorList[0].ErrorMessage)
	require.Equal(t, 8, b.count(t, `SELECT sum(doubled) FROM dst`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'success' AND run_duration >= 0`), "kept as success")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM jobs WHERE error_stack LIKE 'Traceback%'`))
}

// TestFailingMakesHoldingEveryConnectionAreRecorded fails as many makes at once as the pool has
// connections: each records its error on its own connection instead of waiting for another.
func TestFailingMakesHoldingEveryConnectionAreRecorded(t *testing.T) {
	t.Parallel()
	const conns = 2
	var arrived sync.WaitGroup
	arrived.Add(conns)
	tbl := failing(nil)
	tbl.Make = func(ctx context.Context, tx pgx.Tx, key Key) ([]Row, error) {
		arrived.Done()
		arrived.Wait() // every connection is held by a make now
		return nil, &MakeError{Class: "ValueError", Message: "bad key"}
	}
	b := setup(t, Config{}, tbl)
	b.grid(t, conns)
	b.schedule(t, ScheduleOpts{})
	cfg := b.pool.Config()
	cfg.MaxConns = conns
	small, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	defer small.Close()
	engine := NewEngine(small, b.engine.river, b.engine.tables, testConfig(Config{}))
	var g errgroup.Group
	for _, h := range b.hashes(t, StatusScheduled) {
		g.Go(func() error {
			end, err := engine.MakeKey(b.ctx, Background, "pair", h, MakeOpts{}, nil)
			if err == nil && end.Outcome != OutcomeError {
				return fmt.Errorf("make ended %s", end)
			}
			return err
		})
	}
	require.NoError(t, g.Wait())
	require.Equal(t, conns, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'error' AND error_message = 'ValueError: bad key'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM jobs WHERE status = 'reserved'`))
}
