package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/build-scheduler/internal/dag"
)

// result is one group's run.
type result struct {
	jobs     int
	post     time.Duration // POST /v1/groups, round trip
	took     time.Duration // the group's created_at to its finished_at
	p50, p99 time.Duration // dispatch latency
	measured int           // jobs with dependencies, whose latency counts
	// The two parts of the dispatch latency, from the token that claimed each job: its last
	// dependency's end to River fetching the token (the report's commit, the notification, the
	// fetch), and the fetch to the claim (River handing the token to Work, the claim).
	fetchP50, fetchP99, claimP50, claimP99 time.Duration
	runP50, runP99                         time.Duration // a job's claim to its report
}

func (r result) rate() float64 { return float64(r.jobs) / r.took.Seconds() }

// runGroup submits jobs as a group, waits for it to end complete and reads its figures from the
// database.
func runGroup(ctx context.Context, api client, pool *pgxpool.Pool, name string, jobs []dag.JobSpec, timeout time.Duration) (result, error) {
	var g struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	start := time.Now()
	if err := api.do(ctx, http.MethodPost, "/v1/groups", map[string]any{"name": name, "jobs": jobs}, &g); err != nil {
		return result{}, fmt.Errorf("submit %s: %w", name, err)
	}
	r := result{jobs: len(jobs), post: time.Since(start)}
	deadline := time.Now().Add(timeout)
	for g.State == "queued" || g.State == "dispatching" {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("group %s still %s after %s", name, g.State, timeout)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(500 * time.Millisecond): // the figures come from the database, not from this poll
		}
		if err := api.do(ctx, http.MethodGet, fmt.Sprintf("/v1/groups/%d", g.ID), nil, &g); err != nil {
			return r, err
		}
	}
	if g.State != "complete" {
		return r, fmt.Errorf("group %s ended %s", name, g.State)
	}
	var took, p50, p99 float64
	err := pool.QueryRow(ctx, `SELECT extract(epoch FROM finished_at - created_at) FROM groups WHERE id = $1`, g.ID).Scan(&took)
	if err != nil {
		return r, fmt.Errorf("read group %s: %w", name, err)
	}
	// A job's dispatch latency: its start less the end of its last dependency.
	err = pool.QueryRow(ctx, `
		SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY wait), percentile_cont(0.99) WITHIN GROUP (ORDER BY wait)
		FROM (SELECT extract(epoch FROM j.started_at - max(d.finished_at)) AS wait
			FROM job_graph j JOIN job_graph d ON d.id = ANY (j.dependencies)
			WHERE j.group_id = $1 GROUP BY j.id, j.started_at) w`, g.ID).Scan(&r.measured, &p50, &p99)
	if err != nil {
		return r, fmt.Errorf("read dispatch latencies of %s: %w", name, err)
	}
	r.took, r.p50, r.p99 = seconds(took), seconds(p50), seconds(p99)
	var f50, f99, c50, c99 float64
	err = pool.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY to_fetch), percentile_cont(0.99) WITHIN GROUP (ORDER BY to_fetch),
			percentile_cont(0.5) WITHIN GROUP (ORDER BY to_claim), percentile_cont(0.99) WITHIN GROUP (ORDER BY to_claim)
		FROM (SELECT extract(epoch FROM t.attempted_at - r.ready_at) AS to_fetch, extract(epoch FROM r.started_at - t.attempted_at) AS to_claim
			FROM (SELECT j.id, j.started_at, max(d.finished_at) AS ready_at
				FROM job_graph j JOIN job_graph d ON d.id = ANY (j.dependencies)
				WHERE j.group_id = $1 GROUP BY j.id, j.started_at) r
			JOIN river_job t ON t.kind = 'build_run' AND (t.metadata -> 'output' -> 'build' ->> 'job_id')::bigint = r.id) x`, g.ID).Scan(&f50, &f99, &c50, &c99)
	if err != nil {
		return r, fmt.Errorf("read dispatch latency parts of %s: %w", name, err)
	}
	r.fetchP50, r.fetchP99, r.claimP50, r.claimP99 = seconds(f50), seconds(f99), seconds(c50), seconds(c99)
	err = pool.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY t), percentile_cont(0.99) WITHIN GROUP (ORDER BY t)
		FROM (SELECT extract(epoch FROM finished_at - started_at) AS t FROM job_graph WHERE group_id = $1) x`, g.ID).Scan(&f50, &f99)
	if err != nil {
		return r, fmt.Errorf("read run times of %s: %w", name, err)
	}
	r.runP50, r.runP99 = seconds(f50), seconds(f99)
	return r, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
