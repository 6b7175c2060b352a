package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// client calls the populate-worker's API.
type client struct {
	base, token string
	http        http.Client
}

// do sends body as JSON and decodes the answer into out; any status but want is an error
// carrying the problem the service answered.
func (c *client) do(ctx context.Context, method, path string, body, out any, want int) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// The example pipelines, in dependency order.
var tables = []string{"example_signal_stats", "example_signal_energy", "example_signal_grade"}

func (c *client) requireTables(ctx context.Context, out io.Writer) error {
	var list struct {
		Tables []struct{ Name, Make string }
	}
	if err := c.do(ctx, http.MethodGet, "/v1/tables", nil, &list, http.StatusOK); err != nil {
		return err
	}
	have := map[string]string{}
	for _, t := range list.Tables {
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
