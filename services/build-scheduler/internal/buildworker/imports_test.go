package buildworker

import (
	"go/build"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoSidewaysImport keeps the build worker beside the scheduler's workers, not on top of
// them: what every client of the schema registers comes in through Kinds from the command.
func TestNoSidewaysImport(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	require.NotContains(t, pkg.Imports, "drover.dev/services/build-scheduler/internal/work")
	require.NotContains(t, pkg.Imports, "drover.dev/services/build-scheduler/internal/api")
}
