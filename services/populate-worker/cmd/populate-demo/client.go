package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"drover.dev/shared/apiclient"
)

// client calls the populate-worker's API.
type client struct {
	base string
	api  apiclient.Client
}

// do sends body as JSON and decodes the answer into out; any status but want is an error
// carrying the problem the service answered.
func (c *client) do(ctx context.Context, method, path string, body, out any, want int, alsoWant ...int) error {
	status, err := c.api.Do(ctx, method, c.base+path, body, out)
	if err == nil && status != want && !slices.Contains(alsoWant, status) {
		return fmt.Errorf("%s %s: HTTP %d, want %d", method, path, status, want)
	}
	return err
}

// The example pipelines, in dependency order.
var tables = []string{"example_signal_stats", "example_signal_energy", "example_signal_grade"}

func (c *client) requireTables(ctx context.Context, out io.Writer) error {
	var list apiclient.Page[struct{ Name, Make string }]
	if err := c.do(ctx, http.MethodGet, "/v1/tables", nil, &list, http.StatusOK); err != nil {
		return err
	}
	have := map[string]string{}
	for _, t := range list.Items {
		have[t.Name] = t.Make
	}
	for _, name := range tables {
		if have[name] == "" {
			return fmt.Errorf("table %s is not registered: start populate-worker with POPULATE_WORKER_EXAMPLES=true", name)
		}
		fmt.Fprintf(out, "computed table %s (make: %s)\n", name, have[name])
	}
	return nil
}

type seedResult struct {
	SignalIDs []int64 `json:"signal_ids"`
	EmptyIDs  []int64 `json:"empty_ids"`
}

func (c *client) seed(ctx context.Context, n, empty int) (seedResult, error) {
	var res seedResult
	err := c.do(ctx, http.MethodPost, "/v1/examples/seed", map[string]int{"signals": n, "empty": empty}, &res, http.StatusCreated)
	if err != nil {
		return res, fmt.Errorf("%w (is POPULATE_WORKER_EXAMPLES_SEED=true?)", err)
	}
	return res, nil
}

type progress struct {
	Total     int            `json:"total"`
	Remaining int            `json:"remaining"`
	Jobs      map[string]int `json:"jobs"`
}

// progress is the table's progress restricted to the signals this demo inserted.
func (c *client) progress(ctx context.Context, table string, ids []int64) (progress, error) {
	var p progress
	b, _ := json.Marshal(ids)
	err := c.do(ctx, http.MethodGet, "/v1/tables/"+table+"/progress?signal_id="+url.QueryEscape(string(b)), nil, &p, http.StatusOK)
	return p, err
}
