package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// getText GETs url with the test token, checks the answer against the OpenAPI document and
// returns its status and body.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+servicetest.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	servicetest.RequireDocumented(t, req, resp.StatusCode, resp.Header, body)
	return resp.StatusCode, string(body)
}

func TestGroupGraphDrawsEveryJobInItsState(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	base := startScheduler(t, testConfig(t, dbURL))
	startWorker(t, dbURL, "x86_64-linux")

	odd := `say "hi" \ <b>#1</b> & ` + "`go`"
	sub := dag.Submission{Name: `demo "graph"`, Jobs: []dag.JobSpec{
		sh("top", "true"), sh("left", "true", "top"), sh(odd, "true", "top"),
		sh("bottom", "true", "left", odd),
		sh("c1", "true"), sh("c2", "false", "c1"), sh("c3", "true", "c2"),
	}}
	var created jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", sub, &created))
	g := waitGroup(t, base, created.ID)
	require.Equal(t, jobgraph.GroupFailed, g.State)
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs))
	id := map[string]int64{}
	for _, j := range jobs.Items {
		id[j.Name] = j.ID
	}
	graphURL := fmt.Sprintf("%s/v1/groups/%d/graph", base, g.ID)

	status, dot := getText(t, graphURL+"?format=dot")
	require.Equal(t, http.StatusOK, status, dot)
	require.True(t, strings.HasPrefix(dot, "digraph "), dot)
	_, byDefault := getText(t, graphURL)
	require.Equal(t, dot, byDefault, "DOT is the default format")
	for _, want := range []string{
		fmt.Sprintf(`j%d [label="top\ncomplete", fillcolor="#a9dfbf"`, id["top"]),
		fmt.Sprintf(`j%d [label="c2\njob_failed", fillcolor="#f5b7b1"`, id["c2"]),
		fmt.Sprintf(`j%d [label="c3\ndependency_failed", fillcolor="#fad7a0"`, id["c3"]),
		fmt.Sprintf(`j%d [label="say \"hi\" \\ <b>#1</b> & `+"`go`"+`\ncomplete"`, id[odd]),
		fmt.Sprintf("j%d -> j%d;", id["top"], id["left"]), fmt.Sprintf("j%d -> j%d;", id[odd], id["bottom"]),
		fmt.Sprintf("j%d -> j%d;", id["c2"], id["c3"]),
		`state_complete [label="complete: 5"`, `state_job_failed [label="job_failed: 1"`,
	} {
		require.Contains(t, dot, want)
	}
	require.Equal(t, 6, strings.Count(dot, " -> j"), "one edge per dependency")
	requireRenders(t, "dot", dot)

	status, mermaid := getText(t, graphURL+"?format=mermaid")
	require.Equal(t, http.StatusOK, status, mermaid)
	require.Contains(t, mermaid, "\nflowchart TD\n")
	for _, want := range []string{
		fmt.Sprintf(`j%d["top<br/>complete"]:::complete`, id["top"]),
		fmt.Sprintf(`j%d["c2<br/>job_failed"]:::job_failed`, id["c2"]),
		fmt.Sprintf(`j%d["say #quot;hi#quot; \ #lt;b#gt;#35;1#lt;/b#gt; #amp; #96;go#96;<br/>complete"]`, id[odd]),
		fmt.Sprintf("j%d --> j%d", id["c2"], id["c3"]),
		"classDef complete fill:#a9dfbf", `state_dependency_failed["dependency_failed: 1"]:::dependency_failed`,
	} {
		require.Contains(t, mermaid, want)
	}
	require.Equal(t, 6, strings.Count(mermaid, " --> j"))

	for _, bad := range []string{"svg", "DOT", "dot,mermaid"} {
		status, body := getText(t, graphURL+"?format="+bad)
		require.Equal(t, http.StatusBadRequest, status, body)
		var p struct{ Field string }
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		require.Equal(t, "format", p.Field)
	}
	for _, format := range []string{"dot", "mermaid"} {
		status, body := getText(t, fmt.Sprintf("%s/v1/groups/%d/graph?format=%s", base, g.ID+1000, format))
		require.Equal(t, http.StatusNotFound, status, body)
	}
}

// TestGroupGraphIsWrittenPageByPage draws a group larger than the page the handler reads at a
// time: every job and every edge is there once.
func TestGroupGraphIsWrittenPageByPage(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testdb.New(t))
	cfg.MaxJobsPerGroup = 2500
	base := startScheduler(t, cfg)
	var jobs []dag.JobSpec
	for i := range 2345 { // chains of 5, no worker: the first of each ready, the rest waiting
		j := sh(fmt.Sprintf("j-%d", i), "true")
		if i%5 != 0 {
			j.DependsOn = []string{fmt.Sprintf("j-%d", i-1)}
		}
		jobs = append(jobs, j)
	}
	var g jobgraph.Group
	require.Equal(t, http.StatusCreated, servicetest.Call(t, http.MethodPost, base+"/v1/groups", dag.Submission{Name: "big", Jobs: jobs}, &g))
	for format, edge := range map[string]string{"dot": " -> j", "mermaid": " --> j"} {
		status, body := getText(t, fmt.Sprintf("%s/v1/groups/%d/graph?format=%s", base, g.ID, format))
		require.Equal(t, http.StatusOK, status)
		nodes := regexp.MustCompile(`(?m)^  j[0-9]+ ?\[`).FindAllString(body, -1)
		require.Len(t, nodes, 2345, format)
		require.Equal(t, 2345-469, strings.Count(body, edge), format)
		require.Contains(t, body, "ready: 469")
		require.Contains(t, body, "waiting_on_dependency: 1876")
	}
}

// requireRenders runs the picture through the named renderer when the machine has it, so a
// syntax error fails the test there (the renderer is not needed to run the tests).
func requireRenders(t *testing.T, renderer, picture string) {
	t.Helper()
	path, err := exec.LookPath(renderer)
	if err != nil {
		t.Logf("%s not installed: the picture is not rendered", renderer)
		return
	}
	cmd := exec.CommandContext(t.Context(), path, "-Tsvg")
	cmd.Stdin = strings.NewReader(picture)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s: %s", renderer, stderr.String())
	require.Empty(t, stderr.String())
	require.Contains(t, string(out), "<svg")
}
