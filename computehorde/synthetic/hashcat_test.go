package synthetic

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testHotkey = "5FminerHotkeyPlaceholderXXXXXXXXXXXXXXXXXXXXXXXX"

var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hashcatTestBundle is one generated job and the secrets behind it, which the test recovers by
// replaying the seeded randomness: Generate draws the secrets first.
type hashcatTestBundle struct {
	job     Job
	secrets hashcatSecrets
}

func setupHashcat(t *testing.T, seed byte) hashcatTestBundle {
	t.Helper()
	gen := HashcatGenerator{Now: func() time.Time { return testNow }}
	job, err := gen.Generate(testHotkey, "spin_up-4min.gpu-24gb", seeded(seed))
	require.NoError(t, err)
	secrets, err := newHashcatSecrets(newRandomSource(seeded(seed), hashcatRandomBytes), testHotkey)
	require.NoError(t, err)
	require.Equal(t, secrets.firstPassword, job.Request.DockerRunCmd[1])
	return hashcatTestBundle{job: job, secrets: secrets}
}

// payloadFile unpacks payload.txt from an inline volume.
func payloadFile(t *testing.T, volume *InlineVolume) []byte {
	t.Helper()
	require.NotNil(t, volume)
	raw, err := base64.StdEncoding.DecodeString(volume.Contents)
	require.NoError(t, err)
	r, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	require.Len(t, r.File, 1)
	require.Equal(t, "payload.txt", r.File[0].Name)
	f, err := r.File[0].Open()
	require.NoError(t, err)
	payload, err := io.ReadAll(f)
	require.NoError(t, err)
	return payload
}

func TestHashcatGenerate(t *testing.T) {
	t.Parallel()

	b := setupHashcat(t, 1)
	job := b.job
	require.Equal(t, HashcatName, job.Generator)
	require.Equal(t, testHotkey, job.MinerHotkey)
	require.Equal(t, "spin_up-4min.gpu-24gb", job.ExecutorClass)
	require.Equal(t, 53*time.Second, job.TimeLimit)
	require.Equal(t, HashcatImage, job.Initial.DockerImage)
	require.NotNil(t, job.Initial.Volume, "the volume travels in the initial request")
	require.Nil(t, job.Request.Volume, "a miner rejects a second volume")
	require.Equal(t, HashcatImage, job.Request.DockerImage)
	require.Equal(t, PresetNvidiaAll, job.Request.DockerRunOptionsPreset)
	require.Equal(t, hashcatRunner, job.Request.RawScript)
	require.Empty(t, job.Request.Env)
	require.Nil(t, job.PoW)

	require.Len(t, job.Request.DockerRunCmd, 2)
	require.Equal(t, "/script.py", job.Request.DockerRunCmd[0])
	require.Regexp(t, `^`+testHotkey+`-[a-zA-Z0-9]{48}$`, job.Request.DockerRunCmd[1])
	require.Regexp(t, `^[A-Za-z0-9_-]{43}=$`, job.Answer)

	for i, stage := range hashcatStages {
		passwords := b.secrets.passwords[i]
		require.Len(t, passwords, 100)
		require.True(t, slices.IsSorted(passwords))
		require.Len(t, slices.Compact(slices.Clone(passwords)), 100, "passwords are distinct")
		shape := regexp.MustCompile(fmt.Sprintf(`^[a-zA-Z0-9]{%d}[0-9]{%d}$`, stage.letters, stage.digits))
		for _, p := range passwords {
			require.Regexp(t, shape, p)
		}
	}
	require.NotEqual(t, b.secrets.salts[0], b.secrets.salts[1])
}

func TestHashcatGenerateDeterminism(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		seeds [2]byte
		same  bool
	}{
		{name: "same seed same job", seeds: [2]byte{7, 7}, same: true},
		{name: "other seed other job", seeds: [2]byte{7, 8}, same: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := setupHashcat(t, tt.seeds[0]).job, setupHashcat(t, tt.seeds[1]).job
			require.Equal(t, tt.same, a.Answer == b.Answer)
			require.Equal(t, tt.same, a.Initial.Volume.Contents == b.Initial.Volume.Contents)
			require.Equal(t, tt.same, a.Request.DockerRunCmd[1] == b.Request.DockerRunCmd[1])
		})
	}
}

func TestHashcatGenerateRandomnessFailure(t *testing.T) {
	t.Parallel()

	_, err := HashcatGenerator{}.Generate(testHotkey, "always_on.gpu-24gb", bytes.NewReader(make([]byte, 500)))
	require.ErrorContains(t, err, "read randomness")
}

// TestHashcatSolveChain plays the miner with a dictionary of the known passwords in place of
// hashcat's mask attack: it unpacks the volume, decrypts stage 0 with the first password from
// the command line, cracks each hash, derives the next stage's key from the cracked passwords
// and finally computes the answer, which Verify must accept.
func TestHashcatSolveChain(t *testing.T) {
	t.Parallel()

	b := setupHashcat(t, 2)
	dict := parseTestPickle(t, payloadFile(t, b.job.Initial.Volume))
	require.Equal(t, 3, dict["n"])
	require.Equal(t, []string{"1410", "10810", "1710"}, dict["algorithms"])
	require.Equal(t, []string{"?1?1?1?1?1?1", "?1?1?1?1?1?d", "?1?1?1?1?1?d"}, dict["masks"])
	require.Equal(t, []int{6, 5, 5}, dict["num_letters"])
	require.Equal(t, []int{0, 1, 1}, dict["num_digits"])
	tokens := dict["payloads"].([]string)
	require.Len(t, tokens, 3)

	secret := b.job.Request.DockerRunCmd[1]
	var everything strings.Builder
	for i, stage := range hashcatStages {
		plaintext, stamp, err := decryptFernet(fernetKeyFromSecret([]byte(secret)), tokens[i])
		require.NoError(t, err, "stage %d", i)
		require.True(t, testNow.Equal(stamp))
		cracked := crackWithDictionary(t, stage, string(plaintext), b.secrets.passwords[i])
		require.Equal(t, b.secrets.passwords[i], cracked, "stage %d", i)
		secret = strings.Join(cracked, "\n")
		everything.WriteString(strings.Join(cracked, ""))

		_, _, err = decryptFernet(fernetKeyFromSecret([]byte(secret+"x")), tokens[(i+1)%3])
		require.Error(t, err, "a wrong key opens no stage")
	}

	sum := sha256.Sum256([]byte(everything.String()))
	answer := base64.URLEncoding.EncodeToString(sum[:])
	require.Equal(t, b.job.Answer, answer)
	require.True(t, b.job.Verify(answer+"\n"))
	require.False(t, b.job.Verify(setupHashcat(t, 3).job.Answer))
}

// crackWithDictionary returns, sorted, the passwords from words that hash to the lines of a
// stage payload, each "hexdigest:salthex", requiring every line to be cracked.
func crackWithDictionary(t *testing.T, stage hashcatStage, payload string, words []string) []string {
	t.Helper()
	lines := strings.Split(payload, "\n")
	require.Len(t, lines, 100)
	var cracked []string
	for _, line := range lines {
		digest, saltHex, ok := strings.Cut(line, ":")
		require.True(t, ok, line)
		require.Len(t, saltHex, 16)
		salt, err := hex.DecodeString(saltHex)
		require.NoError(t, err)
		for _, w := range words {
			h := stage.newHash()
			h.Write(append([]byte(w), salt...))
			if hex.EncodeToString(h.Sum(nil)) == digest {
				cracked = append(cracked, w)
				break
			}
		}
	}
	require.Len(t, cracked, len(lines), "every hash cracks")
	slices.Sort(cracked)
	return cracked
}

func BenchmarkHashcatGenerate(b *testing.B) {
	gen := HashcatGenerator{}
	var size int
	for b.Loop() {
		job, err := gen.Generate(testHotkey, "spin_up-4min.gpu-24gb", rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		size = len(job.Initial.Volume.Contents)
	}
	b.ReportMetric(float64(size), "volume-bytes")
}
