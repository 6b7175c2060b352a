package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"drover.dev/services/batch-runner/internal/batch"
	"drover.dev/services/batch-runner/internal/store/dbsqlc"
	"drover.dev/services/batch-runner/internal/sysevent"
	"drover.dev/shared/postgres"
)

// Batch is a batch's row with its counts by outcome.
type Batch struct {
	ID               int64                 `json:"id"`
	RiverJobID       int64                 `json:"river_job_id"`
	Attempt          int                   `json:"attempt"`
	State            BatchState            `json:"state"`
	Reason           string                `json:"reason"`
	Error            *string               `json:"error"`
	Miners           int                   `json:"miners"`
	PreviousJobs     int                   `json:"previous_jobs"`
	Pregenerated     int                   `json:"pregenerated"`
	PregeneratedUsed int                   `json:"pregenerated_used"`
	ExtraGenerated   int                   `json:"extra_generated"`
	Stages           json.RawMessage       `json:"stages"`
	HotReleaseAt     *time.Time            `json:"hot_release_at"`
	SendSpreadUS     *int64                `json:"send_spread_us"`
	CreatedAt        time.Time             `json:"created_at"`
	StartedAt        time.Time             `json:"started_at"`
	FinishedAt       *time.Time            `json:"finished_at"`
	Counts           map[batch.Outcome]int `json:"counts"`

	// ShardCount is the number of shards of a sharded batch, 0 for a batch run in one process;
	// OfferAt and MaxSpinUS are the stagger its shards agreed, SendAt the send instant.
	ShardCount int        `json:"shard_count"`
	OfferAt    *time.Time `json:"offer_at"`
	MaxSpinUS  *int64     `json:"max_spin_us"`
	SendAt     *time.Time `json:"send_at"`
}

// batchOf makes a Batch of its row and its counts by outcome (a JSON object).
func batchOf(r dbsqlc.Batch, counts []byte) (Batch, error) {
	b := Batch{
		ID: r.ID, RiverJobID: r.RiverJobID, Attempt: int(r.Attempt), State: BatchState(r.State), Reason: r.Reason, Error: r.Error,
		Miners: int(r.Miners), PreviousJobs: int(r.PreviousJobs), Pregenerated: int(r.Pregenerated),
		PregeneratedUsed: int(r.PregeneratedUsed), ExtraGenerated: int(r.ExtraGenerated), Stages: r.Stages,
		HotReleaseAt: r.HotReleaseAt, SendSpreadUS: r.SendSpreadUs, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, ShardCount: int(r.Shards), OfferAt: r.OfferAt, MaxSpinUS: r.MaxSpinUs, SendAt: r.SendAt,
	}
	if err := json.Unmarshal(counts, &b.Counts); err != nil {
		return Batch{}, fmt.Errorf("read counts of batch %d: %w", r.ID, err)
	}
	return b, nil
}

// BatchList returns up to limit batches with ids below before (0: from the newest), newest
// first, optionally only the batch of one run_batch job.
func BatchList(ctx context.Context, db postgres.DBTX, before int64, limit int, riverJobID int64) ([]Batch, error) {
	rows, err := queries.BatchList(ctx, db, dbsqlc.BatchListParams{Before: before, RiverJobID: riverJobID, Max: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	out := make([]Batch, len(rows))
	for i, r := range rows {
		if out[i], err = batchOf(r.Batch, r.Counts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BatchGet returns one batch.
func BatchGet(ctx context.Context, db postgres.DBTX, id int64) (Batch, error) {
	r, err := queries.BatchGet(ctx, db, id)
	if err != nil {
		return Batch{}, fmt.Errorf("get batch %d: %w", id, mapErr(err))
	}
	return batchOf(r.Batch, r.Counts)
}

// Job is one job's row.
type Job struct {
	JobUUID       string        `json:"job_uuid"`
	MinerHotkey   string        `json:"miner_hotkey"`
	ExecutorClass string        `json:"executor_class"`
	Generator     string        `json:"generator"`
	Outcome       batch.Outcome `json:"outcome"`
	Reason        batch.Reason  `json:"reason"`
	Detail        string        `json:"detail"`
	Score         float64       `json:"score"`
	InitialSentAt *time.Time    `json:"initial_sent_at"`
	ResponseAt    *time.Time    `json:"response_at"`
	ReadyAt       *time.Time    `json:"ready_at"`
	BeforeSendAt  *time.Time    `json:"before_send_at"`
	AfterSendAt   *time.Time    `json:"after_send_at"`
	EndAt         *time.Time    `json:"end_at"`
	TimeTookUS    *int64        `json:"time_took_us"`
	TimeLimitUS   int64         `json:"time_limit_us"`
}

// JobList returns a batch's jobs by miner and class.
func JobList(ctx context.Context, db postgres.DBTX, batchID int64) ([]Job, error) {
	rows, err := queries.BatchJobList(ctx, db, batchID)
	if err != nil {
		return nil, fmt.Errorf("list jobs of batch %d: %w", batchID, err)
	}
	out := make([]Job, len(rows))
	for i, r := range rows {
		out[i] = Job{
			JobUUID: r.JobUuid, MinerHotkey: r.MinerHotkey, ExecutorClass: r.ExecutorClass, Generator: r.Generator,
			Outcome: batch.Outcome(r.Outcome), Reason: batch.Reason(r.Reason), Detail: r.Detail, Score: r.Score,
			InitialSentAt: r.InitialSentAt, ResponseAt: r.ResponseAt, ReadyAt: r.ReadyAt, BeforeSendAt: r.BeforeSendAt,
			AfterSendAt: r.AfterSendAt, EndAt: r.EndAt, TimeTookUS: r.TimeTookUs, TimeLimitUS: r.TimeLimitUs,
		}
	}
	return out, nil
}

// Event is one stored system event.
type Event struct {
	Attempt int `json:"attempt"`
	// Shard is the shard that saw the event, absent for a batch run in one process.
	Shard       *int             `json:"shard,omitempty"`
	Type        sysevent.Type    `json:"type"`
	Subtype     sysevent.Subtype `json:"subtype"`
	Description string           `json:"description"`
	Data        json.RawMessage  `json:"data"`
	At          time.Time        `json:"at"`
}

// EventList returns a batch's events in the order they were written.
func EventList(ctx context.Context, db postgres.DBTX, batchID int64) ([]Event, error) {
	rows, err := queries.BatchEventList(ctx, db, batchID)
	if err != nil {
		return nil, fmt.Errorf("list events of batch %d: %w", batchID, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{Attempt: int(r.Attempt), Type: sysevent.Type(r.Type), Subtype: sysevent.Subtype(r.Subtype), Description: r.Description,
			Data: r.Data, At: r.At}
		if r.Shard != nil {
			shard := int(*r.Shard)
			out[i].Shard = &shard
		}
	}
	return out, nil
}
