package batch

import (
	"fmt"
	"time"

	"drover.dev/computehorde/protocol"
)

// Reason says why a job ended as it did: a stable string stored with each job.
type Reason string

// The reasons.
const (
	ReasonNoResponse     Reason = "no_response"
	ReasonDeclined       Reason = "declined"
	ReasonBusyUnexcused  Reason = "busy_unexcused"
	ReasonBusyExcused    Reason = "busy_excused"
	ReasonNotReady       Reason = "not_ready"
	ReasonExecutorFailed Reason = "executor_failed"
	ReasonHordeFailed    Reason = "horde_failed"
	ReasonSendError      Reason = "send_error"
	ReasonTimeout        Reason = "timeout"
	ReasonJobFailed      Reason = "job_failed"
	ReasonOutOfOrder     Reason = "out_of_order"
	ReasonWrongAnswer    Reason = "wrong_answer"
	ReasonOverTimeLimit  Reason = "over_time_limit"
	ReasonNotConnected   Reason = "not_connected"
	ReasonSuccess        Reason = "success"
)

// Reasons returns every reason.
func Reasons() []Reason {
	return []Reason{
		ReasonNoResponse, ReasonDeclined, ReasonBusyUnexcused, ReasonBusyExcused, ReasonNotReady,
		ReasonExecutorFailed, ReasonHordeFailed, ReasonSendError, ReasonTimeout, ReasonJobFailed,
		ReasonOutOfOrder, ReasonWrongAnswer, ReasonOverTimeLimit, ReasonNotConnected, ReasonSuccess,
	}
}

// facts is what a verdict is judged on, copied out of a job once its slots are sealed.
type facts struct {
	response, readiness, answer protocol.Message
	answerAt                    time.Time
	sent                        bool
	sendErr                     error
	beforeSend                  time.Time
	timeLimit                   time.Duration
	verify                      func(stdout string) bool
	// excused is whether a busy decline's receipts excuse it; only read for busy declines.
	excused bool
}

// verdict is a judged job.
type verdict struct {
	outcome  Outcome
	reason   Reason
	detail   string
	score    float64
	timeTook time.Duration
}

func failed(reason Reason, detail string) verdict {
	return verdict{outcome: OutcomeFailed, reason: reason, detail: detail}
}

// judge applies upstream's order: busy decline → excused if the receipts excuse it, else fail;
// any other decline → fail; no response → timed out; the executor never ready → fail; JobFailed
// → fail; time_took ≤ 0 → fail "out of order"; wrong answer or over the limit → fail; else 1.
func judge(f facts) verdict {
	switch r := f.response.(type) {
	case nil:
		return failed(ReasonNoResponse, "no accept or decline before the spin-up deadline")
	case *protocol.V0DeclineJobRequest:
		if r.Reason != protocol.RejectionBusy {
			return failed(ReasonDeclined, fmt.Sprintf("declined (%s) %s", r.Reason, r.Message))
		}
		if f.excused {
			return verdict{outcome: OutcomeExcused, reason: ReasonBusyExcused, score: 1}
		}
		return failed(ReasonBusyUnexcused, fmt.Sprintf("busy with %d receipts that do not excuse it", len(r.Receipts)))
	}
	switch r := f.readiness.(type) {
	case nil:
		return failed(ReasonNotReady, "no ready message before the spin-up deadline")
	case *protocol.V0HordeFailedRequest:
		return failed(ReasonHordeFailed, fmt.Sprintf("%s: %s", r.Reason, r.Message))
	case *protocol.V0ExecutorFailedRequest, *protocol.V0StreamingJobNotReadyRequest:
		return failed(ReasonExecutorFailed, "executor failed to start")
	}
	if f.sendErr != nil || !f.sent {
		return failed(ReasonSendError, fmt.Sprint("job request not delivered: ", f.sendErr))
	}
	return judgeAnswer(f)
}

func judgeAnswer(f facts) verdict {
	var stdout string
	switch r := f.answer.(type) {
	case nil:
		return failed(ReasonTimeout, "no answer before the job deadline")
	case *protocol.V0JobFailedRequest:
		return failed(ReasonJobFailed, fmt.Sprintf("%s at %s: %s", r.Reason, r.Stage, r.Message))
	case *protocol.V0HordeFailedRequest:
		return failed(ReasonHordeFailed, fmt.Sprintf("%s: %s", r.Reason, r.Message))
	case *protocol.V0JobFinishedRequest:
		stdout = r.DockerProcessStdout
	}
	took := f.answerAt.Sub(f.beforeSend)
	v := failed("", "")
	v.timeTook = took
	switch {
	case f.beforeSend.IsZero() || took <= 0:
		v.reason, v.detail = ReasonOutOfOrder, fmt.Sprintf("time_took %v ≤ 0: out of order", took)
	case !f.verify(stdout):
		v.reason, v.detail = ReasonWrongAnswer, "stdout does not match the expected answer"
	case took > f.timeLimit:
		v.reason, v.detail = ReasonOverTimeLimit, fmt.Sprintf("took %v, limit %v", took, f.timeLimit)
	default:
		v.outcome, v.reason, v.score = OutcomeCompleted, ReasonSuccess, 1
	}
	return v
}
