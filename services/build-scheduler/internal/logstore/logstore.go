// Package logstore keeps the output of build attempts. Store is the interface a worker writes
// chunks to and the API reads them from. Postgres is the default implementation, so logs work
// with nothing but the scheduler's database; S3 keeps them in an S3-compatible bucket instead
// (Config and Open choose), which takes log volume off the database.
//
// The S3 store writes every appended chunk as its own object, named so that listing a job's
// folder after the last chunk seen returns the new ones in order (see S3). That is one PUT per
// flush of a worker's log buffer (every quarter second per stream that has output, sooner when
// 32 KiB pile up) and one GET per chunk read, so a followed log shows output as soon as the
// Postgres one does; the price is object count: a build that prints on both streams all hour
// leaves ~29,000 small objects. Merging a finished attempt's chunks into one object would cut that, at the cost of a
// second layout for readers to know; expire old logs with a bucket lifecycle rule on the prefix.
//
// By design, a job never fails because its log could not be kept: a worker that cannot
// append a chunk carries on and reports the log incomplete.
package logstore

import (
	"context"
	"fmt"
	"time"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Chunk is a piece of one attempt's output.
type Chunk struct {
	Seq       int64     `json:"seq"`
	Attempt   int       `json:"attempt"`
	Stream    string    `json:"stream"` // stdout, stderr or system
	Data      []byte    `json:"data"`
	CreatedAt time.Time `json:"created_at"`
}

// Store appends and reads job logs.
type Store interface {
	// Append adds a chunk of job jobID's attempt's output.
	Append(ctx context.Context, jobID int64, attempt int, stream string, data []byte) error
	// Read returns up to limit chunks of job jobID after sequence number after, in order.
	Read(ctx context.Context, jobID, after int64, limit int) ([]Chunk, error)
}

// Postgres stores chunks in the job_logs table.
type Postgres struct {
	DB postgres.DBTX
}

// queries runs the statements of package store (store/query/job_log.sql), compiled by sqlc.
var queries = dbsqlc.New()

// Append inserts one chunk.
func (p Postgres) Append(ctx context.Context, jobID int64, attempt int, stream string, data []byte) error {
	err := queries.JobLogInsert(ctx, p.DB, dbsqlc.JobLogInsertParams{JobID: jobID, Attempt: int32(attempt), Stream: stream, Data: data})
	if err != nil {
		return fmt.Errorf("append log of job %d: %w", jobID, err)
	}
	return nil
}

// Read returns chunks in sequence order.
func (p Postgres) Read(ctx context.Context, jobID, after int64, limit int) ([]Chunk, error) {
	rows, err := queries.JobLogList(ctx, p.DB, dbsqlc.JobLogListParams{JobID: jobID, After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("read log of job %d: %w", jobID, err)
	}
	var out []Chunk
	for _, r := range rows {
		out = append(out, Chunk{Seq: r.Seq, Attempt: int(r.Attempt), Stream: r.Stream, Data: r.Data, CreatedAt: r.CreatedAt})
	}
	return out, nil
}
