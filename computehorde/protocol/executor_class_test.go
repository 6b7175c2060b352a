package protocol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultClassTable(t *testing.T) {
	t.Parallel()

	table := DefaultClassTable()
	tests := []struct {
		class  string
		spinUp time.Duration
		gpu    bool
	}{
		{class: DefaultExecutorClass, spinUp: 240 * time.Second, gpu: true},
		{class: "always_on.gpu-24gb", spinUp: 3 * time.Second, gpu: true},
		{class: "always_on.llm.a6000", spinUp: 30 * time.Second, gpu: true},
		{class: "always_on.test", spinUp: 3 * time.Second},
		{class: "always_on.cpu.8c.16gb", spinUp: 30 * time.Second},
	}
	for _, tt := range tests {
		class, ok := table.Lookup(tt.class)
		require.True(t, ok, tt.class)
		require.Equal(t, tt.spinUp, class.SpinUp, tt.class)
		require.Equal(t, tt.gpu, class.GPU, tt.class)
	}
	require.Len(t, table.Classes(), len(tests))

	_, ok := table.Lookup("always_on.gpu-80gb")
	require.False(t, ok, "unknown classes are reported, not invented")
}

func TestParseClassTable(t *testing.T) {
	t.Parallel()

	table, err := ParseClassTable([]byte(`[{"name":"always_on.gpu-80gb","spin_up_seconds":5,"gpu":true,"note":"new"}]`))
	require.NoError(t, err)
	class, ok := table.Lookup("always_on.gpu-80gb")
	require.True(t, ok)
	require.Equal(t, ExecutorClass{Name: "always_on.gpu-80gb", SpinUp: 5 * time.Second, GPU: true, Note: "new"}, class)

	for _, bad := range []string{`{}`, `[{"name":""}]`, `[{"name":"a","spin_up_seconds":-1}]`, `[{"name":"a"},{"name":"a"}]`} {
		_, err := ParseClassTable([]byte(bad))
		require.Error(t, err, bad)
	}
}
