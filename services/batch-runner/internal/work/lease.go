package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"drover.dev/queue"
	"drover.dev/services/batch-runner/internal/store"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// The lease of a running batch or shard. The process working it renews the row's lease_until
// every quarter of the lease; a sweeper in every replica (Sweeper) hands a batch whose lease ran
// out to a new River job. So a batch whose process died is taken over within the lease and the
// sweep interval, not after its River job's timeout (a batch may run for many minutes, so that
// timeout cannot be short), and every write of an attempt is guarded by its job still holding
// the lease, so an attempt that was only cut off from the database writes nothing once it lost
// it.

// keepLease renews a lease of d (renew) every quarter of it until the returned stop is called,
// which waits for it to end. When renew reports store.ErrLeaseLost, or no renewal got through
// for a whole lease counted from the last one sent that did (or from start, when the lease was
// taken), it cancels the attempt with store.ErrLeaseLost as the cause: from then on a sweeper may
// have handed the batch to another job. While quiet is set (the hot phase's release, which lasts
// far less than a lease) the renewals due are skipped.
func keepLease(d time.Duration, start time.Time, quiet *atomic.Bool, renew func(context.Context) error, cancel context.CancelCauseFunc, logger *slog.Logger) (stop func()) {
	ctx, quit := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d / 4)
		defer tick.Stop()
		expiry := time.NewTimer(time.Until(start.Add(d)))
		defer expiry.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-expiry.C:
				logger.Warn("lease ran out without a renewal getting through; stopping the attempt", "lease", d)
				cancel(fmt.Errorf("no lease renewal got through for %s: %w", d, store.ErrLeaseLost))
				return
			case <-tick.C:
			}
			if quiet.Load() {
				continue
			}
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, d/4)
			err := renew(rctx)
			rcancel()
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				logger.Warn("lease lost; stopping the attempt", "error", err)
				cancel(err)
				return
			case err != nil && ctx.Err() == nil:
				logger.Warn("renew lease", "error", err)
			case err == nil:
				expiry.Reset(time.Until(sent.Add(d)))
			}
		}
	}()
	return func() { quit(); <-done }
}

// leaseLost tells whether err, or the cause of the attempt's context, says that the attempt lost
// its lease.
func leaseLost(attempt context.Context, err error) bool {
	return errors.Is(err, store.ErrLeaseLost) || errors.Is(context.Cause(attempt), store.ErrLeaseLost)
}

// lostLeaseEnd ends the job of an attempt that lost its lease, writing nothing: the batch or
// shard is another job's now. River records the job cancelled with cause.
func lostLeaseEnd(logger *slog.Logger, job *rivertype.JobRow, what string, cause error) error {
	logger.Warn("attempt lost its lease: nothing written, the job ends cancelled", "job_id", job.ID, "of", what, "error", cause)
	return river.JobCancel(fmt.Errorf("%s lost its lease, so another job works it now; this attempt wrote nothing: %w", what, cause))
}

// takenOverEnd completes a job whose batch or shard a takeover handed to another job: River's
// rescuer delivered the dead attempt's job again once its timeout passed. It runs nothing; its
// output names the batch and the job that took it over.
func takenOverEnd[T river.JobArgs](ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, job *river.Job[T], batchID, by int64, cause error) error {
	output := map[string]any{"batch_id": batchID, "taken_over_by": by}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return queue.JobEndTx(ctx, tx, job, queue.JobEnd{State: rivertype.JobStateCompleted, Output: output})
	})
	if err != nil {
		return fmt.Errorf("end job %d, taken over: %w", job.ID, err)
	}
	logger.InfoContext(ctx, "job delivered again after a takeover; nothing run", "job_id", job.ID, "batch_id", batchID, "taken_over_by", by, "reason", cause)
	return nil
}

// Sweeper hands every batch and shard whose lease ran out to a new River job. It runs as a loop
// in every replica rather than as a River periodic job, whose leader election would add its own
// delay; replicas sweeping at once take a batch over once, since the takeover is guarded by the
// lease it found expired (store.LeaseTakeOver).
type Sweeper struct {
	Pool     *pgxpool.Pool
	Inserter *queue.Client // batch-runner's own queues
	Logger   *slog.Logger
	// Lease is the lease a takeover's job gets to start in, as the workers' (BATCH_RUNNER_LEASE).
	Lease time.Duration
	// Interval is how often expired leases are looked for (BATCH_RUNNER_LEASE_SWEEP).
	Interval time.Duration
	Metrics  *Metrics // nil counts nothing
}

// Run sweeps every Interval until ctx ends. Database errors are logged and retried on the next
// tick.
func (s *Sweeper) Run(ctx context.Context) error {
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Logger.ErrorContext(ctx, "sweep expired batch leases", "error", err)
		}
	}
}

// errNotTaken rolls back a takeover another replica, or a late renewal, got ahead of.
var errNotTaken = errors.New("lease no longer expired")

// Sweep takes over every batch and shard whose lease ran out, each in its own transaction: the
// new job (a run_batch take-over, unique per batch and attempt, or the shard's run_batch_shard
// job again), the lease handed to it and a LEASE_EXPIRED event on the batch commit together. It
// returns how many it took over.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	leases, err := store.ExpiredLeases(ctx, s.Pool)
	if err != nil {
		return 0, err
	}
	taken := 0
	for _, l := range leases {
		var newJob int64
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			var err error
			if newJob, err = s.insert(ctx, tx, l); err != nil {
				return err
			}
			ok, err := store.LeaseTakeOver(ctx, tx, l, newJob, s.Lease, s.event(l, newJob))
			if err == nil && !ok {
				err = errNotTaken
			}
			return err
		})
		switch {
		case errors.Is(err, errNotTaken):
			continue
		case err != nil:
			return taken, err
		}
		taken++
		s.Metrics.tookOver(l.Shard != nil)
		s.Logger.WarnContext(ctx, "lease ran out; batch taken over", "batch_id", l.BatchID, "shard", l.Shard, "attempt", l.Attempt,
			"job_id", l.JobID, "taken_over_by", newJob, "lease_until", l.Until, "lease", s.Lease)
	}
	return taken, nil
}

// insert inserts, in tx, the job that takes l over.
func (s *Sweeper) insert(ctx context.Context, tx pgx.Tx, l store.ExpiredLease) (int64, error) {
	var args river.JobArgs = queue.RunBatchArgs{
		Reason: "takeover", RequestedAt: time.Now().UTC(), TakeOver: &queue.BatchTakeOver{BatchID: l.BatchID, Attempt: l.Attempt},
	}
	if l.Shard != nil {
		var shard queue.RunBatchShardArgs
		if err := json.Unmarshal(l.ShardArgs, &shard); err != nil {
			return 0, fmt.Errorf("args of run_batch_shard job %d: %w", l.JobID, err)
		}
		args = shard
	}
	res, err := s.Inserter.InsertTx(ctx, tx, args, nil)
	if err != nil {
		return 0, fmt.Errorf("insert the job taking batch %d over: %w", l.BatchID, err)
	}
	return res.Job.ID, nil
}

// event is the LEASE_EXPIRED event of l's takeover by job newJob, recorded on the dead attempt.
func (s *Sweeper) event(l store.ExpiredLease, newJob int64) sysevent.Event {
	what, kind := fmt.Sprintf("batch %d", l.BatchID), queue.RunBatchArgs{}.Kind()
	if l.Shard != nil {
		what, kind = fmt.Sprintf("shard %d of batch %d", *l.Shard, l.BatchID), queue.RunBatchShardArgs{}.Kind()
	}
	return sysevent.One(sysevent.TypeRiverJob, sysevent.LeaseExpired,
		fmt.Sprintf("the lease of %s, attempt %d (%s job %d), ran out at %s unrenewed; %s job %d takes it over",
			what, l.Attempt, kind, l.JobID, l.Until.UTC().Format(time.RFC3339Nano), kind, newJob),
		map[string]any{
			"river_job_id": l.JobID, "taken_over_by": newJob, "attempt": l.Attempt,
			"lease_until": l.Until, "lease_s": s.Lease.Seconds(), "sweep_s": s.Interval.Seconds(),
		})
}
