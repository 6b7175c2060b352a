package synthetic

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPoWGenerate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		gen       PoWGenerator
		wantRange uint64
		wantLimit time.Duration
	}{
		{name: "defaults", gen: PoWGenerator{}, wantRange: DefaultPoWRange, wantLimit: DefaultPoWTimeLimit},
		{name: "configured", gen: PoWGenerator{Range: 1000, Limit: 2 * time.Second}, wantRange: 1000, wantLimit: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job, err := tt.gen.Generate(testHotkey, "always_on.test", seeded(9))
			require.NoError(t, err)
			require.Equal(t, PoWName, job.Generator)
			require.Equal(t, tt.wantLimit, job.TimeLimit)
			require.Equal(t, tt.wantLimit, tt.gen.TimeLimit())
			require.Equal(t, PoWImage, job.Initial.DockerImage)
			require.Nil(t, job.Initial.Volume)
			require.Nil(t, job.Request.Volume)
			require.Equal(t, PresetNone, job.Request.DockerRunOptionsPreset)
			require.True(t, IsPoW(job.Request))
			require.NotNil(t, job.PoW)
			require.Equal(t, tt.wantRange, job.PoW.Range)
			x, err := strconv.ParseUint(job.Answer, 10, 64)
			require.NoError(t, err)
			require.Less(t, x, tt.wantRange)
			require.Equal(t, job.PoW.Digest, powDigest(job.PoW.Salt, x))
		})
	}
}

func TestPoWGenerateRandomnessFailure(t *testing.T) {
	t.Parallel()

	_, err := PoWGenerator{}.Generate(testHotkey, "always_on.test", bytes.NewReader(make([]byte, 20)))
	require.ErrorContains(t, err, "generate pow_v1 job for "+testHotkey+": read randomness")
}

// TestPoWNoLeak checks that nothing sent to the miner depends on the secret: the env holds only
// the salt, digest and range, the command and script are the same for every job, and no env
// value is the answer.
func TestPoWNoLeak(t *testing.T) {
	t.Parallel()

	a, err := PoWGenerator{}.Generate(testHotkey, "always_on.test", seeded(10))
	require.NoError(t, err)
	b, err := PoWGenerator{}.Generate("5Fother", "always_on.gpu-24gb", seeded(11))
	require.NoError(t, err)
	require.NotEqual(t, a.Answer, b.Answer)

	require.Equal(t, a.Request.RawScript, b.Request.RawScript)
	require.Equal(t, a.Request.DockerRunCmd, b.Request.DockerRunCmd)
	require.Equal(t, a.Initial, b.Initial)
	for _, job := range []Job{a, b} {
		require.Equal(t, job.PoW.env(), job.Request.Env, "env carries the challenge and nothing else")
		for _, v := range job.Request.Env {
			require.NotEqual(t, job.Answer, v)
		}
		require.Regexp(t, `^[0-9a-f]{32}$`, job.Request.Env["POW_SALT"])
		require.Regexp(t, `^[0-9a-f]{64}$`, job.Request.Env["POW_DIGEST"])
	}
}

func TestSolve(t *testing.T) {
	t.Parallel()

	for _, r := range []uint64{1, 2, 1000, DefaultPoWRange} {
		t.Run("range "+strconv.FormatUint(r, 10), func(t *testing.T) {
			t.Parallel()
			for seed := range byte(5) {
				job, err := PoWGenerator{Range: r}.Generate(testHotkey, "always_on.test", seeded(seed))
				require.NoError(t, err)
				stdout, err := Solve(job.Request)
				require.NoError(t, err)
				require.True(t, job.Verify(stdout))
			}
		})
	}

	t.Run("rejects what it cannot solve", func(t *testing.T) {
		t.Parallel()
		job, err := PoWGenerator{Range: 100}.Generate(testHotkey, "always_on.test", seeded(1))
		require.NoError(t, err)
		hashcat := setupHashcat(t, 1).job
		_, err = Solve(hashcat.Request)
		require.ErrorIs(t, err, ErrNotPoW)

		tests := map[string]map[string]string{
			"short salt":     {"POW_SALT": "00", "POW_DIGEST": job.Request.Env["POW_DIGEST"], "POW_RANGE": "100"},
			"bad digest":     {"POW_SALT": job.Request.Env["POW_SALT"], "POW_DIGEST": "zz", "POW_RANGE": "100"},
			"missing range":  {"POW_SALT": job.Request.Env["POW_SALT"], "POW_DIGEST": job.Request.Env["POW_DIGEST"]},
			"no secret fits": {"POW_SALT": job.Request.Env["POW_SALT"], "POW_DIGEST": job.Request.Env["POW_DIGEST"], "POW_RANGE": "0"},
		}
		for name, env := range tests {
			req := job.Request
			req.Env = env
			_, err := Solve(req)
			require.Error(t, err, name)
		}
	})

	t.Run("wrong answers fail", func(t *testing.T) {
		t.Parallel()
		job, err := PoWGenerator{}.Generate(testHotkey, "always_on.test", seeded(2))
		require.NoError(t, err)
		x, err := strconv.ParseUint(job.Answer, 10, 64)
		require.NoError(t, err)
		for _, wrong := range []string{strconv.FormatUint(x+1, 10), "0" + job.Answer, job.Answer + "0", ""} {
			require.False(t, job.Verify(wrong), wrong)
		}
	})
}

// TestPoWSolverPython runs the job's raw script as a real executor would, with the job's env.
func TestPoWSolverPython(t *testing.T) {
	t.Parallel()

	lookPython(t)
	job, err := PoWGenerator{}.Generate(testHotkey, "always_on.test", seeded(3))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.py"), []byte(job.Request.RawScript), 0o644))
	var env []string
	for k, v := range job.Request.Env {
		env = append(env, k+"="+v)
	}
	out := runPythonIn(t, dir, []string{"script.py"}, nil, env...)
	require.True(t, job.Verify(out), "python printed %q, want %s", out, job.Answer)
}

func BenchmarkPoWSolve(b *testing.B) {
	job, err := PoWGenerator{}.Generate(testHotkey, "always_on.test", rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	c := *job.PoW
	c.Digest = [32]byte{} // matches no candidate: every iteration searches the whole range
	for b.Loop() {
		if _, ok := c.Search(); ok {
			b.Fatal("found a secret for an all-zero digest")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.Range), "ns/hash")
}

func BenchmarkPoWGenerate(b *testing.B) {
	for b.Loop() {
		if _, err := (PoWGenerator{}).Generate(testHotkey, "always_on.test", rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}
