package minersim

import (
	"strings"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/synthetic"
)

// machineSpecs is what every simulated executor reports: plainly not a GPU box.
var machineSpecs = protocol.Object(`{"cpu":{"count":1,"model":"minersim"},"gpu":{"count":0},"os":"minersim"}`)

// onJobRequest starts answering V0JobRequest on its own goroutine: solving takes milliseconds
// and answers may be delayed, and the reader must keep serving the other jobs meanwhile. at is
// the request's arrival, which opens a round of Behaviour.AnswerAt.
func (c *conn) onJobRequest(req *protocol.V0JobRequest, at int64) {
	j := c.jobs[req.JobUUID]
	if j == nil || j.requested || j.slot < 0 {
		return // unknown, declined or repeated job: upstream miners log and ignore these
	}
	j.requested = true
	var gate <-chan struct{}
	if d := time.Duration(j.behaviour.AnswerAt); d > 0 {
		gate = c.m.fleet.answerRounds.gate(at, d)
	}
	c.jobsWG.Go(func() { c.answer(j, req, gate) })
}

// answer executes the job and sends its answer: after AnswerDelay, or, when gate is set, as
// soon as the writer sees it closed (the frame waits in the writer, already encoded).
func (c *conn) answer(j *job, req *protocol.V0JobRequest, gate <-chan struct{}) {
	b := j.behaviour
	final := c.execute(j, b, req)
	if d := time.Duration(b.AnswerDelay); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
	}
	if finished, ok := final.(*protocol.V0JobFinishedRequest); ok && !b.silentAt(StageAnswer) && b.Disconnect != StageAnswer {
		// The progress messages a current miner sends before its answer.
		c.send(&protocol.V0VolumesReadyRequest{JobUUID: j.uuid})
		c.send(&protocol.V0ExecutionDoneRequest{JobUUID: j.uuid})
		c.send(&protocol.V0MachineSpecsRequest{JobUUID: j.uuid, Specs: protocol.MachineSpecs{Specs: machineSpecs}})
		j.update(func(r *JobRecord) { r.Stdout = finished.DockerProcessStdout })
	}
	frame := outFrame{sent: j.markSent}
	if gate != nil {
		// The executor stays busy until its answer is written, not merely queued.
		frame.gate, frame.sent = gate, func(at int64) { j.releaseSlot(); j.markSent(at) }
	}
	answer := "none"
	emitted := c.emitFrame(b, StageAnswer, j.uuid, final, frame)
	if emitted {
		answer = final.MessageType()
	}
	j.update(func(r *JobRecord) { r.Answer = answer })
	if !emitted || gate == nil {
		j.releaseSlot()
	}
}

// execute does the job as the behaviour says and returns the final message to send.
func (c *conn) execute(j *job, b Behaviour, req *protocol.V0JobRequest) protocol.Message {
	if b.Answer == AnswerFail {
		return jobFailed(j.uuid, "scripted failure")
	}
	if b.Answer == AnswerScripted {
		return jobFinished(j.uuid, b.Stdout)
	}
	spec := synthetic.JobRequest{
		DockerImage:            req.DockerImage,
		DockerRunOptionsPreset: string(req.DockerRunOptionsPreset),
		DockerRunCmd:           req.DockerRunCmd,
		Env:                    req.Env,
	}
	if req.RawScript != nil {
		spec.RawScript = *req.RawScript
	}
	if !synthetic.IsPoW(spec) {
		if b.NonPoW == AnswerScripted {
			return jobFinished(j.uuid, b.Stdout)
		}
		return jobFailed(j.uuid, "minersim runs only proof-of-work jobs")
	}
	stdout, err := synthetic.Solve(spec)
	if err != nil {
		return jobFailed(j.uuid, err.Error())
	}
	if b.Answer == AnswerWrong {
		// Appending a digit changes the number whatever the secret was.
		stdout = strings.TrimSpace(stdout) + "7\n"
	}
	return jobFinished(j.uuid, stdout)
}

func jobFinished(uuid, stdout string) *protocol.V0JobFinishedRequest {
	return &protocol.V0JobFinishedRequest{JobUUID: uuid, DockerProcessStdout: stdout}
}

func jobFailed(uuid, stderr string) *protocol.V0JobFailedRequest {
	status, stdout := 1, ""
	return &protocol.V0JobFailedRequest{
		JobUUID: uuid, Message: stderr, Reason: protocol.FailureNonzeroReturnCode, Stage: protocol.StageExecution,
		DockerProcessExitStatus: &status, DockerProcessStdout: &stdout, DockerProcessStderr: &stderr,
	}
}
