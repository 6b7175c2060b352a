package minersim

import (
	"fmt"
	"time"

	"drover.dev/computehorde/hotkey"
	"drover.dev/computehorde/protocol"
	"drover.dev/computehorde/receipts"
)

// Decline kinds (Behaviour.Decline). The busy_* kinds other than busy_valid attach receipts
// that each break exactly one rule of reference section 4, so a validator can be tested on
// every rule; busy_valid attaches receipts that excuse the miner.
const (
	DeclineNoReason             = "no_reason" // reason "unknown", no receipts
	DeclineBusy                 = "busy"      // reason "busy", no receipts
	DeclineBusyValid            = "busy_valid"
	DeclineBusyWrongType        = "busy_wrong_type"    // JobAccepted payloads
	DeclineBusyNotOrganic       = "busy_not_organic"   // is_organic false
	DeclineBusyOtherMiner       = "busy_other_miner"   // another miner's hotkey
	DeclineBusySameJob          = "busy_same_job"      // the declined job's own uuid
	DeclineBusyOtherClass       = "busy_other_class"   // a different executor class
	DeclineBusyFuture           = "busy_future"        // issued after our JobStarted
	DeclineBusyExpired          = "busy_expired"       // ttl + leeway ended before our JobStarted
	DeclineBusyBadSignature     = "busy_bad_signature" // validator signature over other bytes
	DeclineBusyInactive         = "busy_inactive_validator"
	DeclineBusyLowStake         = "busy_low_stake" // validator stake below 30,000
	DeclineBusyUnknownValidator = "busy_unknown_validator"
	DeclineInvalidSignature     = "invalid_signature"
	DeclineNoMinerForJob        = "no_miner_for_job"
	DeclineValidatorBlacklisted = "validator_blacklisted"
)

// busyReceiptTTL is the ttl of the receipts busy declines carry, in seconds.
const busyReceiptTTL = 60

// DeclineKinds lists every Behaviour.Decline value.
func DeclineKinds() []string {
	return []string{
		DeclineNoReason, DeclineBusy, DeclineBusyValid, DeclineBusyWrongType, DeclineBusyNotOrganic,
		DeclineBusyOtherMiner, DeclineBusySameJob, DeclineBusyOtherClass, DeclineBusyFuture,
		DeclineBusyExpired, DeclineBusyBadSignature, DeclineBusyInactive, DeclineBusyLowStake,
		DeclineBusyUnknownValidator, DeclineInvalidSignature, DeclineNoMinerForJob,
		DeclineValidatorBlacklisted,
	}
}

func (c *conn) decline(j *job, b Behaviour, kind string, req *protocol.V0InitialJobRequest) {
	msg, err := c.declineMessage(kind, req)
	if err != nil {
		c.cfg.Logger.Error("build decline", "kind", kind, "err", err)
		msg = &protocol.V0DeclineJobRequest{JobUUID: req.JobUUID, Reason: protocol.RejectionBusy}
	}
	if c.emit(b, StageAccept, j.uuid, msg) {
		j.update(func(r *JobRecord) { r.Response = "declined:" + kind })
	}
}

func (c *conn) declineMessage(kind string, req *protocol.V0InitialJobRequest) (*protocol.V0DeclineJobRequest, error) {
	msg := &protocol.V0DeclineJobRequest{JobUUID: req.JobUUID, Reason: protocol.RejectionBusy}
	switch kind {
	case DeclineNoReason:
		msg.Reason = protocol.RejectionUnknown
	case DeclineBusy:
	case DeclineInvalidSignature:
		msg.Reason = protocol.RejectionInvalidSignature
	case DeclineNoMinerForJob:
		msg.Reason = protocol.RejectionNoMinerForJob
	case DeclineValidatorBlacklisted:
		msg.Reason = protocol.RejectionValidatorBlacklisted
	default:
		rs, err := c.busyReceipts(kind, req)
		if err != nil {
			return nil, err
		}
		msg.Receipts = rs
	}
	return msg, nil
}

// busyReceipts builds one receipt per executor of the class, enough to excuse the miner when
// they are valid whatever else it accepted.
func (c *conn) busyReceipts(kind string, req *protocol.V0InitialJobRequest) ([]receipts.Receipt, error) {
	issuer := c.receiptIssuer(kind)
	if issuer == nil {
		return nil, fmt.Errorf("no validator key for %s receipts: add one to Config.Validators", kind)
	}
	n := max(len(c.m.slots[req.ExecutorClass]), 1)
	out := make([]receipts.Receipt, 0, n)
	for range n {
		out = append(out, c.busyReceipt(kind, req, issuer))
	}
	return out, nil
}

func (c *conn) receiptIssuer(kind string) *hotkey.Keypair {
	vs := c.m.fleet.validators
	switch kind {
	case DeclineBusyUnknownValidator:
		return vs.unknown
	case DeclineBusyInactive:
		return vs.issuer(c.validator, func(v Validator) bool { return v.Inactive })
	case DeclineBusyLowStake:
		return vs.issuer(c.validator, func(v Validator) bool {
			return !v.Inactive && v.Stake < receipts.DefaultMinExcuseStake
		})
	}
	return vs.issuer(c.validator, func(v Validator) bool {
		return !v.Inactive && v.Stake >= receipts.DefaultMinExcuseStake
	})
}

// busyReceipt is an organic JobStarted receipt for another job of the same class that began a
// second before ours, then broken as kind says.
func (c *conn) busyReceipt(kind string, req *protocol.V0InitialJobRequest, issuer *hotkey.Keypair) receipts.Receipt {
	ours := req.JobStartedReceiptPayload.Timestamp.UTC()
	p := &receipts.JobStarted{
		Header: receipts.Header{
			JobUUID: newUUID(), MinerHotkey: c.m.info.Hotkey, ValidatorHotkey: issuer.Address(),
			Timestamp: ours.Add(-time.Second),
		},
		ExecutorClass: req.ExecutorClass, IsOrganic: true, TTL: busyReceiptTTL,
	}
	var payload receipts.Payload = p
	minerKey := c.m.key
	switch kind {
	case DeclineBusyWrongType:
		payload = &receipts.JobAccepted{Header: p.Header, TimeAccepted: p.Timestamp, TTL: busyReceiptTTL}
	case DeclineBusyNotOrganic:
		p.IsOrganic = false
	case DeclineBusyOtherMiner:
		// The fleet holds this key, so the receipt is one the other miner could really show.
		minerKey = c.m.fleet.validators.unknown
		p.MinerHotkey = minerKey.Address()
	case DeclineBusySameJob:
		p.JobUUID = req.JobUUID
	case DeclineBusyOtherClass:
		p.ExecutorClass = otherClass(req.ExecutorClass)
	case DeclineBusyFuture:
		p.Timestamp = ours.Add(5 * time.Second)
	case DeclineBusyExpired:
		p.Timestamp = ours.Add(-(busyReceiptTTL + 10) * time.Second)
	}
	signature := receipts.Sign(payload, issuer)
	if kind == DeclineBusyBadSignature {
		forged := *p
		forged.TTL++
		signature = receipts.Sign(&forged, issuer)
	}
	return receipts.Receipt{Payload: payload, ValidatorSignature: signature, MinerSignature: receipts.Sign(payload, minerKey)}
}

func otherClass(class string) string {
	if class == protocol.DefaultExecutorClass {
		return "always_on.llm.a6000"
	}
	return protocol.DefaultExecutorClass
}
