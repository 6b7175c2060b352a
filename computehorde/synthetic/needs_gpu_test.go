package synthetic

import (
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNeedsGPUAgreesWithThePreset holds each generator's NeedsGPU to the preset its jobs name.
func TestNeedsGPUAgreesWithThePreset(t *testing.T) {
	t.Parallel()
	for _, g := range []Generator{HashcatGenerator{}, PoWGenerator{}} {
		t.Run(g.Name(), func(t *testing.T) {
			t.Parallel()
			job, err := g.Generate("5F", "always_on.test", rand.Reader)
			require.NoError(t, err)
			require.Equal(t, job.Request.DockerRunOptionsPreset == PresetNvidiaAll, NeedsGPU(g))
		})
	}
	require.True(t, NeedsGPU(HashcatGenerator{}))
	require.False(t, NeedsGPU(PoWGenerator{}))
}
