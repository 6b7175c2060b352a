package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWaterfall draws a trace as Jaeger's query API answers it: spans of work nested under their
// parent in the order they started, queries and outgoing calls left out with their children
// nested under the nearest span shown, and each bar where and as long as its span ran.
func TestWaterfall(t *testing.T) {
	t.Parallel()
	const answer = `{"traceID": "t1", "processes": {"p1": {"serviceName": "batch-runner"}, "p2": {"serviceName": "scorer"}},
	"spans": [
		{"spanID": "root", "operationName": "POST /v1/batches", "processID": "p1", "startTime": 1000, "duration": 3000},
		{"spanID": "q", "operationName": "BatchInsert", "processID": "p1", "startTime": 1100, "duration": 100,
			"references": [{"refType": "CHILD_OF", "spanID": "root"}], "tags": [{"key": "db.system.name", "value": "postgresql"}]},
		{"spanID": "ins", "operationName": "river.insert_many", "processID": "p1", "startTime": 1200, "duration": 100,
			"references": [{"refType": "CHILD_OF", "spanID": "root"}]},
		{"spanID": "score", "operationName": "river.work/score_batch", "processID": "p2", "startTime": 2500, "duration": 1500,
			"references": [{"refType": "FOLLOWS_FROM", "spanID": "ins"}]},
		{"spanID": "run", "operationName": "river.work/run_batch", "processID": "p1", "startTime": 1300, "duration": 1000,
			"references": [{"refType": "FOLLOWS_FROM", "spanID": "ins"}]}
	]}`
	var tr jaegerTrace
	require.NoError(t, json.Unmarshal([]byte(answer), &tr))
	lines := waterfall(tr)
	require.Len(t, lines, 3, "%s", strings.Join(lines, "\n"))
	require.Regexp(t, `^POST /v1/batches +batch-runner +█{30} +3\.0 ms$`, lines[0])
	require.Regexp(t, `^  river.work/run_batch +batch-runner +\s{3}█{10} +1\.0 ms$`, lines[1], "started 0.3 ms in: 3 of 30 columns; 1 ms of 3")
	require.Regexp(t, `^  river.work/score_batch +scorer +\s{15}█{15} +1\.5 ms$`, lines[2])
}
