package batch

import (
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// judgeAll seals every job and gives it a verdict. It runs after the hot phase, or after a
// failed stage with whatever is known, so a failed batch still reports each job.
func (r *run) judgeAll() {
	accepted := map[Pair]int{}
	for _, j := range r.jobs {
		j.miner.mu.Lock()
		for k := range j.slots {
			j.seal(slotKind(k))
		}
		j.miner.mu.Unlock()
		if msg, _ := j.get(slotResponse); msg != nil {
			if _, ok := msg.(*protocol.V0AcceptJobRequest); ok {
				accepted[Pair{j.miner.Hotkey, j.class}]++
			}
		}
	}
	executors := map[Pair]int{}
	for _, e := range r.res.Manifests {
		executors[Pair{e.Miner, e.Class}] = e.Tested
	}
	for _, j := range r.jobs {
		f := r.factsOf(j)
		if d, ok := f.response.(*protocol.V0DeclineJobRequest); ok && d.Reason == protocol.RejectionBusy {
			pair := Pair{j.miner.Hotkey, j.class}
			valid := r.excuse(j).CountValid(d.Receipts)
			f.excused = receipts.Excused(accepted[pair], valid, executors[pair])
		}
		v := judge(f)
		r.res.Jobs = append(r.res.Jobs, r.jobResult(j, v))
		r.verdictEvent(j, v)
	}
}

func (r *run) factsOf(j *job) facts {
	resp, _ := j.get(slotResponse)
	ready, _ := j.get(slotReadiness)
	answer, answerAt := j.get(slotAnswer)
	return facts{
		response: resp, readiness: ready, answer: answer, answerAt: answerAt,
		sent: j.sent && !j.beforeSend.IsZero(), sendErr: j.sendErr, beforeSend: j.beforeSend,
		timeLimit: j.spec.TimeLimit, verify: j.spec.Verify,
	}
}

func (r *run) excuse(j *job) receipts.Excuse {
	return receipts.Excuse{
		JobUUID: j.uuid, MinerHotkey: j.miner.Hotkey, ExecutorClass: j.class, StartedAt: j.started.Timestamp,
		OwnHotkey: r.cfg.Key.Address(), MinStake: r.cfg.ExcuseMinStake, Leeway: receipts.DefaultExcuseLeeway,
		Lookup: func(hotkey string) (receipts.Validator, bool) {
			v, ok := r.plan.Validators[hotkey]
			return v, ok
		},
	}
}

func (r *run) jobResult(j *job, v verdict) JobResult {
	_, respAt := j.get(slotResponse)
	_, readyAt := j.get(slotReadiness)
	_, endAt := j.get(slotAnswer)
	return JobResult{
		UUID: j.uuid, Miner: j.miner.Hotkey, Class: j.class, Generator: j.spec.Generator,
		Outcome: v.outcome, Reason: v.reason, Score: v.score, Detail: v.detail,
		InitialSentAt: j.initialSentAt, ResponseAt: respAt, ReadyAt: readyAt,
		BeforeSend: j.beforeSend, AfterSend: j.afterSend, EndAt: endAt,
		TimeTook: v.timeTook, TimeLimit: j.spec.TimeLimit,
	}
}

// eventSubtype maps a failure reason to upstream's event subtype.
var eventSubtype = map[Reason]sysevent.Subtype{
	ReasonDeclined: sysevent.JobRejected, ReasonBusyUnexcused: sysevent.JobRejected,
	ReasonNoResponse: sysevent.JobNotStarted, ReasonNotReady: sysevent.JobNotStarted,
	ReasonExecutorFailed: sysevent.JobNotStarted, ReasonHordeFailed: sysevent.HordeFailed,
	ReasonTimeout: sysevent.JobExecutionTimeout, ReasonOverTimeLimit: sysevent.JobExecutionTimeout,
	ReasonSendError: sysevent.MinerSendError,
}

func (r *run) verdictEvent(j *job, v verdict) {
	data := map[string]any{"miner_hotkey": j.miner.Hotkey, "job_uuid": j.uuid, "executor_class": j.class, "reason": v.reason}
	switch v.outcome {
	case OutcomeCompleted:
		r.events.Add(sysevent.TypeJobSuccess, sysevent.Success, "job completed", data)
	case OutcomeExcused:
		r.events.Add(sysevent.TypeJobFailure, sysevent.JobExcused, "busy decline excused by receipts", data)
	default:
		sub, ok := eventSubtype[v.reason]
		if !ok {
			sub = sysevent.Failure
		}
		r.events.Add(sysevent.TypeJobFailure, sub, v.detail, data)
	}
}
