package jobgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Build is one attempt at one job, as a worker runs it: what its build_run River job's args
// carry.
type Build struct {
	JobID   int64
	GroupID int64
	Name    string
	Target  string
	Attempt int
	Command []string
	Env     map[string]string
	Payload json.RawMessage
	Timeout time.Duration
	rank    int
	links   []string // the traceparents of the dependencies that did not release it (traced only)
}

// BuildOf is the build a build_run River job's args name.
func BuildOf(a queue.BuildRunArgs) Build {
	return Build{
		JobID: a.JobID, GroupID: a.GroupID, Name: a.JobName, Target: a.Target, Attempt: a.Attempt,
		Command: a.Command, Env: a.Env, Payload: a.Payload, Timeout: time.Duration(a.TimeoutMS) * time.Millisecond,
	}
}

// args are the args of the build's River job.
func (b Build) args() queue.BuildRunArgs {
	return queue.BuildRunArgs{
		Target: b.Target, GroupID: b.GroupID, JobID: b.JobID, JobName: b.Name, Attempt: b.Attempt,
		Command: b.Command, Env: b.Env, Payload: b.Payload, TimeoutMS: b.Timeout.Milliseconds(),
	}
}

// readyRow is a job made ready as the statements return it.
type readyRow struct {
	ID        int64           `json:"id"`
	GroupID   int64           `json:"group_id"`
	Name      string          `json:"name"`
	Target    string          `json:"target"`
	Attempt   int32           `json:"attempt"`
	Rank      int32           `json:"rank"`
	Command   []string        `json:"command"`
	Env       json.RawMessage `json:"env"`
	Payload   json.RawMessage `json:"payload"`
	TimeoutMs int64           `json:"timeout_ms"`
	Links     []string        `json:"links"`
}

// build decodes r.
func (r readyRow) build() (Build, error) {
	b := Build{
		JobID: r.ID, GroupID: r.GroupID, Name: r.Name, Target: r.Target, Attempt: int(r.Attempt), rank: int(r.Rank),
		Command: r.Command, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond, links: r.Links,
	}
	if len(r.Payload) > 0 && string(r.Payload) != "null" {
		b.Payload = r.Payload
	}
	if len(r.Env) > 0 {
		if err := json.Unmarshal(r.Env, &b.Env); err != nil {
			return b, fmt.Errorf("decode env of job %d: %w", r.ID, err)
		}
	}
	return b, nil
}

// builds decodes rows.
func builds(rows []readyRow) ([]Build, error) {
	out := make([]Build, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.build(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dispatch inserts the River job of each build, with InsertManyTx on the transition's
// transaction: a job becomes ready, or gets a new attempt, in the transaction that inserts the
// River job that runs it. Each goes to its target's queue with a scheduled_at in the past that
// puts it in the scheduler's order (queue.BuildOrder): River's fetch then hands out the oldest
// group's builds first, by priority, then id (queue.BuildRunArgs.InOrder). It returns the River jobs' ids, in the order of
// builds, and the targets they went to. The Graph's inserter may be a quiet one
// (queue.NewQuietInserter): its caller then announces the targets after the commit.
func (g *Graph) dispatch(ctx context.Context, tx pgx.Tx, jobs []Build) ([]int64, []string, error) {
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	if last := queue.BuildOrderMaxGroup(time.Now()); jobs[0].GroupID > last {
		return nil, nil, fmt.Errorf("dispatch builds of group %d: past group %d, the last whose builds River's fetch can order", jobs[0].GroupID, last)
	}
	params := make([]river.InsertManyParams, len(jobs))
	var targets []string
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: j.args().InOrder(j.rank), InsertOpts: linked(j.links)}
		if !slices.Contains(targets, j.Target) {
			targets = append(targets, j.Target)
		}
	}
	res, err := g.Builds.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, nil, fmt.Errorf("dispatch %d builds of group %d: %w", len(jobs), jobs[0].GroupID, err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids, targets, nil
}

// LinksKey is the key of a build_run River job's metadata that lists the W3C traceparents of the
// spans of its build's dependencies other than the one that released it: its worker links its span
// to them. Only a traced report writes it.
const LinksKey = "build_links"

// linked are the insert options that carry links in a build's River job's metadata; nil (the
// args' own options) when there are none.
func linked(links []string) *river.InsertOpts {
	if len(links) == 0 {
		return nil
	}
	metadata, err := json.Marshal(map[string][]string{LinksKey: links})
	if err != nil {
		return nil
	}
	return &river.InsertOpts{Metadata: metadata}
}

// SeeWorker records that workerID is serving targets, for the watchdog's "no worker serves this
// target" check.
func SeeWorker(ctx context.Context, db postgres.DBTX, workerID string, targets []string) error {
	err := queries.TargetWorkerSee(ctx, db, dbsqlc.TargetWorkerSeeParams{WorkerID: workerID, Targets: targets})
	if err != nil {
		return fmt.Errorf("record worker %s: %w", workerID, err)
	}
	return nil
}

// Started is a batch of builds that started on workers, with the groups they belong to, for
// Mark.
type Started struct {
	ids      []int64
	attempts []int32
	workers  []string
	started  []time.Time
	Groups   []int64
}

// Add adds build b, which started on worker at at.
func (r *Started) Add(b Build, worker string, at time.Time) {
	r.ids, r.attempts = append(r.ids, b.JobID), append(r.attempts, int32(b.Attempt))
	r.workers, r.started = append(r.workers, worker), append(r.started, at)
}

// Mark records r in one statement (JobMarkRunning): each build still ready under its attempt is
// running, and each of r's groups still queued is dispatching.
func (r *Started) Mark(ctx context.Context, db postgres.DBTX) error {
	if len(r.ids) == 0 && len(r.Groups) == 0 {
		return nil
	}
	err := queries.JobMarkRunning(ctx, db, dbsqlc.JobMarkRunningParams{
		Ids: r.ids, Attempts: r.attempts, Workers: r.workers, Started: r.started, GroupIds: r.Groups,
	})
	if err != nil {
		return fmt.Errorf("record %d running builds: %w", len(r.ids), err)
	}
	return nil
}
