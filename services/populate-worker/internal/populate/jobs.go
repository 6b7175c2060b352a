package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// Status is a job's status in the jobs table, exactly DataJoint's five.
type Status string

// The statuses.
const (
	StatusScheduled Status = "scheduled"
	StatusReserved  Status = "reserved"
	StatusError     Status = "error"
	StatusIgnore    Status = "ignore"
	StatusSuccess   Status = "success"
)

// ParseStatus returns the status named s.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusScheduled, StatusReserved, StatusError, StatusIgnore, StatusSuccess:
		return st, nil
	}
	return "", fmt.Errorf("unknown status %q", s)
}

// Job is one row of the jobs table.
type Job struct {
	TableName    string          `json:"table_name"`
	KeyHash      string          `json:"key_hash"`
	Status       Status          `json:"status"`
	Key          json.RawMessage `json:"key"`
	ErrorMessage *string         `json:"error_message"`
	ErrorStack   *string         `json:"error_stack"`
	User         string          `json:"user"`
	Host         string          `json:"host"`
	PID          int32           `json:"pid"`
	ConnectionID int64           `json:"connection_id"`
	Timestamp    time.Time       `json:"timestamp"`
	RunDuration  *float64        `json:"run_duration"`
	RunMetadata  json.RawMessage `json:"run_metadata"`
}

const jobColumns = `table_name, key_hash, status, key, error_message, error_stack, "user", host, pid,
	connection_id, "timestamp", run_duration, run_metadata`

func scanJob(row pgx.CollectableRow) (Job, error) {
	var j Job
	var key, meta []byte
	err := row.Scan(&j.TableName, &j.KeyHash, &j.Status, &key, &j.ErrorMessage, &j.ErrorStack, &j.User,
		&j.Host, &j.PID, &j.ConnectionID, &j.Timestamp, &j.RunDuration, &meta)
	j.Key, j.RunMetadata = key, meta
	return j, err
}

// JobGet returns the job of key hash in table.
func JobGet(ctx context.Context, db postgres.DBTX, table, keyHash string) (Job, error) {
	rows, err := db.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE table_name = $1 AND key_hash = $2`, table, keyHash)
	if err != nil {
		return Job{}, fmt.Errorf("get job %s/%s: %w", table, keyHash, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("job %s/%s: %w", table, keyHash, problem.ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("get job %s/%s: %w", table, keyHash, err)
	}
	return j, nil
}

// JobListParams filters and pages JobList. After is the (table_name, key_hash) of the last job of
// the previous page.
type JobListParams struct {
	Table        string
	Status       Status
	AfterTable   string
	AfterKeyHash string
	Limit        int
}

// JobList returns jobs in (table_name, key_hash) order, for keyset pagination.
func JobList(ctx context.Context, db postgres.DBTX, p JobListParams) ([]Job, error) {
	rows, err := db.Query(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE ($1 = '' OR table_name = $1) AND ($2 = '' OR status = $2)
		  AND (table_name, key_hash) > ($3, $4)
		ORDER BY table_name, key_hash LIMIT $5`, p.Table, string(p.Status), p.AfterTable, p.AfterKeyHash, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs of %q: %w", p.Table, err)
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("list jobs of %q: %w", p.Table, err)
	}
	return jobs, nil
}

// Ignore marks a key's job ignore, so that neither populate nor schedule_jobs (without force)
// touches it. A reserved job is being made and cannot be ignored.
func (e *Engine) Ignore(ctx context.Context, table, keyHash string) (Job, error) {
	return e.setStatus(ctx, table, keyHash, StatusIgnore, []Status{StatusScheduled, StatusError, StatusIgnore})
}

// Reschedule makes an error or ignore job scheduled again and enqueues its make, in one
// transaction.
func (e *Engine) Reschedule(ctx context.Context, table, keyHash string) (Job, error) {
	return e.setStatus(ctx, table, keyHash, StatusScheduled, []Status{StatusError, StatusIgnore})
}

func (e *Engine) setStatus(ctx context.Context, table, keyHash string, to Status, from []Status) (Job, error) {
	if _, err := e.tables.Get(table); err != nil {
		return Job{}, err
	}
	var job Job
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		cur, err := JobGet(ctx, tx, table, keyHash)
		if err != nil {
			return err
		}
		if !slices.Contains(from, cur.Status) {
			return problem.Conflictf("job %s/%s is %s; only %v jobs can become %s", table, keyHash, cur.Status, from, to)
		}
		_, err = tx.Exec(ctx, `UPDATE jobs SET status = $3, error_message = NULL, error_stack = NULL,
			"user" = current_user, host = $4, pid = $5, connection_id = pg_backend_pid(), "timestamp" = now()
			WHERE table_name = $1 AND key_hash = $2`, table, keyHash, to, e.host, pid())
		if err != nil {
			return fmt.Errorf("set job %s/%s %s: %w", table, keyHash, to, err)
		}
		if to == StatusScheduled {
			if err := e.enqueueMakes(ctx, tx, table, []string{keyHash}); err != nil {
				return err
			}
		}
		job, err = JobGet(ctx, tx, table, keyHash)
		return err
	})
	return job, err
}

// enqueueMakes inserts a populate_make River job per key hash on tx, in batches, with COPY.
func (e *Engine) enqueueMakes(ctx context.Context, tx pgx.Tx, table string, hashes []string) error {
	const batch = 5000
	for start := 0; start < len(hashes); start += batch {
		end := min(start+batch, len(hashes))
		params := make([]riverInsert, 0, end-start)
		for _, h := range hashes[start:end] {
			params = append(params, riverInsert{Args: queue.PopulateMakeArgs{Table: table, KeyHash: h}})
		}
		if _, err := e.river.InsertManyFastTx(ctx, tx, params); err != nil {
			return fmt.Errorf("enqueue makes of %s: %w", table, err)
		}
	}
	return nil
}
