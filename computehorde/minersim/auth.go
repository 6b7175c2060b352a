package minersim

import (
	"errors"
	"fmt"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
)

// authenticate checks the validator's first frame as a real miner does, then sends the
// manifest and replays what arrived before auth. It reports whether the validator was
// accepted; if not, the miner has already answered and closed.
func (c *conn) authenticate(auth *protocol.ValidatorAuthForMiner) bool {
	if err := auth.Verify(c.m.info.Hotkey, c.validator, time.Now()); err != nil {
		c.refuse(fmt.Sprintf("Validator %s not authenticated due to: %s", c.validator, authReason(err)))
		return false
	}
	c.authed = true
	b := c.cfg.Scenario.ForMiner(c.m.info.Index)
	c.emit(b, StageManifest, "", &protocol.V0ExecutorManifestRequest{Manifest: c.cfg.Manifest})
	for _, p := range c.pending {
		c.dispatch(p)
	}
	c.pending = nil
	return true
}

// authReason words a failed check for the validator's log.
func authReason(err error) string {
	switch {
	case errors.Is(err, protocol.ErrAuthTooOld):
		return "auth message too old"
	case errors.Is(err, protocol.ErrAuthWrongMiner):
		return "auth message is for another miner"
	case errors.Is(err, protocol.ErrAuthWrongValidator):
		return "validator hotkey does not match the url"
	case errors.Is(err, hotkey.ErrBadSignature), errors.Is(err, hotkey.ErrMalformedSignature):
		return "invalid signature"
	}
	return err.Error()
}

// dispatch handles one decoded frame of an authenticated connection and records its arrival.
func (c *conn) dispatch(p pendingFrame) {
	var uuid string
	switch m := p.msg.(type) {
	case *protocol.V0InitialJobRequest:
		uuid = m.JobUUID
		c.onInitial(m)
	case *protocol.V0JobAcceptedReceiptRequest:
		uuid = m.Payload.JobUUID
		c.onReceipt(&m.Payload, m.Signature, func(r *JobRecord, v string) { r.AcceptedReceipt = v })
	case *protocol.V0JobRequest:
		uuid = m.JobUUID
		c.onJobRequest(m, p.at)
	case *protocol.V0JobFinishedReceiptRequest:
		uuid = m.Payload.JobUUID
		c.onReceipt(&m.Payload, m.Signature, func(r *JobRecord, v string) { r.FinishedReceipt = v })
	case *protocol.V0MainHotkeyMessage:
		if m.MainHotkey == nil {
			main := c.m.info.Hotkey
			c.send(&protocol.V0MainHotkeyMessage{MainHotkey: &main})
		}
	}
	var executor string
	if j := c.jobs[uuid]; j != nil {
		executor = j.executor()
	}
	c.record(p, uuid, executor)
}
