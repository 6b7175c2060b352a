package minersim

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
)

// ReceiptValid is the value of a JobRecord receipt field whose receipt verified.
const ReceiptValid = "valid"

// JobRecord is what a miner saw and did for one job, so tests can check both the validator's
// receipts and the miner's answers.
type JobRecord struct {
	Miner         int    `json:"miner"`
	MinerHotkey   string `json:"miner_hotkey"`
	Validator     string `json:"validator"`
	JobUUID       string `json:"job_uuid"`
	ExecutorClass string `json:"executor_class"`
	// Executor is "<class>/<slot>", empty when no executor was reserved.
	Executor string `json:"executor,omitempty"`
	// Response is what the miner answered the initial request with: "accepted",
	// "declined:<kind>", or "none" when a behaviour kept it quiet.
	Response string `json:"response"`
	// StartedReceipt, AcceptedReceipt and FinishedReceipt are ReceiptValid, the reason the
	// receipt was refused, or empty when it never came.
	StartedReceipt  string `json:"started_receipt"`
	AcceptedReceipt string `json:"accepted_receipt,omitempty"`
	FinishedReceipt string `json:"finished_receipt,omitempty"`
	// Ready is true once V0ExecutorReadyRequest went out.
	Ready bool `json:"ready"`
	// Answer is the message_type of the final answer sent, or "none".
	Answer string `json:"answer,omitempty"`
	Stdout string `json:"stdout,omitempty"`
	// AnswerSentUnixNano is the wall clock read just before the writer put the final answer
	// (V0JobFinishedRequest, V0JobFailedRequest or V0HordeFailedRequest) on the socket; the
	// first write when the answer is duplicated; zero until it was written. A validator's
	// receive timestamp minus this is its completion-timestamp error.
	AnswerSentUnixNano int64 `json:"answer_sent_unix_nano,omitempty"`
}

// job is one job offered to a miner over one connection.
type job struct {
	c     *conn
	uuid  string
	class string

	mu        sync.Mutex
	slot      int
	behaviour Behaviour
	released  bool
	requested bool
	rec       JobRecord
}

func (j *job) update(fn func(*JobRecord)) {
	j.mu.Lock()
	fn(&j.rec)
	j.mu.Unlock()
}

// markSent records when the final answer was written; the first write wins.
func (j *job) markSent(unixNano int64) {
	j.mu.Lock()
	if j.rec.AnswerSentUnixNano == 0 {
		j.rec.AnswerSentUnixNano = unixNano
	}
	j.mu.Unlock()
}

func (j *job) record() JobRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rec
}

func (j *job) executor() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rec.Executor
}

// releaseSlot frees the job's executor once, whoever gets there first: the answer or the end
// of the connection.
func (j *job) releaseSlot() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.released && j.slot >= 0 {
		j.c.m.release(j.class, j.slot)
	}
	j.released = true
}

// onInitial answers V0InitialJobRequest: decline when the receipt is bad, no executor is free
// or a behaviour says so; otherwise accept and start the simulated spin-up.
func (c *conn) onInitial(req *protocol.V0InitialJobRequest) {
	if _, dup := c.jobs[req.JobUUID]; dup {
		return // the first initial request of a job wins, as upstream miners keep it
	}
	j := &job{c: c, uuid: req.JobUUID, class: req.ExecutorClass, slot: -1, rec: JobRecord{
		Miner: c.m.info.Index, MinerHotkey: c.m.info.Hotkey, Validator: c.validator,
		JobUUID: req.JobUUID, ExecutorClass: req.ExecutorClass, Response: "none",
	}}
	c.jobs[req.JobUUID] = j
	c.m.fleet.addJob(j)
	minerBehaviour := c.cfg.Scenario.ForMiner(c.m.info.Index)
	if err := c.checkStarted(req); err != nil {
		j.update(func(r *JobRecord) { r.StartedReceipt = err.Error() })
		c.decline(j, minerBehaviour, DeclineInvalidSignature, req)
		return
	}
	j.update(func(r *JobRecord) { r.StartedReceipt = ReceiptValid })
	slot := c.m.reserve(req.ExecutorClass)
	if slot < 0 {
		c.decline(j, minerBehaviour, DeclineBusy, req)
		return
	}
	b := c.cfg.Scenario.ForExecutor(c.m.info.Index, req.ExecutorClass, slot)
	j.mu.Lock()
	j.slot, j.behaviour = slot, b
	j.rec.Executor = req.ExecutorClass + "/" + strconv.Itoa(slot)
	j.mu.Unlock()
	if b.Decline != "" {
		j.releaseSlot()
		c.decline(j, b, b.Decline, req)
		return
	}
	if c.emit(b, StageAccept, j.uuid, &protocol.V0AcceptJobRequest{JobUUID: j.uuid}) {
		j.update(func(r *JobRecord) { r.Response = "accepted" })
		c.jobsWG.Go(func() { c.spinUp(j) })
	}
}

// checkStarted verifies the JobStarted receipt as a miner does before reserving an executor.
func (c *conn) checkStarted(req *protocol.V0InitialJobRequest) error {
	p := &req.JobStartedReceiptPayload
	switch {
	case p.JobUUID != req.JobUUID:
		return fmt.Errorf("receipt job_uuid %s differs from the request's", p.JobUUID)
	case p.MinerHotkey != c.m.info.Hotkey:
		return fmt.Errorf("receipt is for miner %s", p.MinerHotkey)
	case p.ValidatorHotkey != c.validator:
		return fmt.Errorf("receipt is from validator %s, not %s", p.ValidatorHotkey, c.validator)
	case p.ExecutorClass != req.ExecutorClass:
		return fmt.Errorf("receipt class %s differs from the request's %s", p.ExecutorClass, req.ExecutorClass)
	}
	return receipts.Verify(p, c.validator, req.JobStartedReceiptSignature)
}

// onReceipt verifies a JobAccepted or JobFinished receipt and notes the verdict on its job.
func (c *conn) onReceipt(p receipts.Payload, signature string, set func(*JobRecord, string)) {
	h := p.ReceiptHeader()
	j := c.jobs[h.JobUUID]
	if j == nil {
		return // a receipt for a job this connection never saw: upstream logs and ignores it
	}
	verdict := ReceiptValid
	switch {
	case h.MinerHotkey != c.m.info.Hotkey:
		verdict = "receipt is for miner " + h.MinerHotkey
	case h.ValidatorHotkey != c.validator:
		verdict = "receipt is from validator " + h.ValidatorHotkey
	default:
		if err := receipts.Verify(p, c.validator, signature); err != nil {
			verdict = err.Error()
		}
	}
	j.update(func(r *JobRecord) { set(r, verdict) })
}

// spinUp waits the simulated spin-up, then reports the executor ready, or failed to start
// when the behaviour answers horde_failed.
func (c *conn) spinUp(j *job) {
	t := time.NewTimer(c.cfg.SpinUp)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
		return
	}
	b := j.behaviour
	if b.Answer == AnswerHordeFailed {
		msg := &protocol.V0HordeFailedRequest{
			JobUUID: j.uuid, ReportedBy: protocol.ParticipantMiner, Message: "Executor failed to start",
			Reason: protocol.HordeExecutorSpinupFailed,
		}
		if c.emitFrame(b, StageReady, j.uuid, msg, outFrame{sent: j.markSent}) {
			j.update(func(r *JobRecord) { r.Answer = msg.MessageType() })
		}
		j.releaseSlot()
		return
	}
	if c.emit(b, StageReady, j.uuid, &protocol.V0ExecutorReadyRequest{JobUUID: j.uuid}) {
		j.update(func(r *JobRecord) { r.Ready = true })
	}
}
