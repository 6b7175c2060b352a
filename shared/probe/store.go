// Package probe is the round trip every Drover service serves, proving the one communication
// pattern they all use: a service writes a row and, in the same transaction, inserts a job into
// another service's queue; that service works it and answers the same way.
//
// POST /v1/probes {"target": "scorer"} on any service writes a probes row and enqueues a probe
// job into the target's schema. The target records the arrival and enqueues a probe_ack back into
// the origin's schema in one transaction; the origin's ack worker completes the row. GET
// /v1/probes/{id} shows the round trip and its latency.
package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/shared/postgres"
	"drover.dev/shared/probe/dbsqlc"
	"drover.dev/shared/problem"
)

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()

// State is how far a probe has got: sent, then acked when its acknowledgement came back.
type State string

// The probe states.
const (
	StateSent  State = "sent"
	StateAcked State = "acked"
)

// States returns every probe state.
func States() []State { return []State{StateSent, StateAcked} }

// Probe is one probe as its origin sees it.
type Probe struct {
	ID        int64         `json:"id"`
	Origin    queue.Service `json:"origin"`
	Target    queue.Service `json:"target"`
	State     State         `json:"state"`
	SentAt    time.Time     `json:"sent_at"`
	ArrivedAt *time.Time    `json:"arrived_at"`
	AckedAt   *time.Time    `json:"acked_at"`
	// LatencyMS is sent → arrived at the target; RoundTripMS is sent → acknowledged here.
	LatencyMS   *float64 `json:"latency_ms"`
	RoundTripMS *float64 `json:"round_trip_ms"`
}

// Send writes a probe row and inserts its probe job into target's queue, both on tx: they commit
// or roll back together.
func Send(ctx context.Context, tx pgx.Tx, ins queue.Inserters, origin, target queue.Service) (Probe, error) {
	p := Probe{Origin: origin, Target: target, State: StateSent}
	row, err := queries.ProbeInsert(ctx, tx, string(target))
	if err != nil {
		return p, fmt.Errorf("insert probe to %s: %w", target, err)
	}
	p.ID, p.SentAt = row.ID, row.SentAt
	args := queue.ProbeArgs{ProbeID: p.ID, Origin: origin, SentAt: p.SentAt}
	if _, err := ins[target].InsertTx(ctx, tx, args, nil); err != nil {
		return p, fmt.Errorf("enqueue probe %d for %s: %w", p.ID, target, err)
	}
	return p, nil
}

// Get returns the probe with the given id.
func Get(ctx context.Context, db postgres.DBTX, origin queue.Service, id int64) (Probe, error) {
	row, err := queries.ProbeGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Probe{ID: id, Origin: origin}, fmt.Errorf("probe %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return Probe{ID: id, Origin: origin}, fmt.Errorf("get probe %d: %w", id, err)
	}
	p := Probe{ID: id, Origin: origin, Target: queue.Service(row.Target), State: StateSent,
		SentAt: row.SentAt, ArrivedAt: row.ArrivedAt, AckedAt: row.AckedAt}
	if p.ArrivedAt != nil {
		p.LatencyMS = millis(p.ArrivedAt.Sub(p.SentAt))
	}
	if p.AckedAt != nil {
		p.State, p.RoundTripMS = StateAcked, millis(p.AckedAt.Sub(p.SentAt))
	}
	return p, nil
}

func millis(d time.Duration) *float64 {
	ms := float64(d.Microseconds()) / 1000
	return &ms
}

// recordArrival stores a probe's arrival, once, and returns its arrival time and whether this
// call stored it: a probe delivered again keeps its first arrival time.
func recordArrival(ctx context.Context, tx pgx.Tx, args queue.ProbeArgs) (time.Time, bool, error) {
	row, err := queries.ProbeArrivalRecord(ctx, tx, dbsqlc.ProbeArrivalRecordParams{
		Origin: string(args.Origin), ProbeID: args.ProbeID, SentAt: args.SentAt,
	})
	if err != nil {
		return row.ArrivedAt, false, fmt.Errorf("record arrival of probe %s/%d: %w", args.Origin, args.ProbeID, err)
	}
	return row.ArrivedAt, row.First, nil
}

// recordAck completes a probe row and reports whether it did: a repeated acknowledgement, or one
// of a probe not sent from here, changes nothing.
func recordAck(ctx context.Context, tx pgx.Tx, args queue.ProbeAckArgs) (bool, error) {
	n, err := queries.ProbeAck(ctx, tx, dbsqlc.ProbeAckParams{ID: args.ProbeID, ArrivedAt: new(args.ArrivedAt)})
	if err != nil {
		return false, fmt.Errorf("record ack of probe %d: %w", args.ProbeID, err)
	}
	return n == 1, nil
}
