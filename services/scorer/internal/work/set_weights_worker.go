package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"drover.dev/queue"
	"drover.dev/services/scorer/internal/direct"
	"drover.dev/services/scorer/internal/pylon"
	"drover.dev/services/scorer/internal/store"
	"drover.dev/shared/problem"
)

// SignerBusySnooze is how long a set_weights job waits when another replica holds the signer
// lock; by then that replica has sent the weights and the rate limit skips this attempt.
const SignerBusySnooze = 30 * time.Second

// SetWeightsWorker works set_weights: it maps the latest weights' hotkeys to uids at a recent
// block and asks Pylon to set them, or (Direct, without Pylon) signs set_weights and submits it
// to a subtensor node itself, recording the attempt. One signer at a time: the
// attempt runs under an advisory lock held by its transaction, which also records the attempt
// and completes the job. A failed attempt is recorded and the job completes; the next periodic
// job tries again (retrying at once would only hit the same outage). River UI's Retry on a
// finished job makes a new attempt, as the periodic job would; with no weights to send yet it
// ends cancelled instead of completing with nothing done. Its Cancel on a running job records
// the attempt failed.
type SetWeightsWorker struct {
	river.WorkerDefaults[queue.SetWeightsArgs]
	DB    Beginner
	Pylon *pylon.Client
	// Direct signs set_weights and submits it to a subtensor node; used when Pylon is nil.
	Direct *direct.Client
	// RateLimitBlocks is the subnet's weights_set_rate_limit: no weights are sent until that many
	// blocks have passed since the last weights sent.
	RateLimitBlocks int64
	Logger          *slog.Logger
	Metrics         *Metrics // nil counts nothing
	// Validator is the hotkey the weights are set for: its last_update in each metagraph read
	// confirms the weights sent before it. No confirmation when empty.
	Validator string
}

// Timeout covers the two calls to Pylon, or the read and the submission to the node.
func (w *SetWeightsWorker) Timeout(*river.Job[queue.SetWeightsArgs]) time.Duration {
	if w.Pylon == nil {
		return 2*w.Direct.Timeout + 10*time.Second
	}
	return 2*w.Pylon.Timeout + 10*time.Second
}

// errNoWeights ends a set_weights job retried in River UI when there is nothing to send.
var errNoWeights = errors.New("no weights to send: no scored batch gives any miner a weight yet (GET /v1/weights says so); the weights are sent after the scoring that gives some, nothing to retry")

// Work makes one attempt, unless another signer is at work (snoozed) or there are no weights yet.
func (w *SetWeightsWorker) Work(ctx context.Context, job *river.Job[queue.SetWeightsArgs]) error {
	retried := queue.RetriedInUI(job.JobRow)
	var sub *store.Submission
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		locked, err := store.SignerTryLock(ctx, tx)
		if err != nil {
			return err
		}
		if !locked {
			w.Logger.InfoContext(ctx, "another weight signer is at work; waiting", "job_id", job.ID)
			return river.JobSnooze(SignerBusySnooze)
		}
		if sub, err = w.attempt(ctx, tx, job.Args.Reason); err != nil {
			return err
		}
		if sub == nil && retried {
			return queue.JobCancelTx(ctx, tx, job, errNoWeights)
		}
		if sub != nil {
			if _, err := store.SubmissionInsert(ctx, tx, *sub); err != nil {
				return err
			}
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	switch {
	case err != nil && queue.CancelledRemotely(ctx):
		return w.cancelled(ctx, job, err)
	case err != nil:
		return err
	}
	if sub != nil {
		w.log(ctx, *sub)
		w.Metrics.submitted(sub.Outcome)
	}
	if retried {
		did := "nothing sent, job cancelled: " + errNoWeights.Error()
		if sub != nil {
			did = "made a new attempt: " + sub.Outcome
		}
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, did)
	}
	return nil
}

// cancelled records the attempt that River UI's Cancel stopped as failed, and ends the job
// cancelled, in one transaction on a context that outlives the job's. Whether Pylon or the node
// had the weights by then is not known: the next attempt's confirmation (the validator's
// last_update) tells.
func (w *SetWeightsWorker) cancelled(ctx context.Context, job *river.Job[queue.SetWeightsArgs], stopped error) error {
	cause := fmt.Errorf("%s; whether the weights reached the chain is unknown: %w", queue.CancelledInUI, stopped)
	sub := store.Submission{Reason: job.Args.Reason, Outcome: store.SubmissionFailed, Via: store.ViaPylon}
	if w.Pylon == nil {
		sub.Via = store.ViaSubtensor
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if _, err := store.SubmissionInsert(ctx, tx, *sub.Because(cause)); err != nil {
			return err
		}
		return queue.JobCancelTx(ctx, tx, job, cause)
	})
	did := "stopped the attempt: recorded failed, job cancelled"
	if err != nil {
		did = fmt.Sprintf("stopped the attempt; recording it failed (%v), River cancels the job", err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, did)
	if err != nil {
		return stopped
	}
	w.Metrics.submitted(sub.Outcome)
	return nil
}

// attempt builds the submission to record; nil when there are no weights to send yet. Only a
// database error is returned.
func (w *SetWeightsWorker) attempt(ctx context.Context, tx pgx.Tx, reason string) (*store.Submission, error) {
	weights, err := store.WeightsLatest(ctx, tx)
	if errors.Is(err, problem.ErrNotFound) {
		w.Logger.InfoContext(ctx, "no weights to set yet")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sub := &store.Submission{Reason: reason, BatchID: &weights.BatchID, Outcome: store.SubmissionFailed, Via: store.ViaPylon}
	if w.Pylon == nil {
		sub.Via = store.ViaSubtensor
		return w.attemptDirect(ctx, tx, sub, weights)
	}
	neurons, err := w.Pylon.Neurons(ctx)
	if err != nil {
		return sub.Because(err), nil
	}
	sub.Block, sub.BlockHash = &neurons.Block, &neurons.Hash
	if err := w.confirm(ctx, tx, neurons); err != nil {
		return nil, err
	}
	last, err := store.SubmissionLastSentBlock(ctx, tx)
	if err != nil {
		return nil, err
	}
	if last > 0 && neurons.Block < last+w.RateLimitBlocks {
		sub.Outcome = store.SubmissionSkipped
		return sub.Because(fmt.Errorf("rate limit: weights were set at block %d, the next may be set from block %d", last, last+w.RateLimitBlocks)), nil
	}
	send := mapToUIDs(sub, weights, neurons)
	if len(send) == 0 {
		sub.Outcome = store.SubmissionSkipped
		return sub.Because(fmt.Errorf("none of the %d weighted hotkeys is registered at block %d", len(weights.Weights), neurons.Block)), nil
	}
	answer, err := w.Pylon.SetWeights(ctx, send)
	sub.PylonStatus, sub.PylonAnswer = &answer.Status, &answer.Body
	switch {
	case err != nil:
		return sub.Because(err), nil
	case answer.Status < 200 || answer.Status > 299:
		return sub.Because(fmt.Errorf("pylon refused the weights: status %d", answer.Status)), nil
	}
	sub.Outcome = store.SubmissionSent
	return sub, nil
}

// mapToUIDs fills sub's weights with the uid of each weighted hotkey registered at the neurons'
// block, counts the others, and returns the weights to send by hotkey.
func mapToUIDs(sub *store.Submission, weights store.Weights, neurons pylon.Neurons) map[string]float64 {
	send := make(map[string]float64, len(weights.Weights))
	for _, mw := range weights.Weights {
		uid, ok := neurons.UIDs[mw.Hotkey]
		if !ok {
			sub.Unregistered++
			continue
		}
		sub.Weights = append(sub.Weights, store.SentWeight{UID: uid, Hotkey: mw.Hotkey, Weight: mw.Weight})
		send[mw.Hotkey] = mw.Weight
	}
	return send
}

func (w *SetWeightsWorker) log(ctx context.Context, s store.Submission) {
	attrs := []any{"reason", s.Reason, "outcome", s.Outcome, "weights", len(s.Weights), "unregistered", s.Unregistered}
	if s.Block != nil {
		attrs = append(attrs, "block", *s.Block)
	}
	switch {
	case s.Outcome == store.SubmissionRefused:
		w.Logger.ErrorContext(ctx, "weights not set: refused", append(attrs, "error", *s.Error)...)
		return
	case s.Error != nil:
		w.Logger.WarnContext(ctx, "weights not set", append(attrs, "error", *s.Error)...)
		return
	}
	if s.ExtrinsicHash != nil {
		attrs = append(attrs, "extrinsic_hash", *s.ExtrinsicHash)
	}
	w.Logger.InfoContext(ctx, "weights set through "+s.Via, attrs...)
}

// confirm marks the weights sent up to the validator's last_update as on chain.
func (w *SetWeightsWorker) confirm(ctx context.Context, tx pgx.Tx, neurons pylon.Neurons) error {
	lastUpdate, ok := neurons.LastUpdate[w.Validator]
	if w.Validator == "" || !ok {
		return nil
	}
	n, err := store.SubmissionConfirm(ctx, tx, lastUpdate)
	if n > 0 {
		w.Logger.InfoContext(ctx, "weights confirmed on chain", "last_update", lastUpdate, "submissions", n)
	}
	return err
}
