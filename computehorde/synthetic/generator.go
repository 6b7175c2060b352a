package synthetic

import (
	"crypto/subtle"
	"io"
	"strings"
	"time"
	"unicode"
)

// Docker run option presets a job request may name. The executor maps them onto docker flags;
// nvidia_all exposes every GPU to the job container.
const (
	PresetNvidiaAll = "nvidia_all"
	PresetNone      = "none"
)

// Generator builds synthetic jobs of one kind. Implementations are safe for concurrent use, so a
// batch can pregenerate jobs for many executors in parallel.
type Generator interface {
	// Name identifies the kind of job, for logs and stored results. It never changes for a kind.
	Name() string

	// TimeLimit is how long an executor may take to run a job of this kind, from the job request
	// to the final answer. It is the same for every job the generator makes.
	TimeLimit() time.Duration

	// Generate builds one job for one executor of the miner with the given hotkey, drawing all
	// randomness from rnd. It returns an error only when rnd fails.
	Generate(minerHotkey, executorClass string, rnd io.Reader) (Job, error)
}

// NeedsGPU reports whether g's jobs need a GPU (they name the nvidia_all preset): such a job is
// only sent to an executor class that has one. A generator says so by a NeedsGPU method.
func NeedsGPU(g Generator) bool {
	n, ok := g.(interface{ NeedsGPU() bool })
	return ok && n.NeedsGPU()
}

// InlineVolume is a volume carried inside the message itself: a zip archive, base64-encoded with
// the standard alphabet, that the executor unpacks into /volume.
type InlineVolume struct {
	Contents string
}

// InitialRequest holds the generator's part of the initial job request: what the executor needs
// before the job is revealed, so it can pull the image and unpack the volume while it spins up.
type InitialRequest struct {
	DockerImage string
	Volume      *InlineVolume // nil when the job has no volume in the initial request
}

// JobRequest holds the generator's part of the job request that starts the job on a ready
// executor. A miner rejects a second volume, so at most one of InitialRequest.Volume and
// JobRequest.Volume is set.
type JobRequest struct {
	DockerImage            string
	RawScript              string // mounted at /script.py when not empty
	DockerRunOptionsPreset string
	DockerRunCmd           []string
	Env                    map[string]string
	Volume                 *InlineVolume
}

// Job is one generated synthetic job. Initial and Request are sent to the miner; Answer and
// the other fields stay with the validator.
type Job struct {
	Generator     string
	MinerHotkey   string
	ExecutorClass string
	Initial       InitialRequest
	Request       JobRequest
	TimeLimit     time.Duration

	// Answer is the exact stdout, surrounding whitespace stripped, that a correct run prints.
	Answer string

	// PoW is the challenge of a proof-of-work job, kept as data so results can be audited; nil
	// for other kinds. Everything in it is also sent to the miner; the secret is only in Answer.
	PoW *PoWChallenge
}

// Verify reports whether stdout, as a job's container printed it, is the expected answer.
// Like upstream, it strips surrounding whitespace as Python's str.strip does and then demands an
// exact match.
func (j Job) Verify(stdout string) bool {
	got := strings.TrimFunc(stdout, isPythonSpace)
	return j.Answer != "" && subtle.ConstantTimeCompare([]byte(got), []byte(j.Answer)) == 1
}

// isPythonSpace matches the characters Python's str.isspace accepts: Go's Unicode white space
// plus the four ASCII separators U+001C..U+001F, which Python also strips.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
