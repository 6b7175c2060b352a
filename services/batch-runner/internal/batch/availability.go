package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/computehorde/synthetic"
	"drover.dev/services/batch-runner/internal/barrier"
	"drover.dev/services/batch-runner/internal/minerconn"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// checkAvailability offers every job to its miner so that all executors are up at the same
// moment: a job of a class with a long spin-up is offered first, an always-on one last, each
// maxSpin − spin-up after a common start. Between two rendezvous every task signs its JobStarted
// receipt and serialises its request, so signing cost never skews the start. When every task is
// done early, the rest of the spin-up period is slept, so no executor gets the job before its
// class's spin-up has passed.
//
// A shard of a sharded batch first agrees the stagger with the other shards (Plan.AgreeOffer):
// one start and one longest spin-up for the whole batch, so an executor's initial request goes
// out at the same instant whichever shard tests it.
func (r *run) checkAvailability(ctx context.Context) error {
	maxSpin := r.cfg.MinSpinUp
	for _, j := range r.jobs {
		s, _ := r.cfg.spinUp(j.class)
		maxSpin = max(maxSpin, s)
	}
	st, err := r.agreeOffer(ctx, maxSpin)
	if err != nil {
		return err
	}
	r.extendReads(st.lead() + st.maxSpin + r.cfg.ReadyGrace + r.cfg.ManifestTimeout)
	start, signed := barrier.NewRendezvous(len(r.jobs)), barrier.NewRendezvous(len(r.jobs))
	var wg sync.WaitGroup
	for _, j := range r.jobs {
		wg.Go(func() {
			defer j.miner.recoverPanic("initial request " + j.uuid)
			r.offer(ctx, j, start, signed, st)
		})
	}
	wg.Wait()
	if t0 := st.base(start); !t0.IsZero() {
		sleepUntil(ctx, t0.Add(st.maxSpin))
	}
	for _, j := range r.jobs {
		j.miner.mu.Lock()
		j.seal(slotResponse)
		j.seal(slotReadiness)
		j.miner.mu.Unlock()
	}
	return nil
}

// stagger is when the availability stage's initial requests go out: each at base + maxSpin −
// its class's spin-up. t0 is the base a sharded batch agreed; zero means the start rendezvous.
type stagger struct {
	t0      time.Time
	maxSpin time.Duration
}

// lead is how long until an agreed base; zero for the start rendezvous, which opens at once.
func (st stagger) lead() time.Duration {
	if st.t0.IsZero() {
		return 0
	}
	return max(0, time.Until(st.t0))
}

func (st stagger) base(start *barrier.Rendezvous) time.Time {
	if st.t0.IsZero() {
		return start.OpenedAt()
	}
	return st.t0
}

// agreeOffer returns the stagger: this run's own, or the one its batch's shards agreed. A shard
// may wait for the others here, so the miners' read deadlines are moved past that first.
func (r *run) agreeOffer(ctx context.Context, maxSpin time.Duration) (stagger, error) {
	if r.plan.AgreeOffer == nil {
		return stagger{maxSpin: maxSpin}, nil
	}
	r.extendReads(r.plan.AgreeWithin + maxSpin + r.cfg.ReadyGrace + r.cfg.ManifestTimeout)
	t0, batchSpin, err := r.plan.AgreeOffer(ctx, maxSpin)
	if err != nil {
		return stagger{}, fmt.Errorf("agree offer instant: %w", err)
	}
	return stagger{t0: t0, maxSpin: max(maxSpin, batchSpin)}, nil
}

// extendReads moves every miner's read deadline to d from now.
func (r *run) extendReads(d time.Duration) {
	for _, m := range r.miners {
		m.conn.SetReadDeadline(time.Now().Add(d))
	}
}

// offer runs one job's availability check. It arrives at both rendezvous on every path.
func (r *run) offer(ctx context.Context, j *job, start, signed *barrier.Rendezvous, st stagger) {
	if err := start.ArriveAndWait(ctx); err != nil {
		signed.Arrive()
		return
	}
	spin, _ := r.cfg.spinUp(j.class)
	base := st.base(start)
	sendAt := base.Add(st.maxSpin - spin)
	payload, err := r.initialRequest(j, spin, sendAt)
	if err != nil {
		signed.Arrive()
		r.prog.responded(nil)
		r.events.Addf(sysevent.TypeValidatorFailure, sysevent.GenericError, "initial request %s: %v", j.uuid, err)
		return
	}
	if err := signed.ArriveAndWait(ctx); err != nil {
		return
	}
	if !sleepUntil(ctx, sendAt) {
		return
	}
	j.initialSentAt = time.Now()
	j.miner.conn.Send(payload, r.sendFailed(j.miner, "V0InitialJobRequest"))
	deadline := spinUpDeadline(base.Add(st.maxSpin), j.initialSentAt, spin)
	response := waitSlot(ctx, j, slotResponse, deadline)
	r.prog.responded(response)
	if _, ok := response.(*protocol.V0AcceptJobRequest); !ok {
		return
	}
	r.sendAccepted(j)
	r.prog.readied(waitSlot(ctx, j, slotReadiness, deadline.Add(r.cfg.ReadyGrace)))
}

// spinUpDeadline is when an executor must have answered its initial request: the stagger's
// common instant, or, when the request left late (this process was slow to sign or to wake, or
// a late shard's stagger began before its signing), its class's whole spin-up after it left. The
// validator's own lag never shortens the miner's spin-up.
func spinUpDeadline(common, sentAt time.Time, spin time.Duration) time.Time {
	if own := sentAt.Add(spin); own.After(common) {
		return own
	}
	return common
}

// initialRequest signs the JobStarted receipt and serialises V0InitialJobRequest. The receipt is
// stamped with the instant the request will be sent, not the instant it was signed: for an
// always-on class that is minutes later, and the receipt's ttl must cover the job from there.
func (r *run) initialRequest(j *job, spin time.Duration, sendAt time.Time) ([]byte, error) {
	msg := initialJobRequest(r.cfg.Key, j.miner.Hotkey, j.uuid, j.class, j.spec, spin, sendAt)
	j.started, j.startedSig = msg.JobStartedReceiptPayload, msg.JobStartedReceiptSignature
	r.addReceipt(j, receipts.TypeJobStarted, &j.started, j.startedSig, time.Time{}, nil)
	return protocol.Encode(msg)
}

// initialJobRequest is the V0InitialJobRequest of a job, with its JobStarted receipt stamped
// sendAt and signed by key.
func initialJobRequest(key *hotkey.Keypair, minerHotkey, uuid, class string, spec synthetic.Job, spin time.Duration, sendAt time.Time) *protocol.V0InitialJobRequest {
	started := receipts.JobStarted{
		Header: receipts.Header{
			JobUUID: uuid, MinerHotkey: minerHotkey, ValidatorHotkey: key.Address(), Timestamp: sendAt.UTC(),
		},
		ExecutorClass: class, IsOrganic: false, TTL: receipts.StartedTTL(spin, spec.TimeLimit),
	}
	image := spec.Initial.DockerImage
	timeout := int(spec.TimeLimit.Seconds())
	msg := &protocol.V0InitialJobRequest{
		JobUUID: uuid, ExecutorClass: class, DockerImage: &image, TimeoutSeconds: &timeout,
		JobStartedReceiptPayload: started, JobStartedReceiptSignature: receipts.Sign(&started, key),
	}
	if v := spec.Initial.Volume; v != nil {
		msg.Volume = &protocol.InlineVolume{Contents: v.Contents}
	}
	return msg
}

func (r *run) sendAccepted(j *job) {
	_, acceptedAt := j.get(slotResponse)
	msg := jobAcceptedReceipt(r.cfg.Key, j.miner.Hotkey, j.uuid, acceptedAt)
	j.miner.send(msg, func(res minerconn.SendResult) {
		r.addReceipt(j, receipts.TypeJobAccepted, &msg.Payload, msg.Signature, res.Before, res.Err)
	})
}

// jobAcceptedReceipt is the JobAccepted receipt of a job its miner accepted at acceptedAt,
// stamped now and signed by key.
func jobAcceptedReceipt(key *hotkey.Keypair, minerHotkey, uuid string, acceptedAt time.Time) *protocol.V0JobAcceptedReceiptRequest {
	p := receipts.JobAccepted{
		Header:       receipts.Header{JobUUID: uuid, MinerHotkey: minerHotkey, ValidatorHotkey: key.Address(), Timestamp: time.Now().UTC()},
		TimeAccepted: acceptedAt.UTC(), TTL: receipts.AcceptedTTL,
	}
	return &protocol.V0JobAcceptedReceiptRequest{Payload: p, Signature: receipts.Sign(&p, key)}
}

func (r *run) sendFailed(m *miner, what string) func(minerconn.SendResult) {
	return func(res minerconn.SendResult) {
		if res.Err != nil {
			r.events.Add(sysevent.TypeJobFailure, sysevent.MinerSendError, what+": "+res.Err.Error(), map[string]string{"miner_hotkey": m.Hotkey})
		}
	}
}

func (r *run) addReceipt(j *job, typ receipts.Type, p receipts.Payload, sig string, sentAt time.Time, err error) {
	raw, _ := json.Marshal(p)
	sr := SentReceipt{JobUUID: j.uuid, Miner: j.miner.Hotkey, Type: string(typ), Payload: raw, Signature: sig, SentAt: sentAt}
	if err != nil {
		sr.Error = err.Error()
	}
	r.mu.Lock()
	r.res.Receipts = append(r.res.Receipts, sr)
	r.mu.Unlock()
}

// waitSlot waits for a slot until deadline and returns its message, nil when none came.
func waitSlot(ctx context.Context, j *job, k slotKind, deadline time.Time) protocol.Message {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-j.slots[k].filled:
		msg, _ := j.get(k)
		return msg
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// sleepUntil sleeps until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
