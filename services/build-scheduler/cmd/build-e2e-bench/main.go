// Command build-e2e-bench measures what a user gets from a submitted group: a 10,000-job group
// (the graph build-bench uses: a wide fan-out, diamonds, 20-deep chains) of instant commands is
// submitted over HTTP to a real build-scheduler process and run to its end by real build-worker
// processes, through River tokens and the workers' reports. It prints
//
//   - throughput: jobs/s from the group's submission to its end, against River's own insert →
//     work → complete throughput with the same number of worker slots (the same River client
//     settings, one client per worker process) on the same database, in the same run;
//   - dispatch latency, p50 and p99: from a job's last dependency finishing to the job starting,
//     from the timestamps the database records. In the 10,000-job group most jobs wait for a
//     free slot (the fan-out makes 2,999 jobs ready at once), so that figure is mostly queueing;
//     the dispatch path itself is measured on chains that never outnumber the slots, against
//     River's own insert → start latency of chained jobs (each job inserting the next).
//
// Each figure is printed with its floor, their ratio and a verdict against the targets.
//
//	go run ./cmd/build-e2e-bench -db postgres://postgres@127.0.0.1:5432/postgres
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/benchdb"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/shared/apiclient"
)

// The targets the issue set.
const (
	targetRatio = 0.30
	targetP50   = 50 * time.Millisecond
	targetP99   = 250 * time.Millisecond
)

const (
	target = "bench" // the jobs' target: queue build_bench
	token  = "bench-token"
)

type options struct {
	server         string
	workers, slots int
	chainDepth     int
	timeout        time.Duration
	bin            string
	keepLogs       bool
	fetch          queue.Fetch
	big            bool
	chains         int // of the latency runs: half the slots, so a slot is always free
}

func main() {
	var o options
	flag.StringVar(&o.server, "db", benchdb.Server(), "Postgres server (a scratch database is created and dropped)")
	flag.IntVar(&o.workers, "workers", 4, "build-worker processes")
	flag.IntVar(&o.slots, "slots", 2, "slots of each build-worker (BUILD_WORKER_SLOTS)")
	flag.IntVar(&o.chainDepth, "chain-depth", 20, "depth of the chains of the latency run (one chain per slot)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a group after this long")
	flag.StringVar(&o.bin, "bin", "", "folder holding build-scheduler and build-worker (default: built into a temporary folder)")
	flag.BoolVar(&o.keepLogs, "keep-logs", false, "keep the processes' logs (their folder is printed)")
	flag.BoolVar(&o.big, "big", true, "run the 10,000-job group (false: only the floor and the latency run, to investigate)")
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

func run(ctx context.Context, o options, out io.Writer) error {
	slots := o.workers * o.slots
	o.chains = max(1, slots/2)
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
	pool, dbURL, drop, err := benchdb.Scratch(ctx, o.server, int32(slots+o.workers+4), nil)
	if err != nil {
		return err
	}
	defer drop()

	// River's floor first, on a quiet database: the same client settings and slots as the
	// build-workers, no scheduler.
	floor, err := riverFloor(ctx, pool, o, len(benchdb.Graph(target).Jobs))
	if err != nil {
		return fmt.Errorf("the River floor: %w", err)
	}
	fmt.Fprintf(out, "River clients fetch with a cooldown of %s and poll every %s, the floor's as the workers'\n", o.fetch.Cooldown, o.fetch.PollInterval)
	fmt.Fprintf(out, "River floor: %d jobs inserted at once, worked and completed by %d clients × %d slots in %s = %.0f jobs/s\n",
		floor.jobs, o.workers, o.slots, floor.took.Round(time.Millisecond), floor.rate())
	fmt.Fprintf(out, "River floor: chained jobs (each inserts the next), %d chains of %d: insert → start p50 %s, p99 %s\n",
		o.chains, o.chainDepth, fmtMS(floor.chainP50), fmtMS(floor.chainP99))

	fleet := &fleet{dir: dir, bin: o.bin, dbURL: dbURL}
	defer fleet.stop()
	base, err := fleet.start(ctx, "build-scheduler", "BUILD_SCHEDULER", map[string]string{
		"MAX_JOBS_PER_GROUP": "10000", "BODY_LIMIT": fmt.Sprint(16 << 20), "DB_MAX_CONNS": "4", "REPORT_WORKERS": "2",
	})
	if err != nil {
		return err
	}
	for range o.workers {
		_, err := fleet.start(ctx, "build-worker", "BUILD_WORKER", map[string]string{
			"TARGETS": target, "SLOTS": fmt.Sprint(o.slots), "DB_MAX_CONNS": fmt.Sprint(o.slots + 4),
			"FETCH_COOLDOWN": o.fetch.Cooldown.String(), "FETCH_POLL_INTERVAL": o.fetch.PollInterval.String(),
		})
		if err != nil {
			return err
		}
	}
	api := client{base: base, api: apiclient.Client{Token: token}}

	chains, err := runGroup(ctx, api, pool, "bench-chains", benchdb.Chains(target, o.chains, o.chainDepth), o.timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scheduler: %d chains of %d on %d slots (a free slot for every ready job): dispatch latency p50 %s, p99 %s (%d jobs)\n",
		o.chains, o.chainDepth, slots, fmtMS(chains.p50), fmtMS(chains.p99), chains.measured)
	fmt.Fprintf(out, "  of which last dependency finished → token fetched by River: p50 %s, p99 %s; token fetched → job claimed: p50 %s, p99 %s\n",
		fmtMS(chains.fetchP50), fmtMS(chains.fetchP99), fmtMS(chains.claimP50), fmtMS(chains.claimP99))
	fmt.Fprintf(out, "  a job's claim → its report (the instant command, its work directory, logs, the report statement): p50 %s, p99 %s; the group took %s\n",
		fmtMS(chains.runP50), fmtMS(chains.runP99), chains.took.Round(time.Millisecond))
	big := result{jobs: 0, took: time.Second}
	if o.big {
		if big, err = runGroup(ctx, api, pool, "bench-10000", benchdb.Graph(target).Jobs, o.timeout); err != nil {
			return err
		}
		fmt.Fprintf(out, "scheduler: %d jobs (POST /v1/groups answered in %s) run by %d build-worker processes × %d slots in %s = %.0f jobs/s\n",
			big.jobs, big.post.Round(time.Millisecond), o.workers, o.slots, big.took.Round(time.Millisecond), big.rate())
		fmt.Fprintf(out, "scheduler: dispatch latency in the 10,000-job group, waiting for a free slot included: p50 %s, p99 %s (%d jobs with dependencies)\n",
			fmtMS(big.p50), fmtMS(big.p99), big.measured)
		fmt.Fprintf(out, "  of which last dependency finished → token fetched by River: p50 %s, p99 %s; token fetched → job claimed: p50 %s, p99 %s\n",
			fmtMS(big.fetchP50), fmtMS(big.fetchP99), fmtMS(big.claimP50), fmtMS(big.claimP99))
		fmt.Fprintf(out, "  a job's claim → its report: p50 %s, p99 %s\n", fmtMS(big.runP50), fmtMS(big.runP99))
	}
	fmt.Fprintf(out, "load average at the end: %s\n", loadAverage())

	ratio := big.rate() / floor.rate()
	fmt.Fprintf(out, "\n%-34s %12s %12s %8s  %s\n", "end to end", "scheduler", "River floor", "ratio", "verdict")
	if o.big {
		fmt.Fprintf(out, "%-34s %12s %12s %7.0f%%  %s\n", "throughput, jobs/s", fmt.Sprintf("%.0f", big.rate()), fmt.Sprintf("%.0f", floor.rate()), 100*ratio,
			verdict(ratio >= targetRatio, fmt.Sprintf("target >= %.0f%% of the floor", 100*targetRatio)))
	}
	fmt.Fprintf(out, "%-34s %12s %12s %8s  %s\n", "dispatch p50", fmtMS(chains.p50), fmtMS(floor.chainP50), ratioOf(chains.p50, floor.chainP50),
		verdict(chains.p50 <= targetP50, "target <= "+fmtMS(targetP50)))
	fmt.Fprintf(out, "%-34s %12s %12s %8s  %s\n", "dispatch p99", fmtMS(chains.p99), fmtMS(floor.chainP99), ratioOf(chains.p99, floor.chainP99),
		verdict(chains.p99 <= targetP99, "target <= "+fmtMS(targetP99)))
	if o.big {
		fmt.Fprintf(out, "%-34s %12s %12s %8s  %s\n", "dispatch p50, 10,000-job group", fmtMS(big.p50), "", "", "slot wait included: no target")
		fmt.Fprintf(out, "%-34s %12s %12s %8s  %s\n", "dispatch p99, 10,000-job group", fmtMS(big.p99), "", "", "slot wait included: no target")
	}
	return nil
}

func verdict(met bool, target string) string {
	if met {
		return "met (" + target + ")"
	}
	return "MISSED (" + target + ")"
}

func ratioOf(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
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

// client calls the scheduler's API at base.
type client struct {
	base string
	api  apiclient.Client
}

func (c client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.api.Do(ctx, method, c.base+path, body, out)
	return err
}

// fleet runs the scheduler and worker processes on the scratch database.
type fleet struct {
	dir, bin, dbURL string
	procs           []process
	n               int
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// start runs binary with its settings (prefix_NAME) on a free port, waits for /readyz and
// returns its base URL.
func (f *fleet) start(ctx context.Context, binary, prefix string, settings map[string]string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	f.n++
	logPath := filepath.Join(f.dir, fmt.Sprintf("%s-%d.log", binary, f.n))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), filepath.Join(f.bin, binary)) //nolint:gosec // our own binaries
	cmd.Env = os.Environ()
	set := map[string]string{
		"DATABASE_URL": f.dbURL, "API_TOKENS": token, "HTTP_ADDR": addr, "LOG_LEVEL": "warn", "LOG_FORMAT": "text",
		"WORKER_ID": fmt.Sprintf("%s-%d", binary, f.n),
	}
	for k, v := range settings {
		set[k] = v
	}
	for k, v := range set {
		cmd.Env = append(cmd.Env, prefix+"_"+k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return "", fmt.Errorf("start %s: %w", binary, err)
	}
	p := process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // its log says why
		close(p.done)
	}()
	f.procs = append(f.procs, p)
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if apiclient.Answers(ctx, base+"/readyz") {
			return base, nil
		}
		exited := false
		select {
		case <-p.done:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) {
			tail, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("%s on %s not ready (exited: %t); its log:\n%s", binary, addr, exited, lastLines(tail, 20))
		}
	}
}

// stop ends every process with SIGTERM, as a deployment would, workers first.
func (f *fleet) stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		p := f.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func freeAddr() (string, error) {
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// floorResult is River's own figures.
type floorResult struct {
	jobs               int
	took               time.Duration
	chainP50, chainP99 time.Duration
}

func (r floorResult) rate() float64 { return float64(r.jobs) / r.took.Seconds() }

// floorArgs is a River job that does nothing; with Next > 0 it inserts the next job of its
// chain first.
type floorArgs struct {
	Chain int `json:"chain"`
	Next  int `json:"next"`
}

func (floorArgs) Kind() string { return "bench_floor" }

func (floorArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: floorQueue} }

const floorQueue = "river_floor"

type floorWorker struct {
	river.WorkerDefaults[floorArgs]
	pool *pgxpool.Pool
}

func (w *floorWorker) Work(ctx context.Context, job *river.Job[floorArgs]) error {
	if job.Args.Next == 0 {
		return nil
	}
	c := river.ClientFromContext[pgx.Tx](ctx)
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		_, err := c.InsertTx(ctx, tx, floorArgs{Chain: job.Args.Chain, Next: job.Args.Next - 1}, nil)
		return err
	})
}

// riverFloor runs o.workers River clients of o.slots workers each, built as the services build
// theirs (queue.NewClient) with the workers' fetch settings, on the build_scheduler schema of the
// scratch database: n jobs inserted at once and worked to completion, then o.chains chains of
// o.chainDepth jobs where each job inserts the next (its insert → start latency is
// River's own dispatch latency).
func riverFloor(ctx context.Context, pool *pgxpool.Pool, o options, n int) (floorResult, error) {
	clients, slots, depth := o.workers, o.slots, o.chainDepth
	workers := river.NewWorkers()
	river.AddWorker(workers, &floorWorker{pool: pool})
	var running []*queue.Client
	defer func() {
		for _, c := range running {
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.Stop(stopCtx)
			cancel()
		}
	}()
	for i := range clients {
		c, err := queue.NewClient(pool, queue.BuildScheduler, queue.ClientConfig{
			ID: fmt.Sprintf("river-floor-%d", i), Queues: map[string]int{floorQueue: slots}, Workers: workers, Fetch: o.fetch,
		})
		if err != nil {
			return floorResult{}, err
		}
		if err := c.Start(ctx); err != nil {
			return floorResult{}, err
		}
		running = append(running, c)
	}
	var r floorResult
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: floorArgs{}}
	}
	ins, err := queue.NewInserter(pool, queue.BuildScheduler)
	if err != nil {
		return r, err
	}
	if _, err := ins.InsertMany(ctx, params); err != nil {
		return r, fmt.Errorf("insert: %w", err)
	}
	if err := waitFloor(ctx, pool, n); err != nil {
		return r, err
	}
	var took float64
	err = pool.QueryRow(ctx, `SELECT extract(epoch FROM max(finalized_at) - min(created_at)) FROM river_job WHERE queue = $1`, floorQueue).Scan(&took)
	if err != nil {
		return r, err
	}
	r.jobs, r.took = n, seconds(took)

	chains := o.chains
	params = params[:chains]
	for i := range params {
		params[i] = river.InsertManyParams{Args: floorArgs{Chain: i + 1, Next: depth - 1}}
	}
	if _, err := ins.InsertMany(ctx, params); err != nil {
		return r, fmt.Errorf("insert chains: %w", err)
	}
	if err := waitFloor(ctx, pool, n+chains*depth); err != nil {
		return r, err
	}
	var p50, p99 float64
	err = pool.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY wait), percentile_cont(0.99) WITHIN GROUP (ORDER BY wait)
		FROM (SELECT extract(epoch FROM attempted_at - created_at) AS wait FROM river_job
			WHERE queue = $1 AND (args->>'chain')::int > 0 AND (args->>'next')::int < $2) w`, floorQueue, depth-1).Scan(&p50, &p99)
	if err != nil {
		return r, err
	}
	r.chainP50, r.chainP99 = seconds(p50), seconds(p99)
	return r, nil
}

// waitFloor waits until n floor jobs are completed.
func waitFloor(ctx context.Context, pool *pgxpool.Pool, n int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var done int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = $1 AND state = 'completed'`, floorQueue).Scan(&done); err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the River floor's jobs still not completed after 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
