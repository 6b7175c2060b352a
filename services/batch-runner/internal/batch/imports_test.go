package batch

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoDatabaseInPhaseTwo holds phase 2's rule by construction: the package that talks to
// miners cannot reach Postgres, because it imports nothing that could.
func TestNoDatabaseInPhaseTwo(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	for _, imp := range pkg.Imports {
		for _, banned := range []string{"pgx", "database/sql", "riverqueue", "internal/store", "shared/postgres"} {
			require.NotContains(t, imp, banned, "phase 2 imports %s", imp)
		}
		require.False(t, strings.HasPrefix(imp, "drover.dev/shared"), "phase 2 imports %s", imp)
	}
}
