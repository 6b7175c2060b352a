package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/servicetest"
	"drover.dev/shared/testdb"
)

// The number corpus: boundary values written as JSON literals. Every numeric field and
// parameter of the API gets each of them; a value is either accepted as sent or refused with a
// 4xx naming its field, never truncated, wrapped or answered with a 500.
const (
	int31  = "2147483648"           // 2^31: one past the largest 32-bit integer
	int63m = "9223372036854775807"  // 2^63-1: the largest 64-bit integer
	int63  = "9223372036854775808"  // 2^63: one past it
	huge   = "1e309"                // past float64
	neg63  = "-9223372036854775809" // one below the smallest 64-bit integer
)

// numberCorpus is the values every numeric input is tried with; each case adds its own limits.
var numberCorpus = []string{"-1", "0", "1", int31, int63m, int63, huge, neg63, "1.5", "1e2", `"1"`, "true", "null"}

// notIntegers are the literals of the corpus that are no integer at all: a 400, while an integer
// out of range is a 422.
var notIntegers = map[string]bool{"1.5": true, "1e2": true, `"1"`: true, "true": true}

// numberField is one numeric field of a submitted job: the literals it accepts, with the value
// each reads back as, and boundaries of its own to try.
type numberField struct {
	name   string
	extra  []string
	valid  map[string]float64 // literal → the value read back from the job
	readOf func(jobgraph.Job) float64
}

func TestSubmittedNumbersAreStoredAsSentOrRefused(t *testing.T) {
	t.Parallel()
	base := startScheduler(t, testConfig(t, testdb.New(t))) // MaxJobTimeout: 1h, DefaultJobTimeout: 1m

	fields := []numberField{
		{
			name: "priority", extra: []string{"2147483647", "-2147483648", "-2147483649"},
			valid:  map[string]float64{"-1": -1, "0": 0, "1": 1, "2147483647": 2147483647, "-2147483648": -2147483648, "null": 0},
			readOf: func(j jobgraph.Job) float64 { return float64(j.Priority) },
		},
		{
			name: "timeout_seconds", extra: []string{"3600", "3601", "86400"},
			valid:  map[string]float64{"0": 60, "1": 1, "3600": 3600, "null": 60}, // 0 and null: the default
			readOf: func(j jobgraph.Job) float64 { return j.TimeoutSeconds },
		},
	}
	for _, f := range fields {
		for _, v := range append(numberCorpus, f.extra...) {
			// The value sits in the fourth job, so the field named must carry the job's index.
			body := fmt.Sprintf(`{"name": "numbers", "jobs": [%s, %s, %s, {"name": "n", "target": "numbers", "command": ["true"], %q: %s}]}`,
				numberJob("a"), numberJob("b"), numberJob("c"), f.name, v)
			want, ok := f.valid[v]
			var g jobgraph.Group
			status, p := post(t, base+"/v1/groups", body, &g)
			what := fmt.Sprintf("%s = %s: %d %+v", f.name, v, status, p)
			switch {
			case notIntegers[v]: // the decoder's type error; it cannot know the job's index
				require.Equal(t, http.StatusBadRequest, status, what)
				require.Equal(t, "jobs."+f.name, p.Field, what)
				continue
			case !ok: // an integer out of range, however large
				require.Equal(t, http.StatusUnprocessableEntity, status, what)
				require.Equal(t, "jobs[3]."+f.name, p.Field, what)
				continue
			}
			require.Equal(t, http.StatusCreated, status, what)
			var jobs struct{ Items []jobgraph.Job }
			require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs))
			require.Len(t, jobs.Items, 4)
			require.Equal(t, "n", jobs.Items[3].Name, what)
			require.InDelta(t, want, f.readOf(jobs.Items[3]), 0, what)
		}
	}
}

func numberJob(name string) string {
	return fmt.Sprintf(`{"name": %q, "target": "numbers", "command": ["true"]}`, name)
}

// post sends body as it is written (json.Marshal would rewrite the literals) and returns the
// status and, for a 4xx, the problem; a created group is decoded into out.
func post(t *testing.T, url, body string, out any) (int, problemBody) {
	t.Helper()
	var raw json.RawMessage
	var p problemBody
	status := servicetest.Call(t, http.MethodPost, url, json.RawMessage(body), &raw)
	if status >= 400 {
		require.NoError(t, json.Unmarshal(raw, &p))
		return status, p
	}
	require.NoError(t, json.Unmarshal(raw, out))
	return status, p
}

func TestNumericParametersAreInRangeOrRefused(t *testing.T) {
	t.Parallel()
	base := startScheduler(t, testConfig(t, testdb.New(t)))
	var g jobgraph.Group
	status, _ := post(t, base+"/v1/groups", `{"name": "params", "jobs": [`+numberJob("a")+`]}`, &g)
	require.Equal(t, http.StatusCreated, status)
	var jobs struct{ Items []jobgraph.Job }
	require.Equal(t, http.StatusOK, servicetest.Call(t, http.MethodGet, fmt.Sprintf("%s/v1/groups/%d/jobs", base, g.ID), nil, &jobs))
	group, job := fmt.Sprint(g.ID), fmt.Sprint(jobs.Items[0].ID)

	// An id that could exist but does not is a 404; anything that is not a positive 64-bit id in
	// canonical decimal is a 400 naming the parameter.
	ids := map[string]int{group: http.StatusOK, "2147483648": http.StatusNotFound, int63m: http.StatusNotFound}
	for _, v := range append(numberCorpus, "01", "+1", "%221%22", "-0") {
		if _, ok := ids[v]; !ok && v != "1" { // 1 is an id, perhaps of the group
			ids[v] = http.StatusBadRequest
		}
	}
	for _, path := range []string{"/v1/groups/%s", "/v1/groups/%s/jobs", "/v1/groups/%s/events", "/v1/jobs/%s", "/v1/jobs/%s/log"} {
		for v, want := range ids {
			id := v
			if want == http.StatusOK && path[4] == 'j' {
				id = job
			}
			requireStatus(t, http.MethodGet, base+fmt.Sprintf(path, id), want, "id")
		}
	}
	for _, path := range []string{"/v1/groups/%s/cancel", "/v1/groups/%s/retry"} {
		for v, want := range ids {
			if want != http.StatusOK { // cancel and retry of the real group: see the group tests
				requireStatus(t, http.MethodPost, base+fmt.Sprintf(path, v), want, "id")
			}
		}
	}

	for _, v := range numberCorpus {
		if v == "true" {
			continue // follows the log of a job no worker runs: see the log tests
		}
		requireStatus(t, http.MethodGet, base+"/v1/jobs/"+job+"/log?follow="+v, http.StatusBadRequest, "follow")
	}
	requireStatus(t, http.MethodGet, base+"/v1/jobs/"+job+"/log?follow=false", http.StatusOK, "")

	limits := map[string]int{"1": http.StatusOK, "1000": http.StatusOK}
	cursors := map[string]int{cursor("1"): http.StatusOK, cursor(int63m): http.StatusOK}
	for _, v := range append(numberCorpus, "1001") {
		if _, ok := limits[v]; !ok {
			limits[v] = http.StatusBadRequest
		}
		if _, ok := cursors[cursor(v)]; !ok && v != "1001" && v != int31 { // ids: cursors the API may return
			cursors[cursor(v)] = http.StatusBadRequest
		}
	}
	for _, list := range []string{"/v1/groups", "/v1/groups/" + group + "/jobs"} {
		for v, want := range limits {
			requireStatus(t, http.MethodGet, base+list+"?limit="+v, want, "limit")
		}
		for v, want := range cursors {
			requireStatus(t, http.MethodGet, base+list+"?cursor="+v, want, "cursor")
		}
	}
}

// cursor is a list cursor encoding the JSON literal v.
func cursor(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }

// requireStatus requires url to answer want; a 400 names field.
func requireStatus(t *testing.T, method, url string, want int, field string) {
	t.Helper()
	var p problemBody
	status := servicetest.Call(t, method, url, nil, nil)
	if status >= 400 {
		servicetest.Call(t, method, url, nil, &p)
	}
	require.Equal(t, want, status, "%s %s: %+v", method, url, p)
	if want == http.StatusBadRequest {
		require.Equal(t, field, p.Field, "%s %s", method, url)
	}
}

type problemBody struct {
	Status int
	Field  string
	Detail string
}

func TestRunRefusesLimitsItCannotStore(t *testing.T) {
	t.Parallel()
	for name, breakIt := range map[string]func(*Config){
		"NoAttempts":         func(c *Config) { c.MaxAttempts = 0 },
		"AttemptsPast32Bits": func(c *Config) { c.MaxAttempts = math.MaxInt32 + 1 },
		"JobsPast32Bits":     func(c *Config) { c.MaxJobsPerGroup = math.MaxInt32 + 1 },
		"DefaultPastMax":     func(c *Config) { c.DefaultJobTimeout = 2 * c.MaxJobTimeout },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, "postgres://nowhere.invalid/none")
			breakIt(&cfg)
			require.ErrorContains(t, run(t.Context(), cfg, nil, io.Discard), "configuration")
		})
	}
}
