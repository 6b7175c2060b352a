package batch

import (
	"context"
	"sync"
	"time"

	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
	"drover.dev/services/batch-runner/internal/minerconn"
	"drover.dev/services/batch-runner/internal/sysevent"
)

// sendFinishedReceipts sends a JobFinished receipt for every job that got a finished or failed
// answer, after the timing-critical work is over. Every miner's receipts are signed and queued at
// once on its own writer (upstream sent them one by one); the stage waits for all of them, at
// most ReceiptTimeout.
func (r *run) sendFinishedReceipts(ctx context.Context) error {
	byUUID := map[string]JobResult{}
	for _, jr := range r.res.Jobs {
		byUUID[jr.UUID] = jr
	}
	var signers, sent sync.WaitGroup
	for _, j := range r.jobs {
		msg, _ := j.get(slotAnswer)
		switch msg.(type) {
		case *protocol.V0JobFinishedRequest, *protocol.V0JobFailedRequest:
		default:
			continue
		}
		sent.Add(1)
		signers.Go(func() {
			defer j.miner.recoverPanic("finished receipt " + j.uuid)
			r.sendFinished(j, byUUID[j.uuid], sent.Done)
		})
	}
	signers.Wait()
	done := make(chan struct{})
	go func() { sent.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.cfg.ReceiptTimeout):
		r.events.Addf(sysevent.TypeReceiptFailure, sysevent.ReceiptSendError, "receipts still unsent after %v", r.cfg.ReceiptTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (r *run) sendFinished(j *job, jr JobResult, done func()) {
	took := jr.TimeTook
	if took <= 0 {
		took = 0
	}
	p := &receipts.JobFinished{
		Header:      receipts.Header{JobUUID: j.uuid, MinerHotkey: j.miner.Hotkey, ValidatorHotkey: r.cfg.Key.Address(), Timestamp: time.Now().UTC()},
		TimeStarted: j.beforeSend.UTC(), TimeTookUS: took.Microseconds(), ScoreStr: receipts.FormatScore(jr.Score),
	}
	sig := receipts.Sign(p, r.cfg.Key)
	j.miner.send(&protocol.V0JobFinishedReceiptRequest{Payload: *p, Signature: sig}, func(res minerconn.SendResult) {
		r.addReceipt(j, receipts.TypeJobFinished, p, sig, res.Before, res.Err)
		if res.Err != nil {
			r.events.Add(sysevent.TypeReceiptFailure, sysevent.ReceiptSendError, res.Err.Error(), map[string]string{"miner_hotkey": j.miner.Hotkey, "job_uuid": j.uuid})
		}
		done()
	})
}
