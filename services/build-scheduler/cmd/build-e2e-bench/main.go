// Command build-e2e-bench measures what a user gets from a submitted group: a 10,000-job group
// (the graph build-bench uses: a wide fan-out, diamonds, 20-deep chains) of instant commands is
// submitted over HTTP to a real build-scheduler process and run to its end by real build-worker
// processes: each build is a build_run River job, which River's fetch hands to a worker, and the
// worker's report makes its dependents ready, inserting theirs. It prints
//
//   - dispatch latency on chains that never outnumber the slots (a job's last dependency
//     reported to River's fetch of the job's River job, from the timestamps the database
//     records), against River's own insert → start latency of chained jobs (each job inserting
//     the next);
//
//   - throughput and CPU a job, in -pairs pairs: River's floor and the scheduler take turns on
//     the same warm database, the order flipped every pair, so that load from elsewhere, or from
//     the scheduler's own processes, lands on both sides of a pair; each side starts after a
//     VACUUM ANALYZE, so that neither pays for the other's dead row versions. The floor is River
//     clients with the workers' slots and settings whose jobs fork and exec the group's instant
//     command (River plus the process, as a build is); River's bare figure (jobs doing nothing)
//     runs beside it. Each side's CPU time is read from /proc: the machine's, and of it the
//     fleet's, this process's and Postgres's when it runs on this machine. The median ratio of
//     the pairs is the figure, printed with their range;
//
//   - one more pair on -spare-workers × -spare-slots slots (1 × 2), a load this machine can
//     carry with cores to spare, not judged: there each side's throughput is what its latency
//     allows, where on 8 slots of a 2-core machine it is what its CPU a job allows;
//
//   - the per-stage trace of a build's work (work directory, process start, run, reap, log
//     flush, report, commit; River's handover and the slots' idle time beside them), from the
//     workers' drover_build_worker_stage_seconds, whose total (Work starting → the report
//     committed) is the River fetch → report time the targets judge;
//
//   - the same group on -scale-workers × -scale-slots slots (8 × 8), with throughput, dispatch
//     latency and the peak of connections the database saw;
//
//   - a verdict per target of issue 34, item 6.
//
// -jobs runs groups of fewer jobs, a sample of the graph in its proportions, for a smoke run
// whose figures are not the ones the targets are set for.
//
//	go run ./cmd/build-e2e-bench -db postgres://postgres@127.0.0.1:5432/postgres
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/apiclient"
)

// The targets the issue set (issue 34, item 6).
const (
	targetExecRatio  = 0.50                  // end to end, of the fork/exec floor's throughput
	targetBareRatio  = 0.45                  // end to end, of River's bare floor's throughput
	targetCPURatio   = 2.0                   // the machine's CPU a build, of the fork/exec floor's a job
	targetPGCPURatio = 3.0                   // Postgres's CPU a build, of its CPU a job of the fork/exec floor
	targetRunP50     = 2 * time.Millisecond  // River's fetch → the report, 8 slots
	targetRunP99     = 20 * time.Millisecond //
	targetChainP50   = 1.5                   // chains' dispatch latency, of River's chained jobs'
	targetChainP99   = 2.0                   //
)

const (
	target   = "bench"       // the jobs' target: queue build_bench
	apiToken = "bench-token" // the bearer token the scheduler's API accepts (API_TOKENS)
	// connBudget is the connections a Postgres server of this project allows (max_connections
	// 100, 3 of them reserved): the scale run sizes its pools to fit with room to spare.
	connBudget = 97
)

type options struct {
	server                   string
	workers, slots           int
	scaleWorkers, scaleSlots int
	spareWorkers, spareSlots int
	pairs                    int
	chainDepth               int
	timeout                  time.Duration
	bin                      string
	keepLogs                 bool
	fetch                    queue.Fetch
	big                      bool
	chains                   int // of the latency runs: half the slots, so a slot is always free
	jobs                     int
}

func main() {
	var o options
	flag.StringVar(&o.server, "db", benchdb.Server(), "Postgres server (a scratch database is created and dropped)")
	flag.IntVar(&o.workers, "workers", 4, "build-worker processes")
	flag.IntVar(&o.slots, "slots", 2, "slots of each build-worker (BUILD_WORKER_SLOTS)")
	flag.IntVar(&o.pairs, "pairs", 3, "floor/scheduler pairs of the throughput comparison")
	flag.IntVar(&o.scaleWorkers, "scale-workers", 8, "build-worker processes of the scale run (0 skips it)")
	flag.IntVar(&o.scaleSlots, "scale-slots", 8, "slots of each build-worker of the scale run")
	flag.IntVar(&o.spareWorkers, "spare-workers", 1, "build-worker processes of the spare-cores pair (0 skips it)")
	flag.IntVar(&o.spareSlots, "spare-slots", 2, "slots of each build-worker of the spare-cores pair")
	flag.IntVar(&o.chainDepth, "chain-depth", 20, "depth of the chains of the latency run (one chain per slot)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a group after this long")
	flag.StringVar(&o.bin, "bin", "", "folder holding build-scheduler and build-worker (default: built into a temporary folder)")
	flag.BoolVar(&o.keepLogs, "keep-logs", false, "keep the processes' logs (their folder is printed)")
	flag.BoolVar(&o.big, "big", true, "run the 10,000-job groups (false: only the latency runs, to investigate)")
	flag.IntVar(&o.jobs, "jobs", 10000, "jobs of the big groups: fewer runs a sample of the 10,000-job graph in its proportions, for a smoke run")
	flag.DurationVar(&o.fetch.Cooldown, "fetch-cooldown", 5*time.Millisecond, "BUILD_WORKER_FETCH_COOLDOWN of the workers, and the River floor's FetchCooldown")
	flag.DurationVar(&o.fetch.PollInterval, "fetch-poll-interval", time.Second, "BUILD_WORKER_FETCH_POLL_INTERVAL of the workers, and the River floor's FetchPollInterval")
	flag.Parse()
	if o.server == "" { // -db "$DATABASE_URL" with DATABASE_URL unset
		o.server = benchdb.Server()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "build-e2e-bench:", err)
		os.Exit(1)
	}
}

// bench is one run's processes, database and figures.
type bench struct {
	o       options
	out     io.Writer
	pool    *pgxpool.Pool
	floor   *floor
	fleet   *fleet
	api     client
	workers []string      // the build-workers' base URLs
	group   []dag.JobSpec // the big groups' jobs
	command []string      // the groups' instant command
	// postmaster is the database server's process when it runs on this machine (0 otherwise),
	// whose CPU time the pairs count.
	postmaster int
}

func run(ctx context.Context, o options, out io.Writer) error {
	o.chains = max(1, o.workers*o.slots/2)
	fmt.Fprintf(out, "load average at the start: %s\n", loadAverage())
	dir, err := os.MkdirTemp("", "build-e2e-bench-")
	if err != nil {
		return err
	}
	if o.keepLogs {
		fmt.Fprintf(out, "process logs in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.bin == "" {
		o.bin = dir
		build := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", ".", "./cmd/build-worker")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build the commands (run from services/build-scheduler, or pass -bin): %w", err)
		}
	}
	pool, dbURL, drop, err := benchdb.Scratch(ctx, o.server, int32(o.workers*o.slots+o.workers+4), nil)
	if err != nil {
		return err
	}
	defer drop()
	group := sample(benchdb.Graph(target).Jobs, o.jobs)
	b := &bench{o: o, out: out, pool: pool, fleet: &fleet{dir: dir, bin: o.bin, dbURL: dbURL}, group: group, command: group[0].Command}
	defer b.fleet.stop()
	b.postmaster = postmasterPID(ctx, pool)
	if b.floor, err = startFloor(ctx, pool, o, b.command); err != nil {
		return fmt.Errorf("the River floor: %w", err)
	}
	defer func() { b.floor.stop() }() // spare replaces b.floor
	base, err := b.fleet.start(ctx, "build-scheduler", "BUILD_SCHEDULER", map[string]string{
		"MAX_JOBS_PER_GROUP": "10000", "BODY_LIMIT": fmt.Sprint(16 << 20), "DB_MAX_CONNS": "4",
	})
	if err != nil {
		return err
	}
	b.api = client{base: base, api: apiclient.Client{Token: apiToken}}
	if err := b.startWorkers(ctx, o.workers, o.slots, o.slots+4); err != nil {
		return err
	}
	v, err := b.latency(ctx)
	if err != nil {
		return err
	}
	if o.big {
		if err := b.pairs(ctx, &v); err != nil {
			return err
		}
		if o.spareWorkers > 0 {
			if err := b.spare(ctx, &v); err != nil {
				return err
			}
		}
		b.floor.stop()
		if o.scaleWorkers > 0 {
			if err := b.scale(ctx, &v); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "load average at the end: %s\n", loadAverage())
	v.print(out, o)
	return nil
}

// startWorkers starts n build-workers of slots slots, each with a pool of conns connections.
func (b *bench) startWorkers(ctx context.Context, n, slots, conns int) error {
	b.workers = nil
	for range n {
		base, err := b.fleet.start(ctx, "build-worker", "BUILD_WORKER", map[string]string{
			"TARGETS": target, "SLOTS": fmt.Sprint(slots), "DB_MAX_CONNS": fmt.Sprint(conns),
			"FETCH_COOLDOWN": b.o.fetch.Cooldown.String(), "FETCH_POLL_INTERVAL": b.o.fetch.PollInterval.String(),
		})
		if err != nil {
			return err
		}
		b.workers = append(b.workers, base)
	}
	return nil
}

// traced runs a group and returns the per-stage trace of its builds' work.
func (b *bench) traced(ctx context.Context, name string, chains bool) (result, stageTrace, error) {
	before, err := scrapeStages(ctx, b.workers)
	if err != nil {
		return result{}, nil, err
	}
	jobs := b.group
	if chains {
		jobs = benchdb.Chains(target, b.o.chains, b.o.chainDepth)
	}
	r, err := runGroup(ctx, b.api, b.pool, name, jobs, b.o.timeout)
	if err != nil {
		return r, nil, err
	}
	after, err := scrapeStages(ctx, b.workers)
	if err != nil {
		return r, nil, err
	}
	return r, after.since(before), nil
}

// latency measures the dispatch latency of chains, River's and the scheduler's; the runs also
// warm the database up for the pairs.
func (b *bench) latency(ctx context.Context) (verdicts, error) {
	o, out := b.o, b.out
	var v verdicts
	var err error
	if v.floorP50, v.floorP99, err = b.floor.chains(ctx, o.chains, o.chainDepth); err != nil {
		return v, fmt.Errorf("the River floor's chains: %w", err)
	}
	fmt.Fprintf(out, "River clients fetch with a cooldown of %s and poll every %s, the floor's as the workers'\n", o.fetch.Cooldown, o.fetch.PollInterval)
	fmt.Fprintf(out, "River floor: chained jobs (each inserts the next), %d chains of %d: insert → start p50 %s, p99 %s\n",
		o.chains, o.chainDepth, fmtMS(v.floorP50), fmtMS(v.floorP99))
	chains, trace, err := b.traced(ctx, "bench-chains", true)
	if err != nil {
		return v, err
	}
	v.chains = chains
	fmt.Fprintf(out, "scheduler: %d chains of %d on %d slots (a free slot for every ready job): dispatch latency (last dependency's report → River's fetch of the job) p50 %s, p99 %s (%d jobs)\n",
		o.chains, o.chainDepth, o.workers*o.slots, fmtMS(chains.p50), fmtMS(chains.p99), chains.measured)
	fmt.Fprintf(out, "  River's fetch → the report (the database's timestamps): p50 %s, p99 %s; the group took %s\n",
		fmtMS(chains.runP50), fmtMS(chains.runP99), chains.took.Round(time.Millisecond))
	trace.print(out, "chains")
	return v, nil
}

// pairs runs the throughput comparison: the floors and the scheduler take turns.
func (b *bench) pairs(ctx context.Context, v *verdicts) error {
	o, out := b.o, b.out
	fmt.Fprintf(out, "\nthroughput, %d pairs on %d workers × %d slots; River's floors run %q in each job (fork/exec) or nothing (bare):\n",
		o.pairs, o.workers, o.slots, strings.Join(b.command, " "))
	var total stageTrace
	var busy, took time.Duration // the slots' time spent on builds; the groups' time
	for i := range o.pairs {
		p, trace, err := b.pair(ctx, fmt.Sprintf("bench-%d-%d", len(b.group), i+1), i%2 == 1)
		if err != nil {
			return err
		}
		total = trace.plus(total)
		busy += trace.busy()
		took += p.ours.took
		v.pairs = append(v.pairs, p)
		fmt.Fprintf(out, "  pair %d (%s): %s\n", i+1, map[bool]string{false: "floors first", true: "scheduler first"}[i%2 == 1], p)
	}
	m := v.median()
	fmt.Fprintf(out, "  median pair's group: POST /v1/groups answered in %s; dispatch latency, slot wait included: p50 %s, p99 %s\n",
		m.ours.post.Round(time.Millisecond), fmtMS(m.ours.p50), fmtMS(m.ours.p99))
	total.print(out, fmt.Sprintf("the %d groups of %d on %d slots", o.pairs, len(b.group), o.workers*o.slots))
	fmt.Fprintf(out, "  the slots were working a build %.0f%% of the groups' time (the rest, waiting for River to complete the last and hand them the next)\n",
		100*busy.Seconds()/(took.Seconds()*float64(o.workers*o.slots)))
	return nil
}

// pair runs the bare floor, the fork/exec floor and the scheduler's group name, in that order or
// (schedulerFirst) the reverse, each after settle, and measures the CPU each took.
func (b *bench) pair(ctx context.Context, name string, schedulerFirst bool) (pair, stageTrace, error) {
	n := len(b.group)
	var p pair
	var trace stageTrace
	timed := func(use *cpuUse, f func() error) func() error {
		return func() error {
			if err := b.settle(ctx); err != nil {
				return err
			}
			before := cpuNow(b.fleet.pids(), b.postmaster)
			err := f()
			*use = cpuNow(b.fleet.pids(), b.postmaster).since(before)
			return err
		}
	}
	steps := []func() error{
		timed(&p.cpuBare, func() (err error) { p.bare, err = b.floor.throughput(ctx, n, false); return err }),
		timed(&p.cpuExec, func() (err error) { p.exec, err = b.floor.throughput(ctx, n, true); return err }),
		timed(&p.cpuOurs, func() (err error) { p.ours, trace, err = b.traced(ctx, name, false); return err }),
	}
	if schedulerFirst {
		slices.Reverse(steps)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return p, nil, err
		}
	}
	p.jobs, p.load, p.local = n, loadAverage(), b.postmaster > 0
	p.run50, p.run99 = trace["total"].quantile(0.5), trace["total"].quantile(0.99)
	return p, trace, nil
}

// spare runs one more pair on spareWorkers × spareSlots slots (1 × 2): a load this machine has
// cores to spare for, where each side's throughput is what its latency allows rather than what
// its CPU a job allows. Not judged (the targets are for 8 slots); it shows what the 8-slot
// ratios are made of.
func (b *bench) spare(ctx context.Context, v *verdicts) error {
	o, out := b.o, b.out
	so := o
	so.workers, so.slots = o.spareWorkers, o.spareSlots
	b.floor.stop()
	f, err := startFloor(ctx, b.pool, so, b.command)
	if err != nil {
		return fmt.Errorf("the River floor on %d × %d slots: %w", so.workers, so.slots, err)
	}
	f.rounds = b.floor.rounds // its rounds' jobs are told apart by their number
	b.floor = f
	b.fleet.stopWorkers()
	if err := b.startWorkers(ctx, so.workers, so.slots, so.slots+4); err != nil {
		return err
	}
	p, _, err := b.pair(ctx, fmt.Sprintf("bench-%d-spare", len(b.group)), false)
	if err != nil {
		return err
	}
	v.spare = &p
	fmt.Fprintf(out, "\nspare cores: 1 pair on %d × %d slots, a load this machine can carry with cores to spare:\n  %s\n", so.workers, so.slots, p)
	return nil
}

// settle vacuums and analyzes the scratch database before each side of a pair, so that each
// starts from the state autovacuum keeps a busy service in, whatever the side before it left:
// otherwise the autovacuum of one side's dead row versions (River's GIN indexes make river_job's
// costly) lands on whichever side runs next, and the CPU it takes on the other's account.
func (b *bench) settle(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("vacuum between the sides of a pair: %w", err)
	}
	return nil
}

// scale runs the same group on scaleWorkers × scaleSlots slots and counts connections.
func (b *bench) scale(ctx context.Context, v *verdicts) error {
	o, out := b.o, b.out
	b.fleet.stopWorkers()
	b.pool.Reset() // the floor's connections, idle now
	// Each worker's pool: a connection per slot (its report), one for River's fetches and
	// completions, the running marks and the announcements, and the one its liveness record's
	// renewals hold. River's listener takes one more out of the pool (it hijacks it), as the
	// scheduler's does; the scheduler's pool is 4 and this bench uses 2.
	conns := o.scaleSlots + 2
	fmt.Fprintf(out, "\nscale: %d build-worker processes × %d slots, pools of %d connections and a listener each, the scheduler's 4 and a listener, 2 for this bench: %d of a budget of %d\n",
		o.scaleWorkers, o.scaleSlots, conns, o.scaleWorkers*(conns+1)+5+2, connBudget)
	if err := b.startWorkers(ctx, o.scaleWorkers, o.scaleSlots, conns); err != nil {
		return err
	}
	count := watchConnections(ctx, b.pool)
	r, trace, err := b.traced(ctx, fmt.Sprintf("bench-%d-scale", len(b.group)), false)
	peak := count()
	if err != nil {
		return err
	}
	v.scale, v.scalePeak = &r, peak
	fmt.Fprintf(out, "scale: %d jobs on %d slots in %s = %.0f jobs/s; dispatch latency, slot wait included: p50 %s, p99 %s; River's fetch → the report p50 %s, p99 %s (stage total)\n",
		r.jobs, o.scaleWorkers*o.scaleSlots, r.took.Round(time.Millisecond), r.rate(), fmtMS(r.p50), fmtMS(r.p99),
		fmtMS(trace["total"].quantile(0.5)), fmtMS(trace["total"].quantile(0.99)))
	fmt.Fprintf(out, "  connections to the database at their peak: %d (budget %d); load %s\n", peak, connBudget, loadAverage())
	trace.print(out, fmt.Sprintf("%d slots", o.scaleWorkers*o.scaleSlots))
	return nil
}

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
