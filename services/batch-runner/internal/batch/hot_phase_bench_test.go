package batch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"drover.dev/computehorde/minersim"
	"drover.dev/computehorde/synthetic"
	"drover.dev/shared/tracing"
)

// BenchmarkHotPhase runs whole batches against minersim and reports the hot phase's fairness
// next to a floor measured in the same round: one goroutine writing the same prepared frames to
// the same miners from one release, over connections that went through the batch's exchange
// before (see floor and offerAll). Every executor answers at one instant, so the
// completion-timestamp error is measured when all answers arrive within the same millisecond.
//
// Arrivals are minersim's kernel receive stamps (SO_TIMESTAMPNS), so the arrival spread is what
// the network delivered, not when minersim's readers got a core; and where there are at least
// two cores this process (and every validator-side process it starts) runs on one half of them
// and minersim on the other (see cores), so neither side's figure includes waiting for a core
// the other holds.
//
// Each size runs BENCH_ROUNDS rounds (default 5). A round is: a batch against a fresh fleet;
// the floor against that fleet; ComputeHorde's asyncio method (testdata/asyncio_validator.py)
// sending the floor's V0JobRequests over connections of its own, laid out as the floor's (one
// per miner), to the same fleet; then a batch
// against a second fresh fleet whose first 5 % of miners misbehave (see adversaries), whose
// honest executors' arrival spread is compared with the same miners' in the clean batch. Each
// round prints a line as it ends; then one line per figure gives the median over the rounds,
// each number taken separately (a ratio is the median of the rounds' ratios, not the medians'
// ratio) with the rounds' range beside it, and the verdicts on those medians. Peak RSS is the
// largest of the rounds.
//
// minersim runs as a separate process (BENCH_MINERSIM=inprocess runs it in this one, unpinned).
// Sizes come from BENCH_EXECUTORS (default "1000,5000") and BENCH_PER_MINER (executors per
// miner, default 10); BENCH_ADVERSARIES=0 leaves out the adversaries' batch. Run with
// -benchtime 1x. With the OTEL_* variables of a collector set (OTEL_EXPORTER_OTLP_ENDPOINT), each
// round's batch is traced as in a service, its stages exported as spans: the ratios then show what
// tracing costs the hot phase.
func BenchmarkHotPhase(b *testing.B) {
	raiseFileLimit(b)
	stopTracing, err := tracing.Start(b.Context(), "batch-runner-bench", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	require.NoError(b, err)
	b.Cleanup(func() { _ = stopTracing(context.Background()) })
	if tracing.Enabled() {
		fmt.Println("hot-phase: traced (OTEL_* variables set): each round's stages are spans")
	}
	perMiner := envInt(b, "BENCH_PER_MINER", 10)
	rounds := envInt(b, "BENCH_ROUNDS", 5)
	require.Positive(b, rounds, "BENCH_ROUNDS")
	withAdversaries := envInt(b, "BENCH_ADVERSARIES", 1) != 0
	bin, cpus := "", cores{note: "minersim in this process: not pinned"}
	if !inProcess() {
		bin, cpus = buildMinersim(b), splitCores()
	}
	if note := asyncioCheck(); note != "" {
		fmt.Printf("hot-phase: no asyncio comparison: %s\n", note)
	}
	for _, n := range envInts(b, "BENCH_EXECUTORS", []int{1000, 5000}) {
		b.Run(fmt.Sprintf("executors=%d", n), func(b *testing.B) {
			for b.Loop() {
				f := figures{executors: n, b: b, cores: cpus}
				rs := make([]round, rounds)
				for i := range rs {
					spec := fleetSpec{bin: bin, miners: (n + perMiner - 1) / perMiner, perMiner: perMiner, cpus: cpus.miners}
					rs[i] = hotPhaseRound(b, spec, n, cpus.validator)
					if withAdversaries {
						rs[i].adversary = adversaryRound(b, spec, n, rs[i].clean)
					}
					f.round(i+1, rounds, rs[i])
				}
				f.summary(rs)
			}
		})
	}
}

// answerAt is when every executor answers, after the first job request reached minersim; it
// must exceed minersim's arrival spread (~0.5 s at 5,000 executors on 2 cores) so that every
// job joins the same round.
const answerAt = 1500 * time.Millisecond

// benchPoWRange is the difficulty of the benchmark's proof-of-work jobs: some 3 µs of solving
// each, so that minersim solves them all before answerAt even on a loaded core (at 1,024, some
// 50 µs each, 10,000 of them made answers late on a loaded machine).
const benchPoWRange = 1 << 6

func benchConfig(b *testing.B) Config {
	b.Helper()
	return Config{
		Key:        aliceKey(b),
		Generators: Generators{"*": synthetic.PoWGenerator{Range: benchPoWRange, Limit: 5 * time.Second}},
		SpinUps:    map[string]time.Duration{"*": 3 * time.Second},
		MinSpinUp:  50 * time.Millisecond,

		ManifestTimeout: 20 * time.Second, ReadyGrace: 5 * time.Second, JobExtra: 2 * time.Second,
		ReceiptTimeout: 10 * time.Second, WriteTimeout: 5 * time.Second,
	}
}

// round is what one round measured: a batch against a fresh fleet, then the floor and the
// asyncio method against the same fleet, then a batch against a fleet with adversaries.
type round struct {
	send, arrival        spread
	completion           completion
	peakRSS, minersimRSS float64 // MiB; minersimRSS is 0 when minersim runs in this process
	rssReset             bool
	wall                 time.Duration // of batch.Run
	cpu                  usage         // used by each process during batch.Run
	mode                 string        // how minersim ran

	// asyncio is the arrival spread of ours against the asyncio method's in place of the
	// floor; asyncioSend is that method's send spread. Zero when it did not run.
	asyncio     spread
	asyncioSend time.Duration
	// clean is the clean batch's arrivals, which the adversaries' batch is compared with; sent
	// is their number (executors not ready in time got none) and verdicts the batch's reasons.
	clean    []minersim.Arrival
	sent     int
	verdicts map[Reason]int
	// right is the number of answers the batch judged right (ReasonSuccess).
	right int
	// adversary is the honest executors' arrival spread with adversaries (ours) and the same
	// miners' in the clean batch (floor). Zero when it did not run.
	adversary spread
}

// spread is a spread of ours and the floor's.
type spread struct{ ours, floor time.Duration }

func (s spread) ratio() float64 { return float64(s.ours) / float64(s.floor) }

// completionTarget is what the p99 completion error should not exceed: twice the floor's send
// spread of the same round.
func (r round) completionTarget() time.Duration { return 2 * r.send.floor }

func (r round) completionRatio() float64 {
	return float64(r.completion.p99) / float64(r.completionTarget())
}

func hotPhaseRound(b *testing.B, spec fleetSpec, executors int, validatorCPUs []int) round {
	b.Helper()
	fleet := startBenchFleet(b, spec)
	defer fleet.stop()
	cfg := benchConfig(b)
	r := round{mode: fleet.mode, rssReset: resetPeakRSS()}
	ctx, span := otel.Tracer("batch-runner-bench").Start(context.Background(), "hot phase round")
	u0, start := fleet.usage(), time.Now()
	res, err := Run(ctx, cfg, fleet.plan)
	u1 := fleet.usage()
	span.End()
	r.wall, r.peakRSS = time.Since(start), peakRSSMiB("self")
	r.cpu = usage{ours: u1.ours - u0.ours, minersim: u1.minersim - u0.minersim}
	require.NoError(b, err)
	r.clean = fleet.arrivals(b, "V0JobRequest", 0)
	// On a loaded machine a few executors are not ready in time; the floor and the asyncio
	// method then write each miner as many frames as the batch did (jobsPerMiner).
	r.sent, r.verdicts = len(r.clean), reasons(res)
	requireMost(b, executors, r.sent, "executors got their job; verdicts %v", r.verdicts)
	r.right = r.verdicts[ReasonSuccess]
	requireRight(b, r.sent, r.right, r.verdicts)
	r.completion = completionErrors(b, res, fleet.jobs(b))
	requireMost(b, r.sent, len(r.completion.errs), "answers were timed on both sides")
	r.send.ours, r.arrival.ours = res.SendSpread, arrivalSpread(r.clean)
	jobs := jobsPerMiner(fleet.plan, r.clean)
	r.send.floor, r.arrival.floor = floor(b, fleet, cfg.Key, jobs)
	if send, arrival, ok := asyncioMethod(b, fleet, cfg.Key, jobs, validatorCPUs); ok {
		r.asyncio, r.asyncioSend = spread{ours: r.arrival.ours, floor: arrival}, send
	}
	r.minersimRSS = fleet.minersimPeakRSSMiB()
	return r
}

// adversaryRound runs a batch against a fresh fleet whose first 5 % of miners misbehave and
// returns the honest executors' arrival spread against the same miners' in the clean batch.
func adversaryRound(b *testing.B, spec fleetSpec, executors int, clean []minersim.Arrival) spread {
	b.Helper()
	var honest int
	spec.behaviours, honest = adversaries(spec.miners, answerAt)
	fleet := startBenchFleet(b, spec)
	defer fleet.stop()
	res, err := Run(context.Background(), benchConfig(b), fleet.plan)
	require.NoError(b, err)
	got := honestArrivals(fleet.arrivals(b, "V0JobRequest", 0), honest)
	requireMost(b, executors-honest*spec.perMiner, len(got), "honest executors got their job; verdicts %v", reasons(res))
	requireRight(b, len(got), reasons(res)[ReasonSuccess], reasons(res))
	return spread{ours: arrivalSpread(got), floor: arrivalSpread(honestArrivals(clean, honest))}
}

// requireMost requires that at least nine in ten of want happened.
func requireMost(b *testing.B, want, got int, what string, args ...any) {
	b.Helper()
	require.GreaterOrEqual(b, 10*got, 9*want, append([]any{"%d of %d " + what, got, want}, args...)...)
}

// requireRight requires that no answer was judged wrong and some were judged right: minersim
// solves every job it is sent, so a wrong answer is a broken benchmark or a broken judge, and
// the round's figures are not to be trusted. Late answers (timeout, over_time_limit) are the
// machine's load on minersim's core, not the hot phase's subject; the round lines print them.
func requireRight[R ~string](b *testing.B, sent, right int, verdicts map[R]int) {
	b.Helper()
	require.Zero(b, verdicts[R(ReasonWrongAnswer)], "answers judged wrong (minersim solves every job); verdicts %v", verdicts)
	require.Positive(b, right, "none of %d answers judged right; verdicts %v", sent, verdicts)
}

// honestArrivals keeps the arrivals at miners from index honest on.
func honestArrivals(as []minersim.Arrival, honest int) []minersim.Arrival {
	return slices.DeleteFunc(slices.Clone(as), func(a minersim.Arrival) bool { return a.Miner < honest })
}

// jobsPerMiner counts the job requests each miner of the plan received.
func jobsPerMiner(plan Plan, arrivals []minersim.Arrival) []int {
	index := make(map[string]int, len(plan.Miners))
	for i, m := range plan.Miners {
		index[m.Hotkey] = i
	}
	jobs := make([]int, len(plan.Miners))
	for _, a := range arrivals {
		jobs[index[a.MinerHotkey]]++
	}
	return jobs
}

func arrivalSpread(as []minersim.Arrival) time.Duration {
	lo, hi := as[0].UnixNano, as[0].UnixNano
	for _, a := range as {
		lo, hi = min(lo, a.UnixNano), max(hi, a.UnixNano)
	}
	return time.Duration(hi - lo)
}

// completion holds, per answered job, our recorded end time minus the instant minersim read
// just before writing that answer, and the spread of minersim's answer writes.
type completion struct {
	errs       []time.Duration
	p50, p99   time.Duration
	sendSpread time.Duration
}

func completionErrors(b *testing.B, res *Result, jobs []minersim.JobRecord) completion {
	b.Helper()
	sent := map[string]int64{}
	var lo, hi int64
	for _, j := range jobs {
		if j.AnswerSentUnixNano == 0 {
			continue
		}
		sent[j.JobUUID] = j.AnswerSentUnixNano
		if lo == 0 || j.AnswerSentUnixNano < lo {
			lo = j.AnswerSentUnixNano
		}
		hi = max(hi, j.AnswerSentUnixNano)
	}
	var c completion
	for _, j := range res.Jobs {
		at, ok := sent[j.UUID]
		if !ok || j.EndAt.IsZero() {
			continue
		}
		c.errs = append(c.errs, time.Duration(j.EndAt.UnixNano()-at))
	}
	require.NotEmpty(b, c.errs, "no answer timed on both sides")
	slices.Sort(c.errs)
	c.p50, c.p99 = c.errs[len(c.errs)/2], c.errs[len(c.errs)*99/100]
	c.sendSpread = time.Duration(hi - lo)
	return c
}

func raiseFileLimit(b *testing.B) {
	b.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, name)
		return n
	}
	return def
}

func envInts(b *testing.B, name string, def []int) []int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for part := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		require.NoError(b, err, name)
		out = append(out, n)
	}
	return out
}
