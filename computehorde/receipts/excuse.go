package receipts

import "time"

// DefaultMinExcuseStake is the stake, in TAO, a validator needs for its receipts to excuse a
// busy miner.
const DefaultMinExcuseStake = 30_000

// DefaultExcuseLeeway is added to a receipt's ttl when deciding whether it still covered our job.
const DefaultExcuseLeeway = 2 * time.Second

// Reason says why a receipt does not excuse a busy miner. Each value is stable so the
// batch-runner can record it.
type Reason string

// The reasons Excuse.Check gives. ReasonValid means the receipt counts.
const (
	ReasonValid             Reason = "valid"
	ReasonNotJobStarted     Reason = "not_job_started"
	ReasonNotOrganic        Reason = "not_organic"
	ReasonOtherMiner        Reason = "other_miner"
	ReasonSameJob           Reason = "same_job"
	ReasonOtherClass        Reason = "other_class"
	ReasonUnknownValidator  Reason = "unknown_validator"
	ReasonInactiveValidator Reason = "inactive_validator"
	ReasonLowStake          Reason = "low_stake"
	ReasonNotYetStarted     Reason = "not_yet_started"
	ReasonExpired           Reason = "expired"
	ReasonBadSignature      Reason = "bad_signature"
	ReasonDuplicateJob      Reason = "duplicate_job"
)

// Validator is what Excuse needs to know about a validator from the metagraph.
type Validator struct {
	Stake  float64
	Active bool
}

// Excuse holds what a busy decline for one of our jobs is judged against.
type Excuse struct {
	// JobUUID, MinerHotkey and ExecutorClass describe our declined job.
	JobUUID       string
	MinerHotkey   string
	ExecutorClass string
	// StartedAt is the timestamp of our JobStarted receipt for the job.
	StartedAt time.Time
	// OwnHotkey is our validator address; our own receipts count whatever our stake.
	OwnHotkey string
	// MinStake is DefaultMinExcuseStake unless configured otherwise.
	MinStake float64
	// Leeway is DefaultExcuseLeeway unless configured otherwise.
	Leeway time.Duration
	// Lookup returns a validator's stake and status; false when it is not in the metagraph.
	Lookup func(hotkey string) (Validator, bool)
}

// Check judges one receipt on its own; CheckAll adds the duplicate rule. Cheap checks come
// first, the signature last.
func (e Excuse) Check(r Receipt) Reason {
	started, ok := r.Payload.(*JobStarted)
	switch {
	case !ok:
		return ReasonNotJobStarted
	case !started.IsOrganic:
		return ReasonNotOrganic
	case started.MinerHotkey != e.MinerHotkey:
		return ReasonOtherMiner
	case started.JobUUID == e.JobUUID:
		return ReasonSameJob
	case started.ExecutorClass != e.ExecutorClass:
		return ReasonOtherClass
	}
	if reason := e.checkIssuer(started.ValidatorHotkey); reason != ReasonValid {
		return reason
	}
	if reason := e.checkWindow(started); reason != ReasonValid {
		return reason
	}
	if r.VerifyValidator() != nil {
		return ReasonBadSignature
	}
	return ReasonValid
}

// checkIssuer accepts our own receipts and those of active validators with enough stake.
func (e Excuse) checkIssuer(validator string) Reason {
	if validator == e.OwnHotkey {
		return ReasonValid
	}
	info, ok := e.Lookup(validator)
	switch {
	case !ok:
		return ReasonUnknownValidator
	case !info.Active:
		return ReasonInactiveValidator
	case info.Stake < e.MinStake:
		return ReasonLowStake
	}
	return ReasonValid
}

// checkWindow requires timestamp < StartedAt < timestamp + ttl + leeway.
func (e Excuse) checkWindow(p *JobStarted) Reason {
	if !p.Timestamp.Before(e.StartedAt) {
		return ReasonNotYetStarted
	}
	end := p.Timestamp.Add(time.Duration(p.TTL)*time.Second + e.Leeway)
	if !e.StartedAt.Before(end) {
		return ReasonExpired
	}
	return ReasonValid
}

// CheckAll judges each receipt of a decline. A receipt for a job_uuid that an earlier valid
// receipt already covered is ReasonDuplicateJob, so one job cannot excuse two executors.
func (e Excuse) CheckAll(receipts []Receipt) []Reason {
	reasons := make([]Reason, len(receipts))
	seen := make(map[string]bool, len(receipts))
	for i, r := range receipts {
		reasons[i] = e.Check(r)
		if reasons[i] != ReasonValid {
			continue
		}
		uuid := r.Payload.ReceiptHeader().JobUUID
		if seen[uuid] {
			reasons[i] = ReasonDuplicateJob
		}
		seen[uuid] = true
	}
	return reasons
}

// CountValid is the number of receipts CheckAll finds valid.
func (e Excuse) CountValid(receipts []Receipt) int {
	n := 0
	for _, reason := range e.CheckAll(receipts) {
		if reason == ReasonValid {
			n++
		}
	}
	return n
}

// Excused reports whether a busy miner is excused: the jobs it accepted from us in this class
// plus the valid receipts cover all the executors it advertised for the class.
func Excused(acceptedJobs, validReceipts, executors int) bool {
	return acceptedJobs+validReceipts >= executors
}
