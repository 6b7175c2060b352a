package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseService(t *testing.T) {
	t.Parallel()

	for _, svc := range Services {
		got, err := ParseService(string(svc))
		require.NoError(t, err)
		require.Equal(t, svc, got)
	}
	_, err := ParseService("billing")
	require.ErrorIs(t, err, ErrUnknownService)
	require.Contains(t, err.Error(), "miner-sync")
}

func TestServiceNaming(t *testing.T) {
	t.Parallel()

	require.Equal(t, "batch_runner", BatchRunner.Schema())
	require.Equal(t, "BATCH_RUNNER", BatchRunner.EnvPrefix())
	require.Equal(t, "scorer", Scorer.Schema())
}
