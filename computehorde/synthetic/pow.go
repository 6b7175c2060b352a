package synthetic

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Fixed parts of the proof-of-work job. The job runs for real on any executor with Python, and
// a simulated miner recognises it with IsPoW: its raw script starts with PoWScriptMarker.
const (
	PoWName         = "pow_v1"
	PoWImage        = "python:3.13-slim"
	PoWScriptMarker = "# drover-synthetic-pow v1"

	// DefaultPoWRange is the secret's range when PoWGenerator.Range is zero: 2^15 candidates,
	// measured at about 1.5 ms of SHA-256 on average and 3 ms at worst for Solve on one core of
	// a 2-vCPU Xeon VM (BenchmarkPoWSolve times the worst case).
	DefaultPoWRange = 1 << 15
	// DefaultPoWTimeLimit is the time limit when PoWGenerator.TimeLimit is zero; generous
	// because a real executor runs the Python solver, roughly fifty times slower than Solve.
	DefaultPoWTimeLimit = 10 * time.Second

	powSaltSize = 16
)

// Environment variables carrying the challenge to the job container.
const (
	powEnvSalt   = "POW_SALT"
	powEnvDigest = "POW_DIGEST"
	powEnvRange  = "POW_RANGE"
)

// powSolver is the job's raw script: the same search as Solve, for a real executor.
//
//go:embed pow_solver.py
var powSolver string

// ErrNotPoW is returned by Solve for a job request that is not a proof-of-work job.
var ErrNotPoW = errors.New("not a proof-of-work job")

// PoWChallenge is what the miner receives: a salt, the SHA-256 of the salt followed by a secret
// x as 8 big-endian bytes, and the range [0, Range) x lies in. Finding x takes Range/2 hashes
// on average, and nothing sent reveals x any faster.
type PoWChallenge struct {
	Salt   [powSaltSize]byte
	Digest [sha256.Size]byte
	Range  uint64
}

// PoWGenerator builds proof-of-work jobs: cheap, genuinely solved, exactly checked. They stand
// in for the hashcat job where a simulated miner must answer in milliseconds.
type PoWGenerator struct {
	// Range is the size of the secret's range, the difficulty; zero means DefaultPoWRange.
	Range uint64
	// Limit is the time limit of every job; zero means DefaultPoWTimeLimit.
	Limit time.Duration
}

var _ Generator = PoWGenerator{}

// Name implements Generator.
func (PoWGenerator) Name() string { return PoWName }

// TimeLimit implements Generator.
func (g PoWGenerator) TimeLimit() time.Duration {
	if g.Limit == 0 {
		return DefaultPoWTimeLimit
	}
	return g.Limit
}

// Generate implements Generator. The secret x is drawn uniformly from [0, Range) and appears
// only in the job's Answer, as a decimal number.
func (g PoWGenerator) Generate(minerHotkey, executorClass string, rnd io.Reader) (Job, error) {
	c := PoWChallenge{Range: g.Range}
	if c.Range == 0 {
		c.Range = DefaultPoWRange
	}
	src := newRandomSource(rnd, powSaltSize+8)
	if err := src.fill(c.Salt[:]); err != nil {
		return Job{}, fmt.Errorf("generate %s job for %s: %w", PoWName, minerHotkey, err)
	}
	x, err := src.uint64n(c.Range)
	if err != nil {
		return Job{}, fmt.Errorf("generate %s job for %s: %w", PoWName, minerHotkey, err)
	}
	c.Digest = powDigest(c.Salt, x)
	return Job{
		Generator:     PoWName,
		MinerHotkey:   minerHotkey,
		ExecutorClass: executorClass,
		Initial:       InitialRequest{DockerImage: PoWImage},
		Request: JobRequest{
			DockerImage:            PoWImage,
			RawScript:              powSolver,
			DockerRunOptionsPreset: PresetNone,
			DockerRunCmd:           []string{"python3", "/script.py"},
			Env:                    c.env(),
		},
		TimeLimit: g.TimeLimit(),
		Answer:    strconv.FormatUint(x, 10),
		PoW:       &c,
	}, nil
}

func powDigest(salt [powSaltSize]byte, x uint64) [sha256.Size]byte {
	var buf [powSaltSize + 8]byte
	copy(buf[:], salt[:])
	binary.BigEndian.PutUint64(buf[powSaltSize:], x)
	return sha256.Sum256(buf[:])
}

func (c PoWChallenge) env() map[string]string {
	return map[string]string{
		powEnvSalt:   hex.EncodeToString(c.Salt[:]),
		powEnvDigest: hex.EncodeToString(c.Digest[:]),
		powEnvRange:  strconv.FormatUint(c.Range, 10),
	}
}

// Search returns the secret x behind the challenge by trying every candidate, and false when
// none matches, which only a forged challenge causes.
func (c PoWChallenge) Search() (uint64, bool) {
	var buf [powSaltSize + 8]byte
	copy(buf[:], c.Salt[:])
	for x := range c.Range {
		binary.BigEndian.PutUint64(buf[powSaltSize:], x)
		if sha256.Sum256(buf[:]) == c.Digest {
			return x, true
		}
	}
	return 0, false
}

// IsPoW reports whether a job request is a proof-of-work job, so a simulated miner knows to
// answer it with Solve.
func IsPoW(req JobRequest) bool {
	return strings.HasPrefix(req.RawScript, PoWScriptMarker)
}

// Solve does what the proof-of-work job's container does: it reads the challenge from the job
// request, searches for the secret and returns the stdout the container prints.
func Solve(req JobRequest) (string, error) {
	if !IsPoW(req) {
		return "", ErrNotPoW
	}
	c, err := parsePoWChallenge(req.Env)
	if err != nil {
		return "", err
	}
	x, ok := c.Search()
	if !ok {
		return "", fmt.Errorf("no secret below %d matches digest %x", c.Range, c.Digest)
	}
	return strconv.FormatUint(x, 10) + "\n", nil
}

func parsePoWChallenge(env map[string]string) (PoWChallenge, error) {
	var c PoWChallenge
	if err := decodeHexInto(c.Salt[:], env[powEnvSalt]); err != nil {
		return c, fmt.Errorf("parse %s: %w", powEnvSalt, err)
	}
	if err := decodeHexInto(c.Digest[:], env[powEnvDigest]); err != nil {
		return c, fmt.Errorf("parse %s: %w", powEnvDigest, err)
	}
	n, err := strconv.ParseUint(env[powEnvRange], 10, 64)
	if err != nil {
		return c, fmt.Errorf("parse %s: %w", powEnvRange, err)
	}
	c.Range = n
	return c, nil
}

// decodeHexInto decodes s into dst, which it must fill exactly.
func decodeHexInto(dst []byte, s string) error {
	if hex.DecodedLen(len(s)) != len(dst) {
		return fmt.Errorf("want %d hex digits, got %d", 2*len(dst), len(s))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}
