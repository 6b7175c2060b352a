package batch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"drover.dev/computehorde/receipts"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// Plan is what phase 1 hands to phase 2: the miners, the metagraph's validators (to judge busy
// excuses) and the pregenerated jobs. Nothing in it can reach the database.
type Plan struct {
	BatchID    int64
	Miners     []Miner
	Validators map[string]receipts.Validator
	Jobs       *JobPool
	// Events is where the batch's system events go; the caller drains it on every exit path.
	Events *sysevent.Recorder
	// Progress is the live record Run keeps up to date; nil when nobody watches.
	Progress *Progress
	// Agree, when set, makes this run one shard of a batch. It is called once, when the shard's
	// availability stage has ended and its frames are built, and returns the instant at which
	// every shard of the batch opens its gate; the run sleeps until then on its own clock. It is
	// the one place phase 2 hands control back to its caller, always before the release, never
	// after: the caller agrees the instant through Postgres. Nil opens the gate at once.
	Agree func(ctx context.Context) (time.Time, error)
	// AgreeOffer, when set, is called once before the availability stage's initial requests
	// with this shard's longest spin-up, and returns the batch's: the instant its stagger starts
	// from and its longest spin-up, agreed by every shard. Nil staggers from this run's own start.
	AgreeOffer func(ctx context.Context, maxSpin time.Duration) (time.Time, time.Duration, error)
	// AgreeWithin bounds how long Agree or AgreeOffer may take; the miners' read deadlines are
	// moved past it.
	AgreeWithin time.Duration
	// Quiet, when set, is called with true just before the hot phase parks its writers for the
	// release and with false once the release is over, so that the caller holds back its own work
	// on this machine meanwhile (the lease's renewal): nothing but the release runs then.
	Quiet func(on bool)
}

// tracer makes the spans of a batch's stages; OpenTelemetry's no-op one unless the process traces.
var tracer = otel.Tracer("drover.dev/services/batch-runner/internal/batch")

// run is one batch in flight.
type run struct {
	cfg    Config
	plan   Plan
	events *sysevent.Recorder
	prog   *Progress
	res    *Result
	miners []*miner
	jobs   []*job     // every job, in the random order of this batch
	mu     sync.Mutex // guards res.Receipts
}

// Run runs phase 2. It returns the result even on error: the stages completed so far, every job
// judged with what is known, and the events; the caller writes what it can.
func Run(ctx context.Context, cfg Config, plan Plan) (*Result, error) {
	cfg = cfg.WithDefaults()
	r := &run{cfg: cfg, plan: plan, events: plan.Events, res: &Result{}}
	if r.events == nil {
		r.events = sysevent.New(nil)
	}
	if r.plan.Jobs == nil {
		r.plan.Jobs = &JobPool{}
	}
	r.prog = plan.Progress
	if r.prog == nil {
		r.prog = NewProgress(plan.BatchID, 0, 0)
	}
	r.prog.SetPhase(PhaseRun)
	r.prog.miners.Store(int64(len(plan.Miners)))
	defer r.closeAll()
	err := r.stages(ctx)
	r.judgeAll()
	if err == nil {
		err = r.stage(ctx, "receipts", r.sendFinishedReceipts)
	}
	r.res.Pregenerated = r.plan.Jobs.Pregenerated
	r.res.PregeneratedUsed, r.res.ExtraGenerated = r.plan.Jobs.Used, r.plan.Jobs.Extra
	r.telemetry(err)
	return r.res, err
}

func (r *run) stages(ctx context.Context) error {
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{"manifests", r.collectManifests},
		{"generate", r.assignJobs},
		{"availability", r.checkAvailability},
		{"hot", r.sendJobs},
	}
	for _, s := range steps {
		if err := r.stage(ctx, s.name, s.f); err != nil {
			return fmt.Errorf("stage %s: %w", s.name, err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after stage %s: %w", s.name, err)
		}
	}
	return nil
}

// stage runs one stage of the batch and records it: in the progress, in the result, and as a span
// of the batch's trace whose attributes are the stage's counts. The hot phase is one span: its
// frames are counted, never traced one by one.
func (r *run) stage(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, span := tracer.Start(ctx, "batch."+name, trace.WithAttributes(attribute.Int64("batch.id", r.plan.BatchID)))
	defer span.End()
	st := Stage{Name: name, StartedAt: time.Now()}
	r.prog.stageStarted(name, st.StartedAt)
	err := f(ctx)
	st.FinishedAt = time.Now()
	st.Counts = r.prog.stageCounts(name)
	r.prog.stageFinished(name, st.FinishedAt, st.Counts)
	r.res.Stages = append(r.res.Stages, st)
	if span.IsRecording() {
		for k, v := range st.Counts {
			span.SetAttributes(attribute.Int64("batch."+name+"."+k, v))
		}
		if name == "hot" {
			span.SetAttributes(attribute.Int64("batch.hot.send_spread_us", r.res.SendSpread.Microseconds()))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	return err
}

func (r *run) closeAll() {
	var wg sync.WaitGroup
	for _, m := range r.miners {
		if m.conn != nil {
			wg.Go(m.conn.Close)
		}
	}
	wg.Wait()
}

func (r *run) telemetry(err error) {
	counts := map[Outcome]int{}
	for _, j := range r.res.Jobs {
		counts[j.Outcome]++
	}
	data := map[string]any{"batch_id": r.plan.BatchID, "miners": len(r.plan.Miners), "jobs": len(r.res.Jobs),
		"outcomes": counts, "send_spread_us": r.res.SendSpread.Microseconds()}
	if err != nil {
		data["error"] = err.Error()
	}
	r.events.Add(sysevent.TypeTelemetry, sysevent.SyntheticBatch, "batch finished", data)
}

// shuffle randomises the order of s in place: miners and executors are contacted in a new order
// every batch so that nobody gains from being listed first (upstream's shuffle was a no-op).
func shuffle[T any](rnd io.Reader, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		n, err := rand.Int(rnd, big.NewInt(int64(i+1)))
		if err != nil {
			continue // a failing reader leaves the rest in place; crypto/rand does not fail
		}
		k := int(n.Int64())
		s[i], s[k] = s[k], s[i]
	}
}

// newUUID returns a random version 4 UUID.
func newUUID(rnd io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("read random uuid: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, hi>>16&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff), nil
}
