package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// SweepOptions is who hears of a sweep that gave jobs back, and what it does beyond River's
// rescue for some kinds.
type SweepOptions struct {
	Logger    *slog.Logger
	OnRescue  func(kind string, n int) // jobs given back, by kind
	OnDead    func(n int)              // processes a sweep declared dead
	Takeovers map[string]Takeover      // by kind
}

// A Takeover is what a kind's running jobs need, beyond River's rescue, when their process is
// gone. It runs in the transaction that gives them back, before River's rescue ends or retries
// them, so that whatever replaces a job commits with its end. It returns, by job id, a note on
// what became of the job's work (for example the new attempt that replaced it), which is added to
// the error River records on the job.
type Takeover func(ctx context.Context, tx pgx.Tx, jobs []RescuedJob) (map[int64]string, error)

// RescuedJob is a running job of a dead process, as a Takeover sees it.
type RescuedJob struct {
	ID      int64
	Attempt int             // River's attempt
	Args    json.RawMessage // the job's encoded args
	Process string          // the dead process's ID
	// CancelRequested says someone asked River to cancel the job (River UI's Cancel): River's
	// rescue ends it cancelled.
	CancelRequested bool
}

// SweepResult is what one sweep did.
type SweepResult struct {
	// Processes are the IDs of the dead processes it removed.
	Processes []string
	// Retried, Discarded and Cancelled count the jobs it gave back by the state they took.
	Retried, Discarded, Cancelled int
	// Kinds counts the jobs it gave back by kind.
	Kinds map[string]int
}

// Jobs is how many jobs the sweep gave back.
func (r SweepResult) Jobs() int { return r.Retried + r.Discarded + r.Cancelled }

// log writes the one line of a sweep that did something.
func (r SweepResult) log(ctx context.Context, logger *slog.Logger, msg string) {
	if logger == nil || len(r.Processes) == 0 {
		return
	}
	kinds := make([]string, 0, len(r.Kinds))
	for _, k := range slices.Sorted(maps.Keys(r.Kinds)) {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, r.Kinds[k]))
	}
	logger.InfoContext(ctx, msg, "processes", strings.Join(r.Processes, ","), "jobs_rescued", r.Jobs(),
		"retried", r.Retried, "discarded", r.Discarded, "cancelled", r.Cancelled, "kinds", strings.Join(kinds, ","))
}

// deadProcess is a liveness record whose jobs are to be given back: one a sweep found past its
// timeout, or the record of a process that stops or restarts under the same ID.
type deadProcess struct {
	ID         string
	Name       string
	Host       string
	PID        int
	RenewedAt  time.Time
	timeout    time.Duration
	sweptAt    time.Time     // the database clock of the sweep
	reason     string        // what became of the process, for the jobs' error
	retryAfter time.Duration // how long after the sweep a job given back may run again
}

// DB is where a sweep runs its transaction: a *pgxpool.Pool, or the connection a Process holds.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Sweep gives back the running River jobs of every process of schema whose liveness record is
// older than its timeout, and removes those records, in one transaction. It is safe on every
// replica at once: a record another sweep is handling is skipped (SKIP LOCKED). It logs one line
// when it found a dead process.
func Sweep(ctx context.Context, db DB, schema string, opts SweepOptions) (SweepResult, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return SweepResult{}, wrapSweep(schema, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// A River completion holding a job's row is short; a sweep never waits long behind one.
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
		return SweepResult{}, wrapSweep(schema, err)
	}
	dead, err := lockProcesses(ctx, tx, schema, `renewed_at + timeout < now() ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED`)
	if err != nil || len(dead) == 0 {
		return SweepResult{}, wrapSweep(schema, err)
	}
	for i := range dead {
		d := &dead[i]
		d.reason = fmt.Sprintf("stopped renewing its liveness at %s, %s before this sweep",
			d.RenewedAt.UTC().Format(time.RFC3339), d.sweptAt.Sub(d.RenewedAt).Round(time.Second))
		// A process declared dead may be alive and learn it only at its next renewal: its jobs
		// come back after it has stopped them, so that its late ends find them no longer running.
		d.retryAfter = d.timeout / 3
	}
	res, err := rescue(ctx, tx, schema, dead, opts.Takeovers)
	if err != nil {
		return SweepResult{}, wrapSweep(schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return SweepResult{}, wrapSweep(schema, err)
	}
	opts.report(ctx, res, "liveness sweep: gave back the jobs of dead processes")
	if opts.OnDead != nil {
		opts.OnDead(len(res.Processes))
	}
	return res, nil
}

// lockProcesses locks and reads the liveness records of schema that where (a condition, then an
// ORDER BY and a locking clause) selects.
func lockProcesses(ctx context.Context, tx pgx.Tx, schema, where string, args ...any) ([]deadProcess, error) {
	rows, err := tx.Query(ctx, `SELECT id, name, host, pid, timeout, renewed_at, now()
		FROM `+pgx.Identifier{schema, "processes"}.Sanitize()+` WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (deadProcess, error) {
		var d deadProcess
		err := row.Scan(&d.ID, &d.Name, &d.Host, &d.PID, &d.timeout, &d.RenewedAt, &d.sweptAt)
		return d, err
	})
}

// report logs a sweep that gave something back, as msg, and tells OnRescue.
func (o SweepOptions) report(ctx context.Context, res SweepResult, msg string) {
	res.log(ctx, o.Logger, msg)
	if o.OnRescue != nil {
		for kind, n := range res.Kinds {
			o.OnRescue(kind, n)
		}
	}
}

func wrapSweep(schema string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sweep %s: %w", schema, err)
}

// rescue gives back, on tx, the running jobs whose current attempt belongs to one of procs, and
// deletes their records. It is River's own rescue (the driver call River's rescuer makes, from
// this one adapter, see RiverVersion): a job retries, with an error naming the process, unless it
// was at its last attempt (discarded) or someone asked to cancel it (cancelled). Unlike River's
// rescuer it retries without backoff, after the process's retryAfter: the job did not fail, its
// process went away.
//
// The takeovers of the jobs' kinds run first, in tx, on the jobs read without a lock, and the
// jobs are locked for River's rescue after: a service's own rows before River's, the order in
// which its transactions that touch both lock them (a build's report and a group's cancel lock
// the job graph's rows, then end or cancel River jobs), so that a sweep and such a transaction
// never wait on each other. The dead process cannot end its jobs meanwhile, and River's rescue
// gives back only those still running.
func rescue(ctx context.Context, tx pgx.Tx, schema string, procs []deadProcess, takeovers map[string]Takeover) (SweepResult, error) {
	byID := make(map[string]deadProcess, len(procs))
	for _, d := range procs {
		byID[d.ID] = d
	}
	ids := slices.Collect(maps.Keys(byID))
	slices.Sort(ids)
	var notes map[int64]string
	if len(takeovers) > 0 {
		jobs, err := runningJobsOf(ctx, tx, schema, ids, "")
		if err != nil {
			return SweepResult{}, err
		}
		if notes, err = takeOver(ctx, tx, jobs, takeovers); err != nil {
			return SweepResult{}, err
		}
	}
	jobs, err := runningJobsOf(ctx, tx, schema, ids, "FOR NO KEY UPDATE")
	if err != nil {
		return SweepResult{}, err
	}
	res := SweepResult{Processes: ids, Kinds: map[string]int{}}
	params := &riverdriver.JobRescueManyParams{Schema: schema}
	for _, j := range jobs {
		if err := res.add(params, j, byID[j.owner], notes[j.id]); err != nil {
			return SweepResult{}, err
		}
	}
	if len(params.ID) > 0 {
		if _, err := riverDriverOf(tx).JobRescueMany(ctx, params); err != nil {
			return SweepResult{}, fmt.Errorf("rescue %d jobs: %w", len(params.ID), err)
		}
	}
	_, err = tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "processes"}.Sanitize()+` WHERE id = ANY($1)`, ids)
	if err != nil {
		return SweepResult{}, fmt.Errorf("delete dead processes: %w", err)
	}
	return res, nil
}

// takeOver runs the takeovers of jobs' kinds and returns their notes by job id.
func takeOver(ctx context.Context, tx pgx.Tx, jobs []runningJob, takeovers map[string]Takeover) (map[int64]string, error) {
	byKind := map[string][]RescuedJob{}
	for _, j := range jobs {
		if takeovers[j.kind] != nil {
			byKind[j.kind] = append(byKind[j.kind], RescuedJob{ID: j.id, Attempt: j.attempt, Args: j.args, Process: j.owner,
				CancelRequested: j.cancelRequested})
		}
	}
	notes := map[int64]string{}
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		got, err := takeovers[kind](ctx, tx, byKind[kind])
		if err != nil {
			return nil, fmt.Errorf("take over %d %s jobs: %w", len(byKind[kind]), kind, err)
		}
		maps.Copy(notes, got)
	}
	return notes, nil
}

// add adds job j of dead process d to params as River's rescuer would give it back, and counts it;
// note, if any, ends the error River records.
func (r *SweepResult) add(params *riverdriver.JobRescueManyParams, j runningJob, d deadProcess, note string) error {
	now := d.sweptAt.UTC()
	state := rivertype.JobStateRetryable
	switch {
	case j.cancelRequested:
		state, r.Cancelled = rivertype.JobStateCancelled, r.Cancelled+1
	case j.attempt >= j.maxAttempts:
		state, r.Discarded = rivertype.JobStateDiscarded, r.Discarded+1
	default:
		r.Retried++
	}
	msg := fmt.Sprintf("rescued from process %s (%s on %s, pid %d), which %s", d.ID, d.Name, d.Host, d.PID, d.reason)
	if note != "" {
		msg += "; " + note
	}
	errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(j.attempt, 0), Error: msg})
	if err != nil {
		return fmt.Errorf("encode rescue error: %w", err)
	}
	var finalized *time.Time
	scheduled := now.Add(d.retryAfter)
	if state != rivertype.JobStateRetryable {
		finalized, scheduled = &now, j.scheduledAt
	}
	params.ID = append(params.ID, j.id)
	params.Error = append(params.Error, errData)
	params.FinalizedAt = append(params.FinalizedAt, finalized)
	params.ScheduledAt = append(params.ScheduledAt, scheduled)
	params.State = append(params.State, string(state))
	params.StuckHorizon = now.Add(time.Microsecond)
	r.Kinds[j.kind]++
	return nil
}

// runningJob is what a rescue needs of a running job.
type runningJob struct {
	id              int64
	kind            string
	owner           string
	attempt         int
	maxAttempts     int
	scheduledAt     time.Time
	cancelRequested bool
	args            json.RawMessage
}

// runningJobsOf reads the running jobs of schema whose current attempt is one of clients'. River
// appends a client's ID to attempted_by when it fetches a job, so the last element names the
// process working the current attempt. With lock (FOR NO KEY UPDATE) the rows are locked, so a
// job is either given back here or ended by its worker, not both half-way.
func runningJobsOf(ctx context.Context, tx pgx.Tx, schema string, clients []string, lock string) ([]runningJob, error) {
	rows, err := tx.Query(ctx, `SELECT id, kind, attempted_by[cardinality(attempted_by)], attempt, max_attempts,
			scheduled_at, metadata ? 'cancel_attempted_at', args
		FROM `+pgx.Identifier{schema, "river_job"}.Sanitize()+`
		WHERE state = 'running' AND attempted_by[cardinality(attempted_by)] = ANY($1)
		ORDER BY id `+lock, clients)
	if err != nil {
		return nil, fmt.Errorf("running jobs of %v: %w", clients, err)
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runningJob, error) {
		var j runningJob
		err := row.Scan(&j.id, &j.kind, &j.owner, &j.attempt, &j.maxAttempts, &j.scheduledAt, &j.cancelRequested, &j.args)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("running jobs of %v: %w", clients, err)
	}
	return jobs, nil
}

// riverDriverOf is River's driver executor on tx, for the one call the adapter makes.
func riverDriverOf(tx pgx.Tx) riverdriver.Executor {
	return riverpgxv5.New(nil).UnwrapExecutor(tx)
}
