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
	"drover.dev/services/miner-sync/internal/metagraph"
	"drover.dev/services/miner-sync/internal/store"
)

// Beginner starts a transaction: a pool in production, a test's transaction (a savepoint) in
// tests, so a worker test sees and rolls back everything the worker wrote.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ReasonRiverUI is the reason a sync event gives for a sync that River UI's Retry ran again.
const ReasonRiverUI = "river_ui"

// SyncMetagraphWorker works sync_metagraph: it fetches the metagraph, checks every entry and
// applies the good ones, recording how it went in a sync event. When the source fails, or gives
// nothing usable, no miner changes: the last good list stays, so batches go on while the chain
// is unreachable, and the event says why. River UI's Retry on a finished sync syncs again (its
// event's reason is river_ui); its Cancel on a running sync stops it with nothing applied and a
// failed event, in the transaction that cancels the job.
type SyncMetagraphWorker struct {
	river.WorkerDefaults[queue.SyncMetagraphArgs]
	DB      Beginner
	Source  metagraph.Source // nil: no source configured; every sync fails with an event
	Logger  *slog.Logger
	Metrics *Metrics // nil counts nothing

	// JobTimeout bounds a whole sync; River's default applies when zero. It must exceed the
	// source's own timeout so that a slow source still ends in an event.
	JobTimeout time.Duration
}

// Timeout is the sync's time limit.
func (w *SyncMetagraphWorker) Timeout(*river.Job[queue.SyncMetagraphArgs]) time.Duration {
	return w.JobTimeout
}

// Work syncs once. A source failure is not a job failure (the event records it and the next
// periodic sync tries again); a database error is, and River retries it.
func (w *SyncMetagraphWorker) Work(ctx context.Context, job *river.Job[queue.SyncMetagraphArgs]) error {
	start := time.Now()
	reason := job.Args.Reason
	retried := queue.RetriedInUI(job.JobRow)
	if retried {
		reason = ReasonRiverUI
	}
	miners, event := w.fetch(ctx, reason)
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if event.Outcome != store.OutcomeFailed {
			var err error
			if event.Upserted, event.Deactivated, err = store.MinersApply(ctx, tx, miners); err != nil {
				return err
			}
		}
		if _, err := store.SyncEventInsert(ctx, tx, event); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	switch {
	case err != nil && queue.CancelledRemotely(ctx):
		return w.cancelled(ctx, job, event, err)
	case err != nil:
		return err
	}
	w.Metrics.synced(event.Outcome)
	var block int64
	if event.Block != nil {
		block = *event.Block
	}
	w.Logger.InfoContext(ctx, "metagraph synced", "outcome", event.Outcome, "reason", event.Reason, "source", event.Source,
		"block", block, "entries", event.Entries, "upserted", event.Upserted, "deactivated", event.Deactivated,
		"skipped", event.Skipped, "duration", time.Since(start))
	if retried {
		queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionRetry, "synced again: "+string(event.Outcome), "block", block)
	}
	return nil
}

// cancelled records a sync that River UI's Cancel stopped as a failed sync event, nothing
// applied, and ends the job cancelled, in one transaction on a context that outlives the job's.
func (w *SyncMetagraphWorker) cancelled(ctx context.Context, job *river.Job[queue.SyncMetagraphArgs], event store.SyncEvent, stopped error) error {
	cause := fmt.Errorf("%s; the last good miners stay: %w", queue.CancelledInUI, stopped)
	msg := cause.Error()
	event.Outcome, event.Error, event.Upserted, event.Deactivated = store.OutcomeFailed, &msg, 0, 0
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, w.DB, func(tx pgx.Tx) error {
		if _, err := store.SyncEventInsert(ctx, tx, event); err != nil {
			return err
		}
		return queue.JobCancelTx(ctx, tx, job, cause)
	})
	did := "stopped the sync: nothing applied, failed sync event, job cancelled"
	if err != nil {
		did = fmt.Sprintf("stopped the sync: nothing applied; recording it failed (%v), River cancels the job", err)
	}
	queue.LogUIAction(ctx, w.Logger, job.JobRow, queue.UIActionCancel, did)
	if err != nil {
		return stopped
	}
	w.Metrics.synced(event.Outcome)
	return nil
}

// fetch reads and checks the metagraph. The event it returns is failed when nothing may be
// applied.
func (w *SyncMetagraphWorker) fetch(ctx context.Context, reason string) ([]metagraph.Miner, store.SyncEvent) {
	event := store.SyncEvent{Reason: reason, Outcome: store.OutcomeFailed, Source: "none"}
	if w.Source == nil {
		return nil, w.failed(ctx, event, errors.New("no metagraph source configured"))
	}
	event.Source = w.Source.String()
	snap, err := w.Source.Fetch(ctx)
	if err != nil {
		return nil, w.failed(ctx, event, err)
	}
	miners, skipped := metagraph.Check(snap.Entries)
	event.Netuid, event.Block = &snap.Netuid, &snap.Block
	if snap.BlockHash != "" {
		event.BlockHash = &snap.BlockHash
	}
	event.Entries, event.Skipped, event.SkippedEntries = len(snap.Entries), len(skipped), skipped
	if len(miners) == 0 {
		// Applying an empty list would deactivate every miner and stop the batches.
		return nil, w.failed(ctx, event, errors.New("the metagraph has no usable entry"))
	}
	event.Outcome = store.OutcomeOK
	if len(skipped) > 0 {
		event.Outcome = store.OutcomePartial
		w.Logger.WarnContext(ctx, "metagraph entries skipped", "skipped", len(skipped), "first", skipped[0].Reason)
	}
	return miners, event
}

func (w *SyncMetagraphWorker) failed(ctx context.Context, event store.SyncEvent, err error) store.SyncEvent {
	msg := err.Error()
	event.Error = &msg
	w.Logger.WarnContext(ctx, "metagraph sync failed; keeping the last good miners", "source", event.Source, "error", err)
	return event
}
