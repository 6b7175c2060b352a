package buildworker

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The worker's connections commit asynchronously unless told otherwise, and a value Postgres
// would refuse at connect is refused at start.
func TestSynchronousCommitDefaultsToOffAndIsChecked(t *testing.T) {
	t.Parallel()
	field, ok := reflect.TypeFor[Config]().FieldByName("SynchronousCommit")
	require.True(t, ok)
	require.Equal(t, "off", field.Tag.Get("default"))

	problems := func(value string) []error {
		return Config{SynchronousCommit: value}.Check()
	}
	for _, v := range SynchronousCommitValues {
		for _, err := range problems(v) {
			require.NotContains(t, err.Error(), "SYNCHRONOUS_COMMIT", "value %q", v)
		}
	}
	require.Condition(t, func() bool {
		for _, err := range problems("sometimes") {
			if err.Error() == `BUILD_WORKER_SYNCHRONOUS_COMMIT: "sometimes", want one of on, off, local, remote_write, remote_apply` {
				return true
			}
		}
		return false
	}, "an unknown value is refused, naming the variable")
}
