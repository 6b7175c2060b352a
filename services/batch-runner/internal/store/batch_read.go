package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/shared/postgres"
)

// Batch is a batch's row with its counts by outcome.
type Batch struct {
	ID               int64           `json:"id"`
	RiverJobID       int64           `json:"river_job_id"`
	Attempt          int             `json:"attempt"`
	State            string          `json:"state"`
	Reason           string          `json:"reason"`
	Error            *string         `json:"error"`
	Miners           int             `json:"miners"`
	PreviousJobs     int             `json:"previous_jobs"`
	Pregenerated     int             `json:"pregenerated"`
	PregeneratedUsed int             `json:"pregenerated_used"`
	ExtraGenerated   int             `json:"extra_generated"`
	Stages           json.RawMessage `json:"stages"`
	HotReleaseAt     *time.Time      `json:"hot_release_at"`
	SendSpreadUS     *int64          `json:"send_spread_us"`
	CreatedAt        time.Time       `json:"created_at"`
	StartedAt        time.Time       `json:"started_at"`
	FinishedAt       *time.Time      `json:"finished_at"`
	Counts           map[string]int  `json:"counts"`

	// ShardCount is the number of shards of a sharded batch, 0 for a batch run in one process;
	// OfferAt and MaxSpinUS are the stagger its shards agreed, SendAt the send instant.
	ShardCount int        `json:"shard_count"`
	OfferAt    *time.Time `json:"offer_at"`
	MaxSpinUS  *int64     `json:"max_spin_us"`
	SendAt     *time.Time `json:"send_at"`
}

const batchColumns = `b.id, b.river_job_id, b.attempt, b.state, b.reason, b.error, b.miners, b.previous_jobs,
	b.pregenerated, b.pregenerated_used, b.extra_generated, b.stages, b.hot_release_at, b.send_spread_us,
	b.created_at, b.started_at, b.finished_at, b.shards, b.offer_at, b.max_spin_us, b.send_at,
	(SELECT coalesce(jsonb_object_agg(outcome, n), '{}') FROM
	   (SELECT outcome, count(*) AS n FROM batch_jobs j WHERE j.batch_id = b.id GROUP BY outcome) c)`

func scanBatch(row pgx.Row) (Batch, error) {
	var b Batch
	err := row.Scan(&b.ID, &b.RiverJobID, &b.Attempt, &b.State, &b.Reason, &b.Error, &b.Miners, &b.PreviousJobs,
		&b.Pregenerated, &b.PregeneratedUsed, &b.ExtraGenerated, &b.Stages, &b.HotReleaseAt, &b.SendSpreadUS,
		&b.CreatedAt, &b.StartedAt, &b.FinishedAt, &b.ShardCount, &b.OfferAt, &b.MaxSpinUS, &b.SendAt, &b.Counts)
	return b, err
}

// BatchList returns up to limit batches with ids below before (0: from the newest), newest
// first, optionally only the batch of one run_batch job.
func BatchList(ctx context.Context, db postgres.DBTX, before int64, limit int, riverJobID int64) ([]Batch, error) {
	rows, err := db.Query(ctx, `SELECT `+batchColumns+` FROM batches b
		WHERE ($1 = 0 OR b.id < $1) AND ($3 = 0 OR b.river_job_id = $3)
		ORDER BY b.id DESC LIMIT $2`, before, limit, riverJobID)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	defer rows.Close()
	out := []Batch{}
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, fmt.Errorf("scan batch: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BatchGet returns one batch.
func BatchGet(ctx context.Context, db postgres.DBTX, id int64) (Batch, error) {
	b, err := scanBatch(db.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches b WHERE b.id = $1`, id))
	if err != nil {
		return Batch{}, fmt.Errorf("get batch %d: %w", id, mapErr(err))
	}
	return b, nil
}

// Job is one job's row.
type Job struct {
	JobUUID       string     `json:"job_uuid"`
	MinerHotkey   string     `json:"miner_hotkey"`
	ExecutorClass string     `json:"executor_class"`
	Generator     string     `json:"generator"`
	Outcome       string     `json:"outcome"`
	Reason        string     `json:"reason"`
	Detail        string     `json:"detail"`
	Score         float64    `json:"score"`
	InitialSentAt *time.Time `json:"initial_sent_at"`
	ResponseAt    *time.Time `json:"response_at"`
	ReadyAt       *time.Time `json:"ready_at"`
	BeforeSendAt  *time.Time `json:"before_send_at"`
	AfterSendAt   *time.Time `json:"after_send_at"`
	EndAt         *time.Time `json:"end_at"`
	TimeTookUS    *int64     `json:"time_took_us"`
	TimeLimitUS   int64      `json:"time_limit_us"`
}

// JobList returns a batch's jobs by miner and class.
func JobList(ctx context.Context, db postgres.DBTX, batchID int64) ([]Job, error) {
	rows, err := db.Query(ctx, `
		SELECT job_uuid::text, miner_hotkey, executor_class, generator, outcome, reason, detail, score,
		       initial_sent_at, response_at, ready_at, before_send_at, after_send_at, end_at, time_took_us, time_limit_us
		FROM batch_jobs WHERE batch_id = $1 ORDER BY miner_hotkey, executor_class, job_uuid`, batchID)
	if err != nil {
		return nil, fmt.Errorf("list jobs of batch %d: %w", batchID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Job])
	if err != nil {
		return nil, fmt.Errorf("scan jobs of batch %d: %w", batchID, err)
	}
	return out, nil
}

// Event is one stored system event.
type Event struct {
	Attempt int `json:"attempt"`
	// Shard is the shard that saw the event, absent for a batch run in one process.
	Shard       *int            `json:"shard,omitempty"`
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	Description string          `json:"description"`
	Data        json.RawMessage `json:"data"`
	At          time.Time       `json:"at"`
}

// EventList returns a batch's events in the order they were written.
func EventList(ctx context.Context, db postgres.DBTX, batchID int64) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT attempt, shard, type, subtype, description, data, at FROM batch_events WHERE batch_id = $1 ORDER BY id`, batchID)
	if err != nil {
		return nil, fmt.Errorf("list events of batch %d: %w", batchID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, fmt.Errorf("scan events of batch %d: %w", batchID, err)
	}
	return out, nil
}
