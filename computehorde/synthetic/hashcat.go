package synthetic

import (
	"crypto/aes"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"time"
)

// Fixed parts of the hashcat v2 job, as upstream's validators sent it.
const (
	HashcatName      = "hashcat_v2"
	HashcatImage     = "backenddevelopersltd/compute-horde-job:v1-latest"
	HashcatTimeLimit = 53 * time.Second

	// hashcatPayloadFile is the file in the volume; the runner reads it from /volume.
	hashcatPayloadFile = "payload.txt"
	// hashcatHashesPerStage is how many passwords each stage hides.
	hashcatHashesPerStage = 100
	// hashcatFirstPasswordChars is the random part of the key passed on the command line.
	hashcatFirstPasswordChars = 48
	hashcatSaltSize           = 8
	// hashcatRandomBytes is about what one job draws: 48 + 300 × 6.2 characters, salts, IVs.
	hashcatRandomBytes = 2048
)

// hashcatRunner is the script the executor mounts at /script.py and runs with the first
// password as its argument. The job image's entrypoint is Python.
//
//go:embed hashcat_runner.py
var hashcatRunner string

// hashcatStage is one round of cracking: hashcat mode, hash function and password shape.
// Letters are drawn from letters and digits (mask ?1 over ?l?d?u), digits from digits (?d).
type hashcatStage struct {
	mode    string
	newHash func() hash.Hash
	letters int
	digits  int
}

var hashcatStages = [...]hashcatStage{
	{mode: "1410", newHash: sha256.New, letters: 6, digits: 0},     // sha256($pass.$salt)
	{mode: "10810", newHash: sha512.New384, letters: 5, digits: 1}, // sha384($pass.$salt)
	{mode: "1710", newHash: sha512.New, letters: 5, digits: 1},     // sha512($pass.$salt)
}

func (s hashcatStage) mask() string {
	return strings.Repeat("?1", s.letters) + strings.Repeat("?d", s.digits)
}

// HashcatGenerator builds the ComputeHorde hashcat v2 job: three stages of salted hashes to
// crack, each stage's hashes encrypted with a key only the previous stage's passwords yield, so
// the stages cannot run in parallel and the answer proves all three were cracked.
type HashcatGenerator struct {
	// Now stamps the Fernet tokens and the zip entry; nil means time.Now.
	Now func() time.Time
}

var _ Generator = HashcatGenerator{}

// Name implements Generator.
func (HashcatGenerator) Name() string { return HashcatName }

// NeedsGPU is true: hashcat cracks on the GPU, with every GPU exposed (nvidia_all).
func (HashcatGenerator) NeedsGPU() bool { return true }

// TimeLimit implements Generator.
func (HashcatGenerator) TimeLimit() time.Duration { return HashcatTimeLimit }

// Generate implements Generator. The volume travels in the initial request so the executor can
// unpack it before the job request, which carries only the first password, starts the clock.
func (g HashcatGenerator) Generate(minerHotkey, executorClass string, rnd io.Reader) (Job, error) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	src := newRandomSource(rnd, hashcatRandomBytes)
	secrets, err := newHashcatSecrets(src, minerHotkey)
	if err != nil {
		return Job{}, fmt.Errorf("generate %s job for %s: %w", HashcatName, minerHotkey, err)
	}
	volume, err := secrets.volume(src, now())
	if err != nil {
		return Job{}, fmt.Errorf("generate %s job for %s: %w", HashcatName, minerHotkey, err)
	}
	return Job{
		Generator:     HashcatName,
		MinerHotkey:   minerHotkey,
		ExecutorClass: executorClass,
		Initial:       InitialRequest{DockerImage: HashcatImage, Volume: &InlineVolume{Contents: volume}},
		Request: JobRequest{
			DockerImage:            HashcatImage,
			RawScript:              hashcatRunner,
			DockerRunOptionsPreset: PresetNvidiaAll,
			DockerRunCmd:           []string{"/script.py", secrets.firstPassword},
			Env:                    map[string]string{},
		},
		TimeLimit: HashcatTimeLimit,
		Answer:    secrets.answer(),
	}, nil
}

// hashcatSecrets is what the validator knows and the miner must recover: the passwords of every
// stage, sorted, and the salts.
type hashcatSecrets struct {
	firstPassword string
	passwords     [len(hashcatStages)][]string
	salts         [len(hashcatStages)][hashcatSaltSize]byte
}

func newHashcatSecrets(src randomSource, minerHotkey string) (hashcatSecrets, error) {
	var s hashcatSecrets
	first := append([]byte(minerHotkey), '-')
	first, err := src.appendString(first, alphanumeric, hashcatFirstPasswordChars)
	if err != nil {
		return s, err
	}
	s.firstPassword = string(first)
	for i, stage := range hashcatStages {
		if s.passwords[i], err = distinctPasswords(src, stage, hashcatHashesPerStage); err != nil {
			return s, err
		}
		if err := src.fill(s.salts[i][:]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// distinctPasswords draws n distinct passwords of the stage's shape and returns them sorted.
func distinctPasswords(src randomSource, stage hashcatStage, n int) ([]string, error) {
	seen := make(map[string]struct{}, n)
	passwords := make([]string, 0, n)
	buf := make([]byte, 0, stage.letters+stage.digits)
	for len(passwords) < n {
		var err error
		if buf, err = src.appendString(buf[:0], alphanumeric, stage.letters); err != nil {
			return nil, err
		}
		if buf, err = src.appendString(buf, digits, stage.digits); err != nil {
			return nil, err
		}
		if _, dup := seen[string(buf)]; dup {
			continue
		}
		password := string(buf)
		seen[password] = struct{}{}
		passwords = append(passwords, password)
	}
	slices.Sort(passwords)
	return passwords, nil
}

// stagePayload is the plaintext of stage i: one "hexdigest:salthex" line per password, in the
// format hashcat reads with --hex-salt.
func (s hashcatSecrets) stagePayload(i int) []byte {
	h := hashcatStages[i].newHash()
	salt := hex.EncodeToString(s.salts[i][:])
	out := make([]byte, 0, len(s.passwords[i])*(2*h.Size()+2+len(salt)))
	var sum [sha512.Size]byte
	for j, password := range s.passwords[i] {
		if j > 0 {
			out = append(out, '\n')
		}
		h.Reset()
		h.Write([]byte(password)) // hash.Hash writes never fail
		h.Write(s.salts[i][:])
		out = hex.AppendEncode(out, h.Sum(sum[:0]))
		out = append(out, ':')
		out = append(out, salt...)
	}
	return out
}

// stageKey is the secret stage i is encrypted with: the first password for stage 0, otherwise
// the previous stage's sorted passwords joined by newlines.
func (s hashcatSecrets) stageKey(i int) fernetKey {
	if i == 0 {
		return fernetKeyFromSecret([]byte(s.firstPassword))
	}
	return fernetKeyFromSecret([]byte(strings.Join(s.passwords[i-1], "\n")))
}

// answer is what the runner prints: urlsafe base64 (padded) of sha256 over every stage's sorted
// passwords concatenated with no separator.
func (s hashcatSecrets) answer() string {
	h := sha256.New()
	for _, passwords := range s.passwords {
		for _, password := range passwords {
			h.Write([]byte(password))
		}
	}
	return base64.URLEncoding.EncodeToString(h.Sum(nil))
}

// volume encrypts every stage and returns the inline volume contents: a zip holding payload.txt,
// the pickled dict the runner loads. Upstream's payloads are str, not bytes: it decodes each
// Fernet token before pickling, and the runner relies on Fernet accepting either.
func (s hashcatSecrets) volume(src randomSource, now time.Time) (string, error) {
	tokens := make([]string, len(hashcatStages))
	masks := make([]string, len(hashcatStages))
	modes := make([]string, len(hashcatStages))
	letters := make([]int, len(hashcatStages))
	digitCounts := make([]int, len(hashcatStages))
	for i, stage := range hashcatStages {
		var iv [aes.BlockSize]byte
		if err := src.fill(iv[:]); err != nil {
			return "", err
		}
		tokens[i] = encryptFernet(s.stageKey(i), iv, now, s.stagePayload(i))
		masks[i], modes[i] = stage.mask(), stage.mode
		letters[i], digitCounts[i] = stage.letters, stage.digits
	}
	payload, err := appendPickle(nil, []pickleItem{
		{Key: "n", Value: len(hashcatStages)},
		{Key: "payloads", Value: tokens},
		{Key: "masks", Value: masks},
		{Key: "algorithms", Value: modes},
		{Key: "num_letters", Value: letters},
		{Key: "num_digits", Value: digitCounts},
	})
	if err != nil {
		return "", err
	}
	return singleFileZip(hashcatPayloadFile, payload, now.UTC())
}
