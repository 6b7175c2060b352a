package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	// River's fetch of a build to its report's statement, from the database's timestamps (the
	// workers' stage trace has the same to the report's commit).
	runP50, runP99 time.Duration
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
	// A job's dispatch latency: its start, which is River's fetch of its River job (attempted_at,
	// recorded by the report or the workers' running marks), less the end of its last dependency,
	// recorded by that dependency's report.
	err = pool.QueryRow(ctx, `
		SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY wait), percentile_cont(0.99) WITHIN GROUP (ORDER BY wait)
		FROM (SELECT extract(epoch FROM j.started_at - max(d.finished_at)) AS wait
			FROM job_graph j JOIN job_graph d ON d.id = ANY (j.dependencies)
			WHERE j.group_id = $1 GROUP BY j.id, j.started_at) w`, g.ID).Scan(&r.measured, &p50, &p99)
	if err != nil {
		return r, fmt.Errorf("read dispatch latencies of %s: %w", name, err)
	}
	r.took, r.p50, r.p99 = seconds(took), seconds(p50), seconds(p99)
	var r50, r99 float64
	err = pool.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY t), percentile_cont(0.99) WITHIN GROUP (ORDER BY t)
		FROM (SELECT extract(epoch FROM finished_at - started_at) AS t FROM job_graph WHERE group_id = $1) x`, g.ID).Scan(&r50, &r99)
	if err != nil {
		return r, fmt.Errorf("read run times of %s: %w", name, err)
	}
	r.runP50, r.runP99 = seconds(r50), seconds(r99)
	return r, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// sample keeps about n of the graph's jobs, in its proportions: the root and every k-th leaf,
// diamond and chain, each whole, as a diamond's or a chain's jobs share its number, so that
// every kept job's dependencies are kept.
func sample(jobs []dag.JobSpec, n int) []dag.JobSpec {
	if n <= 0 || n >= len(jobs) {
		return jobs
	}
	k := (len(jobs) + n - 1) / n
	var kept []dag.JobSpec
	for _, j := range jobs {
		if i, numbered := family(j.Name); !numbered || i%k == 0 {
			kept = append(kept, j)
		}
	}
	return kept
}

// family is the number of a job of benchdb.Graph: 12 for leaf12, 3 for d3-left, 7 for c7-19;
// false for the root.
func family(name string) (int, bool) {
	num, _, _ := strings.Cut(strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz"), "-")
	i, err := strconv.Atoi(num)
	return i, err == nil
}
