package batch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpinUpDeadlineNeverShortensTheSpinUp: a request sent on time is answered by the stagger's
// common instant; one that left late, because this process was slow, keeps its whole spin-up.
func TestSpinUpDeadlineNeverShortensTheSpinUp(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const spin = 2 * time.Second
	common := base.Add(spin)
	require.Equal(t, common, spinUpDeadline(common, base, spin), "sent on time")
	require.Equal(t, common, spinUpDeadline(common, base.Add(-time.Millisecond), spin), "sent early: no more than the stagger")
	late := base.Add(700 * time.Millisecond)
	require.Equal(t, late.Add(spin), spinUpDeadline(common, late, spin), "sent late: the whole spin-up from the send")
}
