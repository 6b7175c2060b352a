package batch

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/services/batch-runner/internal/barrier"
	"drover.dev/services/batch-runner/internal/minerconn"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// sendJobs is the hot phase. Every ready job's V0JobRequest is encoded and framed before the
// release, one buffer per miner in a random order; each miner's writer goroutine is parked on
// one gate; the gate opens once; one goroutine per core writes each miner's buffer in one
// system call (see releaseAll) and records the time before and after it. Then the answers are awaited, each until its time limit plus JobExtra.
// A shard of a sharded batch agrees its release instant with the other shards (Plan.Agree)
// between building its frames and parking its writers.
func (r *run) sendJobs(ctx context.Context) error {
	// The read deadline moves first: encoding (and a shard's agreement) must not eat into the
	// miners' time to answer.
	var longest time.Duration
	for _, j := range r.jobs {
		longest = max(longest, j.spec.TimeLimit)
	}
	for _, m := range r.miners {
		m.conn.SetReadDeadline(time.Now().Add(r.plan.AgreeWithin + longest + r.cfg.JobExtra + r.cfg.ReceiptTimeout + 2*r.cfg.WriteTimeout))
	}
	byMiner, ready, err := r.frames()
	if err != nil {
		return err
	}
	var sendAt time.Time
	if r.plan.Agree != nil {
		// A shard with nothing to send still agrees, so that the others need not wait for it.
		if sendAt, err = r.plan.Agree(ctx); err != nil {
			return fmt.Errorf("agree send instant: %w", err)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	r.prog.jobs.Store(int64(len(ready)))
	if r.plan.Quiet != nil {
		r.plan.Quiet(true)
	}
	release := r.releaseAll(ctx, byMiner, sendAt)
	if r.plan.Quiet != nil {
		r.plan.Quiet(false)
	}
	r.res.HotRelease = release
	sent := r.recordSpread(ready)
	r.prog.hotReleased(release, r.res.SendSpread, sent, len(ready)-sent)
	for _, j := range ready {
		if j.sendErr == nil {
			waitSlot(ctx, j, slotAnswer, j.beforeSend.Add(j.spec.TimeLimit+r.cfg.JobExtra))
		}
	}
	for _, j := range r.jobs {
		j.miner.mu.Lock()
		j.seal(slotAnswer)
		j.miner.mu.Unlock()
	}
	return ctx.Err()
}

// minerFrames is one miner's hot-phase write: its jobs and their frames, concatenated.
type minerFrames struct {
	jobs   []*job
	frames []byte
}

// frames encodes and frames every ready job's request; nothing of this happens after the release.
func (r *run) frames() (map[*miner]*minerFrames, []*job, error) {
	byMiner := map[*miner]*minerFrames{}
	var ready []*job
	for _, j := range r.jobs { // already in this batch's random order
		msg, _ := j.get(slotReadiness)
		switch msg.(type) {
		case *protocol.V0ExecutorReadyRequest, *protocol.V0StreamingJobReadyRequest:
		default:
			continue
		}
		payload, err := protocol.Encode(jobRequest(j))
		if err != nil {
			return nil, nil, fmt.Errorf("encode job request %s: %w", j.uuid, err)
		}
		mf := byMiner[j.miner]
		if mf == nil {
			mf = &minerFrames{}
			byMiner[j.miner] = mf
		}
		mf.jobs = append(mf.jobs, j)
		mf.frames = append(mf.frames, minerconn.MaskedFrame(payload)...)
		j.miner.mu.Lock()
		j.sent = true // from here a horde failure answers the job, not its readiness
		j.miner.mu.Unlock()
		ready = append(ready, j)
	}
	return byMiner, ready, nil
}

func jobRequest(j *job) *protocol.V0JobRequest {
	req := j.spec.Request
	msg := &protocol.V0JobRequest{
		JobUUID: j.uuid, ExecutorClass: j.class, DockerImage: req.DockerImage,
		DockerRunOptionsPreset: protocol.DockerRunOptionsPreset(req.DockerRunOptionsPreset),
		DockerRunCmd:           req.DockerRunCmd, Env: req.Env,
	}
	if req.RawScript != "" {
		script := req.RawScript
		msg.RawScript = &script
	}
	if req.Volume != nil {
		msg.Volume = &protocol.InlineVolume{Contents: req.Volume.Contents}
	}
	return msg
}

// releaseAll parks every writer on one gate, opens it at sendAt (at once when zero or past), and
// waits for every write to end (each bounded by the write deadline). A writer still busy with an
// earlier write is not waited for beyond WriteTimeout: its miner is slow, and only it pays. The
// gate opens even when ctx ends during the wait, so that no writer stays parked.
//
// The writes are one burst (minerconn.Burst): one goroutine per core (this one included) loops
// over its share of the miners making one non-blocking write each, as the bare write loop of the
// benchmark's floor does, instead of waking one writer per miner; a miner whose socket buffer is
// full gets the rest of its frames from its own writer.
func (r *run) releaseAll(ctx context.Context, byMiner map[*miner]*minerFrames, sendAt time.Time) time.Time {
	gate := barrier.NewGate()
	var burst minerconn.Burst
	var armed, sent sync.WaitGroup
	for m, mf := range byMiner {
		armed.Add(1)
		sent.Add(1)
		var once sync.Once
		m.conn.SendIn(&burst, gate.Done(), mf.frames, func() { once.Do(armed.Done) }, func(res minerconn.SendResult) {
			once.Do(armed.Done)
			for _, j := range mf.jobs {
				j.beforeSend, j.afterSend, j.sendErr = res.Before, res.After, res.Err
			}
			if res.Err != nil {
				r.events.Add(sysevent.TypeJobFailure, sysevent.MinerSendError, "job request send: "+res.Err.Error(),
					map[string]any{"miner_hotkey": m.Hotkey, "jobs": len(mf.jobs)})
			}
			sent.Done()
		})
	}
	waitTimeout(&armed, r.cfg.WriteTimeout)
	parts := runtime.GOMAXPROCS(0)
	for k := 1; k < parts; k++ {
		go func() {
			<-gate.Done()
			burst.Write(k, parts)
		}()
	}
	sleepSharp(ctx, sendAt)
	release := gate.Open()
	burst.Write(0, parts)
	sent.Wait()
	return release
}

// sharpness is how long before an agreed instant sleepSharp stops sleeping and polls the clock.
const sharpness = time.Millisecond

// sleepSharp sleeps until t more sharply than a timer: a timer's wake-up comes late by a
// scheduling delay that differs between shards, so it sleeps until just before t and polls the
// clock, yielding, for the rest. The zero time returns at once.
func sleepSharp(ctx context.Context, t time.Time) {
	if t.IsZero() || !sleepUntil(ctx, t.Add(-sharpness)) {
		return
	}
	for time.Now().Before(t) && ctx.Err() == nil {
		runtime.Gosched()
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// recordSpread computes max(after-send) − min(before-send), reports slow sends and returns how
// many of the job requests were written.
func (r *run) recordSpread(ready []*job) (sent int) {
	var first, last time.Time
	for _, j := range ready {
		if j.sendErr != nil || j.beforeSend.IsZero() {
			continue
		}
		sent++
		if first.IsZero() || j.beforeSend.Before(first) {
			first = j.beforeSend
		}
		if j.afterSend.After(last) {
			last = j.afterSend
		}
		if took := j.afterSend.Sub(j.beforeSend); took > r.cfg.SlowSend {
			r.events.Add(sysevent.TypeTelemetry, sysevent.SlowSend, fmt.Sprintf("job request send took %v", took),
				map[string]any{"miner_hotkey": j.miner.Hotkey, "job_uuid": j.uuid, "send_us": took.Microseconds()})
		}
	}
	if !first.IsZero() {
		r.res.SendSpread = last.Sub(first)
	}
	return sent
}
