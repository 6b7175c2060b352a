package minersim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Stage is a point of a miner's side of the protocol at which a behaviour takes effect. Stages
// are ordered: silence from a stage on also silences every later one.
type Stage string

// The stages, in protocol order: the manifest after auth, the answer to V0InitialJobRequest
// (accept or decline), V0ExecutorReadyRequest after the spin-up, and the job's final answer.
const (
	StageNone     Stage = ""
	StageManifest Stage = "manifest"
	StageAccept   Stage = "accept"
	StageReady    Stage = "ready"
	StageAnswer   Stage = "answer"
)

var stageOrder = []Stage{StageManifest, StageAccept, StageReady, StageAnswer}

func (s Stage) rank() int { return slices.Index(stageOrder, s) }

// Answers a miner gives to V0JobRequest (Behaviour.Answer).
const (
	AnswerSolve       = "solve"        // solve the job for real (default)
	AnswerWrong       = "wrong"        // send V0JobFinishedRequest with a wrong stdout
	AnswerFail        = "fail"         // send V0JobFailedRequest (nonzero_return_code)
	AnswerHordeFailed = "horde_failed" // send V0HordeFailedRequest(executor_spinup_failed) instead of ready
	AnswerScripted    = "scripted"     // send V0JobFinishedRequest with Behaviour.Stdout
)

// Behaviour scripts how a miner, or one executor of it, departs from the happy path. The zero
// value is a well-behaved miner. Fields combine: a miner can answer late and twice.
type Behaviour struct {
	// Decline declines every initial request with the given kind instead of accepting; see
	// DeclineKinds.
	Decline string `json:"decline,omitempty"`
	// Answer is what the executor answers a job request with; empty means AnswerSolve.
	Answer string `json:"answer,omitempty"`
	// NonPoW is the answer to a job minersim cannot solve (any job but proof-of-work, such as
	// hashcat, which takes a GPU minutes): AnswerFail (the default) or AnswerScripted.
	NonPoW string `json:"non_pow,omitempty"`
	// Stdout is the stdout sent by AnswerScripted.
	Stdout string `json:"stdout,omitempty"`
	// AnswerDelay postpones the final answer, making it late when it exceeds the job's limit.
	AnswerDelay Duration `json:"answer_delay,omitempty"`
	// AnswerAt sends the final answer at one fleet-wide instant: the arrival of the first
	// V0JobRequest of a round plus AnswerAt. Every executor with this behaviour answers at the
	// same wall-clock instant, whenever its own request arrived, which is how a benchmark
	// measures the validator's receive timestamps when all executors answer within the same
	// millisecond. A round ends at its instant; the next V0JobRequest starts a new one. The
	// progress messages go out at once; only the final frame waits, already encoded, and each
	// connection writes its due answers in one system call.
	AnswerAt Duration `json:"answer_at,omitempty"`
	// Silent sends nothing from this stage on; the connection stays open and is still read.
	Silent Stage `json:"silent,omitempty"`
	// Disconnect closes the connection when this stage's message is due.
	Disconnect Stage `json:"disconnect,omitempty"`
	// Malformed sends a frame that is not valid JSON just before this stage's message.
	Malformed Stage `json:"malformed,omitempty"`
	// Oversize sends a frame of Config.OversizeBytes bytes just before this stage's message.
	Oversize Stage `json:"oversize,omitempty"`
	// UnknownJob sends this stage's message for a random job_uuid just before the real one.
	UnknownJob Stage `json:"unknown_job,omitempty"`
	// Duplicate sends this stage's message twice, back to back in one write.
	Duplicate Stage `json:"duplicate,omitempty"`
	// StopReading stops reading the socket once this stage's message is sent, so the
	// validator's writes eventually block; the miner also shrinks its receive buffer.
	StopReading Stage `json:"stop_reading,omitempty"`
	// Slowloris dribbles this stage's frame onto the socket one byte per DribbleEvery.
	Slowloris Stage `json:"slowloris,omitempty"`
	// DribbleEvery is the pause between slowloris bytes; zero means 100 ms.
	DribbleEvery Duration `json:"dribble_every,omitempty"`
}

// Duration is a time.Duration written as in Go ("1.5s") in scenario files and flags.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1.5s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string such as "1.5s" or "250ms".
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"1.5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("parse duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// silentAt reports whether b sends nothing at stage s.
func (b Behaviour) silentAt(s Stage) bool {
	return b.Silent != StageNone && s.rank() >= b.Silent.rank()
}

func (b Behaviour) dribbleEvery() time.Duration {
	if b.DribbleEvery <= 0 {
		return 100 * time.Millisecond
	}
	return time.Duration(b.DribbleEvery)
}

// stopsReading reports whether any stage of b stops reading, so the listener can shrink the
// receive buffer of the miner's connections before the handshake.
func (b Behaviour) stopsReading() bool { return b.StopReading != StageNone }

// Validate reports the first field holding a value minersim does not know.
func (b Behaviour) Validate() error {
	if b.Decline != "" && !slices.Contains(DeclineKinds(), b.Decline) {
		return fmt.Errorf("unknown decline %q (known: %s)", b.Decline, strings.Join(DeclineKinds(), ", "))
	}
	answers := []string{"", AnswerSolve, AnswerWrong, AnswerFail, AnswerHordeFailed, AnswerScripted}
	if !slices.Contains(answers, b.Answer) {
		return fmt.Errorf("unknown answer %q", b.Answer)
	}
	if !slices.Contains([]string{"", AnswerFail, AnswerScripted}, b.NonPoW) {
		return fmt.Errorf("unknown non_pow %q (fail or scripted)", b.NonPoW)
	}
	stages := map[string]Stage{
		"silent": b.Silent, "disconnect": b.Disconnect, "malformed": b.Malformed, "oversize": b.Oversize,
		"unknown_job": b.UnknownJob, "duplicate": b.Duplicate, "stop_reading": b.StopReading, "slowloris": b.Slowloris,
	}
	for name, s := range stages {
		if s != StageNone && s.rank() < 0 {
			return fmt.Errorf("%s: unknown stage %q (manifest, accept, ready or answer)", name, s)
		}
	}
	if b.AnswerAt != 0 && b.AnswerDelay != 0 {
		return fmt.Errorf("answer_at and answer_delay exclude each other")
	}
	if b.AnswerAt < 0 || b.AnswerDelay < 0 {
		return fmt.Errorf("answer_at and answer_delay must not be negative")
	}
	if b.UnknownJob == StageManifest {
		return fmt.Errorf("unknown_job: the manifest carries no job_uuid")
	}
	return nil
}
