package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/postgres"
)

// Started identifies one attempt at a batch.
type Started struct {
	ID      int64
	Attempt int
	// JobID is the run_batch job working the attempt, which holds the batch's lease: the batch's
	// own job, or the one a takeover handed it to.
	JobID int64
	// Retried is true when the attempt BatchStart took over had ended its River job for good:
	// the job is delivered again only because someone pressed Retry in River UI.
	Retried bool
}

// BatchStart creates the batch row of a run_batch job under a lease, or takes it over again when
// River retries the job; a batch a takeover handed to another job gives ErrTakenOver. A running batch of another job older than staleAfter belonged to a process that died
// and whose job River gave up on; it is marked failed so batches can go on (a sharded batch only
// once no River job of an unfinished shard is left). Another batch still running gives
// ErrConflict. This job's batch already done gives ErrAlreadyDone, and so does a sharded batch of
// this job: its coordinator's work ended when the shards were created, and the shards, not a
// retried coordinator, run it. With ErrAlreadyDone the batch's id and attempt are returned.
func BatchStart(ctx context.Context, db postgres.DBTX, riverJobID int64, reason string, staleAfter, lease time.Duration) (Started, error) {
	if err := queries.BatchFailAbandoned(ctx, db, dbsqlc.BatchFailAbandonedParams{
		RiverJobID: riverJobID, StaleAfter: staleAfter.String(),
	}); err != nil {
		return Started{}, fmt.Errorf("fail stale batches: %w", err)
	}
	row, err := queries.BatchStart(ctx, db, dbsqlc.BatchStartParams{
		RiverJobID: riverJobID, Reason: reason, LeaseSecs: lease.Seconds(), EndedType: string(sysevent.TypeRiverJob),
		EndedSubtypes: []string{string(sysevent.JobDiscarded), string(sysevent.JobCancelled)},
	})
	if errors.Is(err, pgx.ErrNoRows) {
		b, err := queries.BatchOfJobGet(ctx, db, riverJobID)
		if err != nil {
			return Started{}, fmt.Errorf("batch of job %d: %w", riverJobID, mapErr(err))
		}
		return batchEnded(dbsqlc.BatchOwnerGetRow(b), riverJobID)
	}
	if err != nil {
		return Started{}, fmt.Errorf("start batch of job %d: %w", riverJobID, mapErr(err))
	}
	return Started{ID: row.ID, Attempt: int(row.Attempt), JobID: riverJobID, Retried: row.Retried}, nil
}

// BatchTakeOverStart begins the next attempt at batch batchID, under a lease, by the run_batch
// job riverJobID a takeover handed it to (or by River's retry of that job). A batch handed to yet
// another job gives ErrTakenOver, one done ErrAlreadyDone.
func BatchTakeOverStart(ctx context.Context, db postgres.DBTX, batchID, riverJobID int64, lease time.Duration) (Started, error) {
	row, err := queries.BatchTakeOverStart(ctx, db, dbsqlc.BatchTakeOverStartParams{
		ID: batchID, LeaseJobID: riverJobID, LeaseSecs: lease.Seconds(), EndedType: string(sysevent.TypeRiverJob),
		EndedSubtypes: []string{string(sysevent.JobDiscarded), string(sysevent.JobCancelled)},
	})
	if errors.Is(err, pgx.ErrNoRows) {
		b, err := queries.BatchOwnerGet(ctx, db, batchID)
		if err != nil {
			return Started{}, fmt.Errorf("batch %d: %w", batchID, mapErr(err))
		}
		return batchEnded(b, riverJobID)
	}
	if err != nil {
		return Started{}, fmt.Errorf("take batch %d over with job %d: %w", batchID, riverJobID, mapErr(err))
	}
	return Started{ID: row.ID, Attempt: int(row.Attempt), JobID: riverJobID, Retried: row.Retried}, nil
}

// batchEnded is ErrTakenOver or ErrAlreadyDone for batch b, which job riverJobID may not start,
// saying what became of it.
func batchEnded(b dbsqlc.BatchOwnerGetRow, riverJobID int64) (Started, error) {
	s := Started{ID: b.ID, Attempt: int(b.Attempt), JobID: b.LeaseJobID}
	if b.LeaseJobID != riverJobID {
		return s, fmt.Errorf("batch %d was handed to run_batch job %d when job %d's lease ran out (the batch is %s): %w",
			b.ID, b.LeaseJobID, riverJobID, b.State, ErrTakenOver)
	}
	if b.Shards > 0 {
		return s, fmt.Errorf("batch %d of job %d was handed to its %d shards and is %s: %w", b.ID, riverJobID, b.Shards, b.State, ErrAlreadyDone)
	}
	return s, fmt.Errorf("batch %d of job %d is %s: %w", b.ID, riverJobID, b.State, ErrAlreadyDone)
}

// BatchPlanned records what phase 1 decided.
func BatchPlanned(ctx context.Context, db postgres.DBTX, s Started, miners, previousJobs, pregenerated int) error {
	err := queries.BatchSetPlan(ctx, db, dbsqlc.BatchSetPlanParams{
		ID: s.ID, Miners: int32(miners), PreviousJobs: int32(previousJobs), Pregenerated: int32(pregenerated),
	})
	if err != nil {
		return fmt.Errorf("record plan of batch %d: %w", s.ID, err)
	}
	return nil
}

// BatchFinish writes a batch's results and marks it done, in tx, guarded so that only the
// attempt that is running, while its job holds the lease, can finish it: a second finish, or one
// after a takeover, is ErrLeaseLost (an ErrConflict) and writes nothing.
func BatchFinish(ctx context.Context, tx pgx.Tx, s Started, res *batch.Result) error {
	stages, _ := json.Marshal(res.Stages)
	var release *time.Time
	if !res.HotRelease.IsZero() {
		release = &res.HotRelease
	}
	n, err := queries.BatchFinish(ctx, tx, dbsqlc.BatchFinishParams{
		ID: s.ID, Attempt: int32(s.Attempt), LeaseJobID: s.JobID, Stages: stages, PregeneratedUsed: int32(res.PregeneratedUsed),
		ExtraGenerated: int32(res.ExtraGenerated), HotReleaseAt: release, SendSpreadUs: new(res.SendSpread.Microseconds()),
	})
	if err != nil {
		return fmt.Errorf("finish batch %d: %w", s.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("finish batch %d attempt %d: %w", s.ID, s.Attempt, ErrLeaseLost)
	}
	return writeResults(ctx, tx, s.ID, s.Attempt, nil, res)
}

// writeResults bulk-writes what a batch, or one shard of it, measured: manifests, jobs, receipts
// and events.
func writeResults(ctx context.Context, tx pgx.Tx, batchID int64, attempt int, shard *int, res *batch.Result) error {
	for _, step := range []func(context.Context, pgx.Tx, int64, *batch.Result) error{copyManifests, copyJobs, copyReceipts} {
		if err := step(ctx, tx, batchID, res); err != nil {
			return err
		}
	}
	return eventsWrite(ctx, tx, batchID, attempt, shard, res.Events)
}

// BatchFail marks an attempt failed and keeps its events and stage timings, so a batch that
// broke halfway still says what it saw. An attempt that lost its lease writes nothing and gets
// ErrLeaseLost.
func BatchFail(ctx context.Context, tx pgx.Tx, s Started, cause error, res *batch.Result) error {
	stages := []byte("[]")
	if res != nil {
		stages, _ = json.Marshal(res.Stages)
	}
	n, err := queries.BatchFail(ctx, tx, dbsqlc.BatchFailParams{
		ID: s.ID, Attempt: int32(s.Attempt), LeaseJobID: s.JobID, Error: new(cause.Error()), Stages: stages,
	})
	if err != nil {
		return fmt.Errorf("fail batch %d: %w", s.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("fail batch %d attempt %d: %w", s.ID, s.Attempt, ErrLeaseLost)
	}
	if res == nil {
		return nil
	}
	return EventsWrite(ctx, tx, s, res.Events)
}

// EventsWrite bulk-writes system events of an attempt.
func EventsWrite(ctx context.Context, tx pgx.Tx, s Started, events []sysevent.Event) error {
	return eventsWrite(ctx, tx, s.ID, s.Attempt, nil, events)
}

// eventsWrite bulk-writes events of a batch's attempt, or of one attempt of a shard when shard
// is set.
func eventsWrite(ctx context.Context, tx pgx.Tx, batchID int64, attempt int, shard *int, events []sysevent.Event) error {
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{batchID, attempt, shard, e.Type, e.Subtype, e.Description, []byte(e.Data), e.At}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_events"},
		[]string{"batch_id", "attempt", "shard", "type", "subtype", "description", "data", "at"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("write %d events of batch %d: %w", len(events), batchID, err)
	}
	return nil
}

func copyManifests(ctx context.Context, tx pgx.Tx, id int64, res *batch.Result) error {
	rows := make([][]any, len(res.Manifests))
	for i, m := range res.Manifests {
		rows[i] = []any{id, m.Miner, m.Class, m.Declared, m.Tested}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_manifests"},
		[]string{"batch_id", "miner_hotkey", "executor_class", "declared", "tested"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("write manifests of batch %d: %w", id, err)
	}
	return nil
}

func copyJobs(ctx context.Context, tx pgx.Tx, id int64, res *batch.Result) error {
	rows := make([][]any, len(res.Jobs))
	for i, j := range res.Jobs {
		var took *int64
		if j.TimeTook != 0 {
			us := j.TimeTook.Microseconds()
			took = &us
		}
		rows[i] = []any{
			j.UUID, id, j.Miner, j.Class, j.Generator, j.Outcome, j.Reason, j.Detail, j.Score,
			ts(j.InitialSentAt), ts(j.ResponseAt), ts(j.ReadyAt), ts(j.BeforeSend), ts(j.AfterSend), ts(j.EndAt),
			took, j.TimeLimit.Microseconds(),
		}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_jobs"}, []string{
		"job_uuid", "batch_id", "miner_hotkey", "executor_class", "generator", "outcome", "reason", "detail", "score",
		"initial_sent_at", "response_at", "ready_at", "before_send_at", "after_send_at", "end_at",
		"time_took_us", "time_limit_us",
	}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("write %d jobs of batch %d: %w", len(rows), id, err)
	}
	return nil
}

func copyReceipts(ctx context.Context, tx pgx.Tx, id int64, res *batch.Result) error {
	rows := make([][]any, len(res.Receipts))
	for i, r := range res.Receipts {
		var errText *string
		if r.Error != "" {
			errText = &r.Error
		}
		rows[i] = []any{id, r.JobUUID, r.Type, r.Miner, []byte(r.Payload), r.Signature, ts(r.SentAt), errText}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_receipts"},
		[]string{"batch_id", "job_uuid", "receipt_type", "miner_hotkey", "payload", "signature", "sent_at", "error"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("write %d receipts of batch %d: %w", len(rows), id, err)
	}
	return nil
}

// ts maps the zero time, "did not happen", to NULL.
func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
