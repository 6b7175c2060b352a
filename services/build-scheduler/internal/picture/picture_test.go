package picture

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

func TestEveryStateHasAColour(t *testing.T) {
	t.Parallel()
	for _, s := range jobgraph.JobStates() {
		require.Contains(t, colours, s)
	}
	require.Len(t, colours, len(jobgraph.JobStates()))
}

func TestTextCannotBreakOutOfItsLabel(t *testing.T) {
	t.Parallel()
	g := jobgraph.Group{ID: 1, Name: "it's \"x\"\n", State: jobgraph.GroupDispatching, Total: 1,
		Counts: map[jobgraph.JobState]int{jobgraph.Running: 1}}
	node := jobgraph.GraphNode{ID: 2, Name: "a\"]; evil [\\\n<br/>#`", Target: "t", State: "no such state"}
	var dot, mermaid strings.Builder
	p := Begin(&dot, DOT, g)
	p.Job(node)
	require.NoError(t, p.End())
	require.Contains(t, dot.String(), `j2 [label="a\"]; evil [\\\n<br/>#`+"`"+`\nno such state", fillcolor="#ffffff"`)
	require.Contains(t, dot.String(), `label="group 1 \"it's \\\"x\\\"\\n\": dispatching, 1 jobs"`)

	p = Begin(&mermaid, Mermaid, g)
	p.Job(node)
	require.NoError(t, p.End())
	require.Contains(t, mermaid.String(), "title: 'group 1 \"it''s \\\"x\\\"\\n\": dispatching, 1 jobs'\n")
	require.Contains(t, mermaid.String(), `  j2["a#quot;]; evil [\ #lt;br/#gt;#35;#96;<br/>no such state"]:::unknown`+"\n")
	require.Contains(t, mermaid.String(), `state_running["running: 1"]:::running`)
}
