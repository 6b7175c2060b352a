package populate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
	"drover.dev/shared/metrics"
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

// JobGauges are the populate-worker's gauges read at scrape time: the jobs of each registered
// table by status (JobCountByTableStatus), and its scheduled keys whose make the feeder has not
// yet enqueued (JobCountNotEnqueued), each capped at 100,000 per table (and status), so a scrape
// never scans a huge table. tables names the registered tables at each scrape: they change while
// the service runs (PUT and DELETE /v1/tables/{name}).
func JobGauges(tables func() []string) []metrics.Gauge {
	return []metrics.Gauge{{
		Name: "drover_populate_worker_jobs", Labels: []string{"table", "status"},
		Help: "Jobs of each computed table by status (saturates at 100,000 per table and status).",
		Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
			rows, err := queries.JobCountByTableStatus(ctx, db, dbsqlc.JobCountByTableStatusParams{
				Tables: tables(), Statuses: metrics.Strings(Statuses()),
			})
			return metrics.Samples(rows, err, func(r dbsqlc.JobCountByTableStatusRow) metrics.Sample {
				return metrics.Sample{Labels: []string{r.TableName, r.Status}, Value: r.Jobs}
			})
		},
	}, {
		Name: "drover_populate_worker_keys_not_enqueued", Labels: []string{"table"},
		Help: "Scheduled keys of each computed table whose populate_make job the feeder has not yet enqueued (saturates at 100,000).",
		Read: func(ctx context.Context, db postgres.DBTX) ([]metrics.Sample, error) {
			rows, err := queries.JobCountNotEnqueued(ctx, db, tables())
			return metrics.Samples(rows, err, func(r dbsqlc.JobCountNotEnqueuedRow) metrics.Sample {
				return metrics.Sample{Labels: []string{r.TableName}, Value: r.Jobs}
			})
		},
	}}
}
