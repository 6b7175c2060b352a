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
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
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

// Statuses returns every status.
func Statuses() []Status {
	return []Status{StatusScheduled, StatusReserved, StatusError, StatusIgnore, StatusSuccess}
}

// ParseStatus returns the status named s.
func ParseStatus(s string) (Status, error) {
	if st := Status(s); slices.Contains(Statuses(), st) {
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
	// Enqueued says whether the key's populate_make River job has been enqueued; false for a
	// scheduled key the feeder has yet to reach (not a DataJoint field).
	Enqueued bool `json:"enqueued"`
}

// toJob is a jobs row as the package shows it.
func toJob(r dbsqlc.Job) Job {
	return Job{
		TableName: r.TableName, KeyHash: r.KeyHash, Status: Status(r.Status), Key: r.Key,
		ErrorMessage: r.ErrorMessage, ErrorStack: r.ErrorStack, User: r.User, Host: r.Host, PID: r.Pid,
		ConnectionID: r.ConnectionID, Timestamp: r.Timestamp, RunDuration: r.RunDuration, RunMetadata: r.RunMetadata,
		Enqueued: r.Enqueued,
	}
}

// JobGet returns the job of key hash in table.
func JobGet(ctx context.Context, db postgres.DBTX, table, keyHash string) (Job, error) {
	r, err := queries.JobGet(ctx, db, dbsqlc.JobGetParams{TableName: table, KeyHash: keyHash})
	j := toJob(r)
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
	rows, err := queries.JobList(ctx, db, dbsqlc.JobListParams{
		TableName: p.Table, Status: string(p.Status), AfterTable: p.AfterTable, AfterKeyHash: p.AfterKeyHash, MaxRows: int32(p.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs of %q: %w", p.Table, err)
	}
	jobs := make([]Job, len(rows))
	for i, r := range rows {
		jobs[i] = toJob(r)
	}
	return jobs, nil
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
		err = queries.JobSetStatus(ctx, tx, dbsqlc.JobSetStatusParams{
			Status: string(to), Host: e.host, Pid: pid(), TableName: table, KeyHash: keyHash,
		})
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
