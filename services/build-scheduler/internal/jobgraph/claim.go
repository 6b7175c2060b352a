package jobgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

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
func ClaimNext(ctx context.Context, db postgres.DBTX, target, workerID string, lease time.Duration) (Claim, bool, error) {
	c := Claim{LeaseToken: rand.Int64()}
	var env []byte
	var timeoutMS int64
	// The claim and the group's first move to dispatching are one statement; the group row is
	// touched only while the group is still queued.
	err := db.QueryRow(ctx, `
		WITH lease_only AS (SELECT set_config('synchronous_commit', 'off', true)), next AS (
			SELECT id FROM job_graph, lease_only WHERE target = $1 AND state = 'ready'
			ORDER BY group_id, priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED
		), claimed AS (
			UPDATE job_graph j SET state = 'running', attempt = attempt + 1, lease_token = $2,
				lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond', reported = false,
				worker_id = $4, started_at = clock_timestamp(), updated_at = clock_timestamp(),
				as_built = NULL, exit_code = NULL, error = NULL
			FROM next WHERE j.id = next.id
			RETURNING j.id, j.group_id, j.name, j.attempt, j.command, j.payload, j.env, j.timeout_ms
		), dispatching AS (
			UPDATE groups g SET state = 'dispatching', updated_at = clock_timestamp()
			FROM claimed WHERE g.id = claimed.group_id AND g.state = 'queued'
		)
		SELECT * FROM claimed`,
		target, c.LeaseToken, lease.Milliseconds(), workerID,
	).Scan(&c.JobID, &c.GroupID, &c.Name, &c.Attempt, &c.Command, &c.Payload, &env, &timeoutMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("claim job of %s for %s: %w", target, workerID, err)
	}
	c.Timeout = time.Duration(timeoutMS) * time.Millisecond
	if err := json.Unmarshal(env, &c.Env); err != nil {
		return c, false, fmt.Errorf("decode env of job %d: %w", c.JobID, err)
	}
	return c, true, nil
}

// Heartbeat extends the lease of an attempt and returns the job's state, so a worker learns of a
// cancellation (cancel_pending) on its next beat. ErrLeaseLost means the attempt no longer holds
// the job and must stop without reporting.
func Heartbeat(ctx context.Context, db postgres.DBTX, jobID, token int64, lease time.Duration) (string, error) {
	var state string
	err := db.QueryRow(ctx, `
		UPDATE job_graph SET lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond'
		WHERE id = $1 AND lease_token = $2 AND state IN ('running', 'cancel_pending')
		RETURNING state::text`, jobID, token, lease.Milliseconds()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("heartbeat job %d: %w", jobID, ErrLeaseLost)
	}
	if err != nil {
		return "", fmt.Errorf("heartbeat job %d: %w", jobID, err)
	}
	return state, nil
}

// MarkReportedTx records, in the transaction that enqueues the report, that the attempt has
// reported, so the lease reaper leaves the job alone while the report waits in the queue.
// ErrLeaseLost means the attempt is dead and its report must not be sent.
func MarkReportedTx(ctx context.Context, tx pgx.Tx, jobID, token int64) error {
	tag, err := tx.Exec(ctx, `UPDATE job_graph SET reported = true
		WHERE id = $1 AND lease_token = $2 AND state IN ('running', 'cancel_pending')`, jobID, token)
	if err != nil {
		return fmt.Errorf("mark job %d reported: %w", jobID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("mark job %d reported: %w", jobID, ErrLeaseLost)
	}
	return nil
}

// SeeWorker records that workerID is polling targets, for the watchdog's "no worker serves this
// target" check.
func SeeWorker(ctx context.Context, db postgres.DBTX, workerID string, targets []string) error {
	_, err := db.Exec(ctx, `
		INSERT INTO target_workers (target, worker_id) SELECT t, $1 FROM unnest($2::text[]) t
		ON CONFLICT (target, worker_id) DO UPDATE SET seen_at = clock_timestamp()`, workerID, targets)
	if err != nil {
		return fmt.Errorf("record worker %s: %w", workerID, err)
	}
	return nil
}
