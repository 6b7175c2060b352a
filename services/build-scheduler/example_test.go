package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
	"drover.dev/shared/yamljson"
)

// makeRunTarget is the one target make run's build worker serves (devrun's workloads.go).
const makeRunTarget = "x86_64-linux"

// TestExampleGroupIsAccepted submits examples/group.yaml, the group the READMEs and `drover builds
// submit --help` give a new user, read as drover reads a group file: the scheduler takes it whole
// (the DAG, names, limits and strict JSON of POST /v1/groups), every job is for the target make
// run's build worker serves, and its jobs wait on one another, as an example of dependencies
// should.
func TestExampleGroupIsAccepted(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "group.yaml"))
	require.NoError(t, err)
	body, err := yamljson.ToJSON(raw)
	require.NoError(t, err)
	base := startScheduler(t, testConfig(t, testdb.New(t)))

	var created jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", body, &created))
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, created.ID), nil, &jobs))
	require.Len(t, jobs.Items, created.Total)
	waiting := 0
	for _, j := range jobs.Items {
		require.Equal(t, makeRunTarget, j.Target, "job %s", j.Name)
		if len(j.Dependencies) > 0 {
			require.Equal(t, jobgraph.Waiting, j.State, "job %s waits for its dependencies", j.Name)
			waiting++
		}
	}
	require.Positive(t, waiting, "the example shows jobs that depend on others")
	require.Less(t, waiting, len(jobs.Items), "and some that depend on none")
}
