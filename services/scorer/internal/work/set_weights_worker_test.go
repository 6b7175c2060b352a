package work

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
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
	"drover.dev/services/scorer/internal/pylon"
	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/testdb"
)

// pylonStub fakes Pylon (external HTTP): neurons at a block it is told, weights recorded.
type pylonStub struct {
	mu            sync.Mutex
	block         int64
	uids          map[string]int
	lastUpdate    int64 // every neuron's last_update
	neuronsStatus int   // 200 when zero
	weightsStatus int   // 200 when zero
	puts          []map[string]float64
}

func (p *pylonStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/subnet/12/block/latest/neurons":
		if p.neuronsStatus != 0 {
			w.WriteHeader(p.neuronsStatus)
			return
		}
		neurons := map[string]any{"broken": "x"}
		for hk, uid := range p.uids {
			neurons[hk] = map[string]any{"uid": uid, "hotkey": hk, "last_update": p.lastUpdate}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"block": map[string]any{"number": p.block, "hash": hashOf(p.block)}, "neurons": neurons})
	case r.Method == http.MethodPut && r.URL.Path == "/api/v1/identity/validator/subnet/12/weights":
		var body struct {
			Weights map[string]float64 `json:"weights"`
		}
		if json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if p.weightsStatus != 0 {
			w.WriteHeader(p.weightsStatus)
			_, _ = w.Write([]byte(`{"detail":"no validator permit"}`))
			return
		}
		p.puts = append(p.puts, body.Weights)
		_, _ = w.Write([]byte(`{"detail":"weights update scheduled","count":2}`))
	default:
		http.NotFound(w, r)
	}
}

func (p *pylonStub) set(f func(*pylonStub)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func hashOf(block int64) string { return fmt.Sprintf("0x%064x", block) }

type weightsBundle struct {
	tx      pgx.Tx
	stub    *pylonStub
	scorer  *rivertest.Worker[queue.ScoreBatchArgs, pgx.Tx]
	setter  *rivertest.Worker[queue.SetWeightsArgs, pgx.Tx]
	weights *SetWeightsWorker
}

// signerTx is a transaction on a database of the test's own: the signer's advisory lock is
// per database, so on the shared test database parallel tests would hold it for each other
// and a job would snooze instead of sending.
func signerTx(t *testing.T) pgx.Tx {
	t.Helper()
	tx, err := testdb.NewPool(t, "scorer").Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func setupWeights(t *testing.T) *weightsBundle {
	t.Helper()
	tx := signerTx(t)
	stub := &pylonStub{block: 1000, uids: map[string]int{"A": 3, "B": 7}}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	logger := slog.New(slog.DiscardHandler)
	setter := &SetWeightsWorker{DB: tx, Logger: logger, RateLimitBlocks: 100, Pylon: &pylon.Client{
		BaseURL: srv.URL, Identity: "validator", Token: "tok", Netuid: 12, Timeout: time.Second, MaxBytes: 1 << 16,
	}}
	scorer := &ScoreBatchWorker{DB: tx, Params: scoring.DefaultParams(), Logger: logger, SetWeights: true}
	return &weightsBundle{
		tx: tx, stub: stub, weights: setter,
		scorer: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, scorer),
		setter: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, setter),
	}
}

// score scores a batch in which A, B and C (which Pylon does not list) all earn a weight.
func (b *weightsBundle) score(t *testing.T) {
	t.Helper()
	_, err := b.scorer.Work(context.Background(), t, b.tx, args(1, true,
		queue.MinerClassResult{Hotkey: "A", ExecutorClass: llm, Executors: 2, Completed: 2},
		queue.MinerClassResult{Hotkey: "B", ExecutorClass: llm, Executors: 1, Completed: 1},
		queue.MinerClassResult{Hotkey: "C", ExecutorClass: llm, Executors: 1, Completed: 1}), nil)
	require.NoError(t, err)
}

// set works a set_weights job and returns the latest submission (nil when none was recorded).
func (b *weightsBundle) set(t *testing.T) *store.Submission {
	t.Helper()
	res, err := b.setter.Work(context.Background(), t, b.tx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	subs, err := store.SubmissionList(context.Background(), b.tx, 0, 1)
	require.NoError(t, err)
	if len(subs) == 0 {
		return nil
	}
	return &subs[0]
}

func TestSetWeightsWorker(t *testing.T) {
	t.Parallel()

	t.Run("ScoringEnqueuesItInItsTransaction", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.score(t)
		rivertest.RequireInsertedTx[*riverpgxv5.Driver](context.Background(), t, b.tx, &queue.SetWeightsArgs{}, nil)
	})

	t.Run("NoWeightsYetRecordsNothing", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		require.Nil(t, b.set(t))
		require.Empty(t, b.stub.puts)
	})

	t.Run("SendsRegisteredHotkeysWithTheirUIDs", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.score(t)
		sub := b.set(t)
		require.Equal(t, store.SubmissionSent, sub.Outcome, "error: %v", sub.Error)
		require.Equal(t, int64(1000), *sub.Block)
		require.Equal(t, hashOf(1000), *sub.BlockHash)
		require.Equal(t, int64(1), *sub.BatchID)
		require.Equal(t, 1, sub.Unregistered, "C is not registered")
		require.Equal(t, 200, *sub.PylonStatus)
		require.Contains(t, *sub.PylonAnswer, "scheduled")
		require.Len(t, sub.Weights, 2)
		require.Equal(t, store.SentWeight{UID: 3, Hotkey: "A", Weight: sub.Weights[0].Weight}, sub.Weights[0])
		require.Equal(t, 7, sub.Weights[1].UID)
		require.Len(t, b.stub.puts, 1)
		require.Equal(t, map[string]float64{"A": sub.Weights[0].Weight, "B": sub.Weights[1].Weight}, b.stub.puts[0])
	})

	t.Run("RateLimitHonoured", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.score(t)
		require.Equal(t, store.SubmissionSent, b.set(t).Outcome)
		b.stub.set(func(p *pylonStub) { p.block = 1099 })
		sub := b.set(t)
		require.Equal(t, store.SubmissionSkipped, sub.Outcome)
		require.Contains(t, *sub.Error, "the next may be set from block 1100")
		b.stub.set(func(p *pylonStub) { p.block = 1100 })
		require.Equal(t, store.SubmissionSent, b.set(t).Outcome)
		require.Len(t, b.stub.puts, 2)
	})

	t.Run("PylonFailuresRecorded", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.score(t)
		b.stub.set(func(p *pylonStub) { p.neuronsStatus = http.StatusServiceUnavailable })
		sub := b.set(t)
		require.Equal(t, store.SubmissionFailed, sub.Outcome)
		require.Contains(t, *sub.Error, "status 503")
		require.Nil(t, sub.Block)

		b.stub.set(func(p *pylonStub) { p.neuronsStatus, p.weightsStatus = 0, http.StatusUnprocessableEntity })
		sub = b.set(t)
		require.Equal(t, store.SubmissionFailed, sub.Outcome)
		require.Equal(t, 422, *sub.PylonStatus)
		require.Contains(t, *sub.PylonAnswer, "no validator permit")

		b.stub.set(func(p *pylonStub) { p.weightsStatus = 0 })
		require.Equal(t, store.SubmissionSent, b.set(t).Outcome, "a failed attempt does not count for the rate limit")
	})

	t.Run("ConfirmedByTheValidatorsLastUpdate", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.weights.Validator = "V"
		b.stub.set(func(p *pylonStub) { p.uids["V"], p.lastUpdate = 9, 900 })
		b.score(t)
		sent := b.set(t)
		require.Equal(t, store.SubmissionSent, sent.Outcome)
		require.Nil(t, sent.ConfirmedBlock, "last_update 900 is older than the weights")

		b.stub.set(func(p *pylonStub) { p.block, p.lastUpdate = 1010, 1003 })
		skipped := b.set(t)
		require.Equal(t, store.SubmissionSkipped, skipped.Outcome, "rate limited")
		subs, err := store.SubmissionList(context.Background(), b.tx, 0, 2)
		require.NoError(t, err)
		require.Equal(t, sent.ID, subs[1].ID)
		require.Equal(t, int64(1003), *subs[1].ConfirmedBlock)
		require.Nil(t, subs[0].ConfirmedBlock, "only weights sent are confirmed")
	})

	t.Run("NobodyRegisteredIsSkipped", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		b.score(t)
		b.stub.set(func(p *pylonStub) { p.uids = map[string]int{"Z": 1} })
		sub := b.set(t)
		require.Equal(t, store.SubmissionSkipped, sub.Outcome)
		require.Contains(t, *sub.Error, "none of the 3 weighted hotkeys is registered at block 1000")
		require.Empty(t, b.stub.puts)
	})
}

// TestSetWeightsRetriedInRiverUI presses River UI's Retry on a finished set_weights job: it
// makes a new attempt, as the periodic job would, and with no weights to send it ends cancelled
// instead of completed having done nothing.
func TestSetWeightsRetriedInRiverUI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MakesANewAttempt", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		logs := &queuetest.UIActionLog{}
		b.weights.Logger = logs.Logger()
		b.score(t)
		res, err := b.setter.Work(ctx, t, b.tx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		b.stub.set(func(p *pylonStub) { p.block = 1100 })

		again, err := b.setter.WorkJob(ctx, t, b.tx, retried(t, b.tx, res.Job.ID))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, again.EventKind)
		subs, err := store.SubmissionList(ctx, b.tx, 0, 10)
		require.NoError(t, err)
		require.Len(t, subs, 2)
		require.Equal(t, store.SubmissionSent, subs[0].Outcome)
		require.Equal(t, int64(1100), *subs[0].Block)
		require.Len(t, b.stub.puts, 2, "the weights went to Pylon again")
		require.Equal(t, []queuetest.UIAction{{Kind: "set_weights", JobID: res.Job.ID, Action: "retry", Did: "made a new attempt: sent"}}, logs.UIActions(t))
	})

	t.Run("NothingToSendEndsCancelled", func(t *testing.T) {
		t.Parallel()
		b := setupWeights(t)
		logs := &queuetest.UIActionLog{}
		b.weights.Logger = logs.Logger()
		res, err := b.setter.Work(ctx, t, b.tx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the periodic job has nothing to do yet")

		again, err := b.setter.WorkJob(ctx, t, b.tx, retried(t, b.tx, res.Job.ID))
		require.NoError(t, err)
		require.Equal(t, rivertype.JobStateCancelled, again.Job.State)
		require.Equal(t, errNoWeights.Error(), again.Job.Errors[0].Error)
		subs, err := store.SubmissionList(ctx, b.tx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, subs)
		actions := logs.UIActions(t)
		require.Len(t, actions, 1)
		require.Equal(t, "retry", actions[0].Action)
		require.Contains(t, actions[0].Did, "nothing sent, job cancelled")
	})
}

// TestSetWeightsOneSignerAtATime holds the signer lock in another transaction, as another
// replica's signer would: the job waits (snoozed) and sends nothing.
func TestSetWeightsOneSignerAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t, "scorer")
	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Rollback(ctx) })
	locked, err := store.SignerTryLock(ctx, holder)
	require.NoError(t, err)
	require.True(t, locked)

	jobTx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = jobTx.Rollback(ctx) })
	stub := &pylonStub{}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	w := &SetWeightsWorker{DB: pool, Logger: slog.New(slog.DiscardHandler), Pylon: &pylon.Client{BaseURL: srv.URL, Timeout: time.Second}}
	res, err := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w).Work(ctx, t, jobTx, queue.SetWeightsArgs{Reason: "periodic"}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)

	require.NoError(t, holder.Rollback(ctx))
	again, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Rollback(ctx) })
	locked, err = store.SignerTryLock(ctx, again)
	require.NoError(t, err)
	require.True(t, locked, "the lock ends with the transaction that took it")
}
