package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAdversaries(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		miners int
		want   []string
		honest int
	}{
		{name: "FivePercentInThirds", miners: 500, honest: 25, want: []string{
			"0-7:answer=solve,answer_at=1s,stop_reading=ready",
			"8-15:answer=solve,answer_at=1s,slowloris=answer",
			"16-24:answer=solve,answer_at=1s,oversize=answer",
		}},
		{name: "AtLeastOne", miners: 20, honest: 1, want: []string{"0-0:answer=solve,answer_at=1s,oversize=answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, honest := adversaries(tt.miners, time.Second)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.honest, honest)
		})
	}
}
