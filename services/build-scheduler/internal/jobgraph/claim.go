package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Claim is one attempt at a job, as handed to a worker.
type Claim struct {
	JobID      int64
	GroupID    int64
	Name       string
	Attempt    int
	LeaseToken int64
	Command    []string
	Payload    json.RawMessage
	Env        map[string]string
	Timeout    time.Duration
	// Sent is when the claim was sent, on this process's clock: the lease it took runs out no
	// earlier than a lease after it, so a worker that hears nothing more from the database
	// counts its lease from here.
	Sent time.Time
}

// ClaimNext hands the best ready job of target to workerID: the oldest group's, then the highest
// priority, then the lowest id. SKIP LOCKED lets concurrent workers claim different jobs without
// waiting on each other. It returns false when target has no ready job (the token's job was
// claimed through another token, or its group was cancelled).
//
// The claim is one statement, so on a pool it is its own transaction: one round trip and one
// commit. That commit does not wait for the WAL flush (synchronous_commit off, for this
// transaction only), because a claim is a lease and losing one costs nothing: only a crash of
// Postgres itself can lose it, and then the job is ready again, the worker's next heartbeat or
// report finds its lease gone (ErrLeaseLost), and the job runs again under a new claim, as after
// a lost worker. Nothing later can commit on top of a lost claim, since any synchronous commit
// flushes the WAL up to itself, claims before it included. So call it on a pool, not inside a
// transaction whose commit must be durable.
//
// A claim that finds nothing is sent again while the target still has a ready job, seen in a
// snapshot of its own (JobReadyExists), for up to claimPatience: the first time at once, then
// after a pause that doubles from a millisecond up to maxClaimPause. A statement whose snapshot
// predates the commit of a job that became ready, while claims with newer snapshots (holding the
// new jobs' tokens) took every job it could see, finds nothing (SKIP LOCKED skips what they
// hold), and its token would complete with the new job left ready and no token, until the
// reaper's TOKEN_GRACE issues one (30 s; TestClaimWithAStaleSnapshotTriesAgain). Each statement
// sent again has a newer snapshot, but can lose the same way to yet newer claims, so no fixed
// number of sends is enough (TestClaimKeepsTryingWhileAJobIsReady). A job held by a transaction
// that does not claim it (a recount locks every unfinished job of its group) is skipped the same
// way, for as long as that transaction lasts (TestClaimWaitsOutAJobHeldByARecount). A token whose
// claim finds nothing while its target has no ready job is a spare one and completes.
func ClaimNext(ctx context.Context, db postgres.DBTX, target, workerID string, lease time.Duration) (Claim, bool, error) {
	c := Claim{LeaseToken: rand.Int64()}
	// The claim and the group's first move to dispatching are one statement; the group row is
	// touched only while the group is still queued.
	var (
		row dbsqlc.JobClaimRow
		err error
	)
	giveUp := time.Now().Add(claimPatience)
	for pause := time.Duration(0); ; pause = min(max(2*pause, time.Millisecond), maxClaimPause) {
		c.Sent = time.Now()
		row, err = queries.JobClaim(ctx, db, dbsqlc.JobClaimParams{
			Target: target, LeaseToken: c.LeaseToken, LeaseMs: lease.Milliseconds(), WorkerID: workerID,
		})
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
		ready, readyErr := queries.JobReadyExists(ctx, db, target)
		if readyErr != nil {
			return c, false, fmt.Errorf("look for a ready job of %s: %w", target, readyErr)
		}
		if !ready || time.Now().After(giveUp) {
			break
		}
		if err := sleep(ctx, pause); err != nil {
			return c, false, fmt.Errorf("claim job of %s for %s: %w", target, workerID, err)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("claim job of %s for %s: %w", target, workerID, err)
	}
	c.JobID, c.GroupID, c.Name, c.Attempt = row.ID, row.GroupID, row.Name, int(row.Attempt)
	c.Command, c.Payload = row.Command, row.Payload
	env, timeoutMS := row.Env, row.TimeoutMs
	c.Timeout = time.Duration(timeoutMS) * time.Millisecond
	if err := json.Unmarshal(env, &c.Env); err != nil {
		return c, false, fmt.Errorf("decode env of job %d: %w", c.JobID, err)
	}
	return c, true, nil
}

// claimPatience is how long ClaimNext keeps trying while its target has a ready job it cannot
// claim, and maxClaimPause the longest pause between two tries. A job held that long by a
// transaction that does not claim it is left to the reaper.
const (
	claimPatience = 5 * time.Second
	maxClaimPause = 50 * time.Millisecond
)

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Heartbeat extends the lease of an attempt and returns the job's state, so a worker learns of a
// cancellation (cancel_pending) on its next beat. ErrLeaseLost means the attempt no longer holds
// the job and must stop without reporting.
func Heartbeat(ctx context.Context, db postgres.DBTX, jobID, token int64, lease time.Duration) (JobState, error) {
	state, err := queries.JobHeartbeat(ctx, db, dbsqlc.JobHeartbeatParams{ID: jobID, LeaseToken: token, LeaseMs: lease.Milliseconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("heartbeat job %d: %w", jobID, ErrLeaseLost)
	}
	if err != nil {
		return "", fmt.Errorf("heartbeat job %d: %w", jobID, err)
	}
	return JobState(state), nil
}

// SeeWorker records that workerID is polling targets, for the watchdog's "no worker serves this
// target" check.
func SeeWorker(ctx context.Context, db postgres.DBTX, workerID string, targets []string) error {
	err := queries.TargetWorkerSee(ctx, db, dbsqlc.TargetWorkerSeeParams{WorkerID: workerID, Targets: targets})
	if err != nil {
		return fmt.Errorf("record worker %s: %w", workerID, err)
	}
	return nil
}
