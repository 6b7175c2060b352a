package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
)

// LivenessTimeoutDefault is how long a process may go without renewing its liveness record
// before any replica's sweep declares it dead and gives its running River jobs back. It is long
// against the renewal period (a sixth of it), so a process that is alive but slow, or whose
// database is briefly out of reach, is never swept.
const LivenessTimeoutDefault = 30 * time.Second

// ErrLivenessLost is the cause of a job's context that its process cancelled because the job is
// no longer its own: the process found its liveness record swept (another replica declared it
// dead and gave the job back), or it could not renew the record for so long that a sweep may do
// so before the next renewal. The job's worker stops; its work is done again by the new attempt.
var ErrLivenessLost = errors.New("process lost its liveness")

// ProcessConfig is what a process says about itself in its liveness record.
type ProcessConfig struct {
	// ID is the River client's ID (river.Config.ID): River appends it to a job's attempted_by when
	// the client fetches the job, which is how a sweep finds the jobs of a dead process.
	ID string

	// Name says what the process is in `drover status`: the service, or build-worker.
	Name string

	// Timeout is LIVENESS_TIMEOUT; LivenessTimeoutDefault when zero.
	Timeout time.Duration

	// Logger receives a line per sweep that found a dead process, and the process's own losses.
	Logger *slog.Logger

	// OnRescue is told how many jobs of each kind a sweep of this process gave back (metrics).
	OnRescue func(kind string, n int)

	// OnDead is told how many processes a sweep of this process declared dead (metrics).
	OnDead func(n int)

	// Takeovers, by kind, run in the transaction of every sweep, takeover and leave of this
	// process that gives back jobs of that kind (see Takeover).
	Takeovers map[string]Takeover
}

// Process is one River client process's liveness: a record in its service's processes table that
// it renews every Timeout/6 on the database clock, a sweep of the schema's dead processes run at
// the same pace (safe on every replica at once), and a River worker middleware that lets the
// process stop the jobs it lost. River's own rescuer knows only how long a job has run; a
// Process knows which process is gone, so a dead process's jobs come back within Timeout plus a
// renewal period, whatever their kind's timeout.
type Process struct {
	cfg    ProcessConfig
	pool   *pgxpool.Pool
	schema string
	host   string
	period time.Duration
	now    func() time.Time // the local clock that times renewals; stubbed in tests

	// conn is the pool's connection the process holds for its renewals and sweeps, so that jobs
	// holding every other connection never keep it from renewing. Only Run uses it.
	conn *pgxpool.Conn

	mu      sync.Mutex
	running map[attemptKey]context.CancelCauseFunc // this process's jobs
	renewed time.Time                              // when the last renewal that succeeded was sent
}

// attemptKey names one attempt of a job: a job given back and fetched again by the same process
// while its earlier attempt's worker is still returning is another entry.
type attemptKey struct {
	id      int64
	attempt int
}

// NewProcess returns the liveness of the process cfg.ID, working service svc's schema on pool.
// Register it before the River client starts, so that no job is fetched under an ID no record
// names, and pass Middleware to the client.
func NewProcess(pool *pgxpool.Pool, svc Service, cfg ProcessConfig) *Process {
	cfg.Timeout = cmp.Or(cfg.Timeout, LivenessTimeoutDefault)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	host, _ := os.Hostname()
	return &Process{
		cfg: cfg, pool: pool, schema: svc.Schema(), host: host, period: cfg.Timeout / 6,
		now: time.Now, running: map[attemptKey]context.CancelCauseFunc{},
	}
}

// ID is the River client ID the process's record is keyed by.
func (p *Process) ID() string { return p.cfg.ID }

// Register writes the process's liveness record. A record already there under the same ID is
// an earlier process's, restarted under it (a pod's WORKER_ID): its running jobs, which no job of
// this process can be yet, are given back at once, as at a clean stop, and the record replaced.
func (p *Process) Register(ctx context.Context) error { return p.register(ctx, p.pool) }

// register is Register on db: the pool at start, the held connection when the process registers
// again after it was declared dead.
func (p *Process) register(ctx context.Context, db DB) error {
	sent := p.now()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		res, err := p.takeOver(ctx, tx, "was replaced by a process started under the same id")
		if err != nil {
			return err
		}
		p.sweepOpts().report(ctx, res, "liveness: gave back the jobs of this process's previous run")
		_, err = tx.Exec(ctx, `INSERT INTO `+p.table()+` (id, name, host, pid, timeout) VALUES ($1, $2, $3, $4, $5)`,
			p.cfg.ID, p.cfg.Name, p.host, os.Getpid(), p.cfg.Timeout)
		return err
	})
	if err != nil {
		return fmt.Errorf("register process %s: %w", p.cfg.ID, err)
	}
	p.setRenewed(sent)
	return nil
}

// takeOver locks the record under the process's ID, if there is one, and gives back the jobs it
// holds with reason, deleting it, on tx.
func (p *Process) takeOver(ctx context.Context, tx pgx.Tx, reason string) (SweepResult, error) {
	mine, err := lockProcesses(ctx, tx, p.schema, `id = $1 FOR UPDATE`, p.cfg.ID)
	if err != nil || len(mine) == 0 {
		return SweepResult{}, err
	}
	mine[0].reason = reason
	return rescue(ctx, tx, p.schema, mine, p.cfg.Takeovers)
}

// Run renews the record and sweeps the schema's dead processes every Timeout/6 until ctx ends,
// on a connection of the pool it holds for that. Neither runs on a job's path: a process busy with
// its jobs renews all the same.
func (p *Process) Run(ctx context.Context) error {
	defer p.releaseConn()
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		p.renew(ctx)
		p.sweep(ctx)
	}
}

// held returns the connection the process holds, acquiring one when it holds none (at the first
// tick, or after the last one broke).
func (p *Process) held(ctx context.Context) (*pgxpool.Conn, error) {
	if p.conn != nil && p.conn.Conn().IsClosed() {
		p.releaseConn()
	}
	if p.conn == nil {
		conn, err := p.pool.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("acquire a connection: %w", err)
		}
		p.conn = conn
	}
	return p.conn, nil
}

func (p *Process) releaseConn() {
	if p.conn != nil {
		p.conn.Release()
		p.conn = nil
	}
}

// sweep sweeps the schema once, within a renewal period: a sweep that cannot finish by then is
// dropped, so that the next renewal is never late for it.
func (p *Process) sweep(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, p.period)
	defer cancel()
	conn, err := p.held(sctx)
	if err == nil {
		_, err = Sweep(sctx, conn, p.schema, p.sweepOpts())
	}
	if err != nil && ctx.Err() == nil {
		p.cfg.Logger.WarnContext(ctx, "liveness sweep", "error", err)
	}
}

// renew renews the record once. A record that is gone means a sweep declared the process dead and
// gave its jobs back: the process stops them and registers again, alive from now on. A renewal
// that fails leaves the record to age; once the last good one is older than the timeout less two
// periods, a sweep elsewhere may come before the next, so the process stops its jobs first.
func (p *Process) renew(ctx context.Context) {
	sent := p.now()
	rctx, cancel := context.WithTimeout(ctx, p.period)
	defer cancel()
	conn, err := p.held(rctx)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = conn.Exec(rctx, `UPDATE `+p.table()+` SET renewed_at = now() WHERE id = $1`, p.cfg.ID)
	}
	switch {
	case err == nil && tag.RowsAffected() == 1:
		p.setRenewed(sent)
	case err == nil:
		n := p.loseJobs(fmt.Errorf("%w: process %s was declared dead and its jobs were given back", ErrLivenessLost, p.cfg.ID))
		p.cfg.Logger.WarnContext(ctx, "liveness: this process was declared dead; stopped the jobs it lost and registered again",
			"process", p.cfg.ID, "jobs_stopped", n)
		if err := p.register(rctx, conn); err != nil && ctx.Err() == nil {
			p.cfg.Logger.WarnContext(ctx, "liveness", "error", err)
		}
	case ctx.Err() != nil: // stopping: the record stays until Leave removes it
	default:
		since := p.now().Sub(p.lastRenewed())
		p.cfg.Logger.WarnContext(ctx, "liveness: renewal failed", "process", p.cfg.ID, "since_last_ms", since.Milliseconds(), "error", err)
		if since >= p.cfg.Timeout-2*p.period {
			n := p.loseJobs(fmt.Errorf("%w: process %s could not renew its liveness for %s", ErrLivenessLost, p.cfg.ID, since.Round(time.Millisecond)))
			if n > 0 {
				p.cfg.Logger.WarnContext(ctx, "liveness: stopped this process's jobs before a sweep gives them back", "process", p.cfg.ID, "jobs_stopped", n)
			}
		}
	}
}

func (p *Process) setRenewed(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renewed = t
}

func (p *Process) lastRenewed() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.renewed
}

// loseJobs cancels the context of every job the process is working, with cause, and returns how
// many it cancelled.
func (p *Process) loseJobs(cause error) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.running {
		cancel(cause)
	}
	return len(p.running)
}

// Leave ends the process's liveness at a clean shutdown, after its River client stopped: it
// deletes the record and gives back at once the jobs the client could not stop, as a sweep would
// once the record had aged.
func (p *Process) Leave(ctx context.Context) error {
	var res SweepResult
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var err error
		res, err = p.takeOver(ctx, tx, "stopped cleanly")
		return err
	})
	if err != nil {
		return fmt.Errorf("leave process %s: %w", p.cfg.ID, err)
	}
	p.sweepOpts().report(ctx, res, "liveness: process left")
	return nil
}

func (p *Process) sweepOpts() SweepOptions {
	return SweepOptions{Logger: p.cfg.Logger, OnRescue: p.cfg.OnRescue, OnDead: p.cfg.OnDead, Takeovers: p.cfg.Takeovers}
}

func (p *Process) table() string { return pgx.Identifier{p.schema, "processes"}.Sanitize() }

// Middleware is the River worker middleware that gives each job a context the process cancels,
// with ErrLivenessLost as the cause, when the job is no longer its own.
func (p *Process) Middleware() rivertype.WorkerMiddleware { return (*processMiddleware)(p) }

type processMiddleware Process

func (*processMiddleware) IsMiddleware() bool { return true }

func (m *processMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	key := attemptKey{job.ID, job.Attempt}
	m.mu.Lock()
	m.running[key] = cancel
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.running, key)
		m.mu.Unlock()
		cancel(nil)
	}()
	return doInner(ctx)
}

var _ rivertype.WorkerMiddleware = (*processMiddleware)(nil)

// ProcessInfo is a liveness record as `drover status` and GET /v1/processes show it.
type ProcessInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	State     string    `json:"state"` // "live", or "dead" until a sweep gives its jobs back
	StartedAt time.Time `json:"started_at"`
	RenewedAt time.Time `json:"renewed_at"`
	Timeout   string    `json:"timeout"`
	// Running counts the River jobs whose current attempt is the process's.
	Running int `json:"running"`
}

// The states of a process in ProcessInfo and the drover_queue_processes metric.
const (
	ProcessLive = "live"
	ProcessDead = "dead"
)

// processesSQL lists the processes of a schema with their state and running jobs. It is a read
// of River's table, not a write; %[1]s is the schema.
const processesSQL = `SELECT p.id, p.name, p.host, p.pid,
		CASE WHEN p.renewed_at + p.timeout < now() THEN 'dead' ELSE 'live' END,
		p.started_at, p.renewed_at, p.timeout,
		(SELECT count(*) FROM %[1]s.river_job j WHERE j.state = 'running'
			AND j.attempted_by[cardinality(j.attempted_by)] = p.id)
	FROM %[1]s.processes p ORDER BY p.name, p.started_at, p.id LIMIT 1000`

// ListProcesses returns the liveness records of svc's schema: its live processes, and the dead
// ones no sweep has handled yet.
func ListProcesses(ctx context.Context, pool *pgxpool.Pool, svc Service) ([]ProcessInfo, error) {
	rows, err := pool.Query(ctx, fmt.Sprintf(processesSQL, pgx.Identifier{svc.Schema()}.Sanitize()))
	if err != nil {
		return nil, fmt.Errorf("list processes of %s: %w", svc, err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ProcessInfo, error) {
		var p ProcessInfo
		var timeout time.Duration
		err := row.Scan(&p.ID, &p.Name, &p.Host, &p.PID, &p.State, &p.StartedAt, &p.RenewedAt, &timeout, &p.Running)
		p.Timeout = timeout.String()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list processes of %s: %w", svc, err)
	}
	return list, nil
}
