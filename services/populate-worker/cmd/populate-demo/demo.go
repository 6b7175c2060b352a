package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"drover.dev/shared/populaterun"
)

// demo is one run over the signals it seeded.
type demo struct {
	client *client
	seed   seedResult
	out    io.Writer
}

// populateRun is what the demo reads of a populate run: what drover populate reads, drawn the
// same way, and its failed keys.
type populateRun struct {
	populaterun.Run
	ErrorList []struct {
		ErrorMessage string `json:"error_message"`
	} `json:"error_list"`
}

// populateAll starts a populate run of each table in dependency order, restricted to the seeded
// signals, and follows it to its end with a progress line.
func (d *demo) populateAll(ctx context.Context) error {
	for _, table := range tables {
		var run populateRun
		body := map[string]any{"restriction": map[string]any{"signal_id": d.seed.SignalIDs},
			"suppress_errors": true, "processes": 4, "order": "random", "min_scheduling_interval": 0}
		// 202 with the running run, or 200 with a run that ended at once: on a database an
		// earlier demo used, the background make workers may have made every key it would take.
		if err := d.client.do(ctx, http.MethodPost, "/v1/tables/"+table+"/populate", body, &run, http.StatusAccepted, http.StatusOK); err != nil {
			return err
		}
		run, err := d.follow(ctx, run)
		if err != nil {
			return err
		}
		fmt.Fprintln(d.out, populaterun.Summary(run.Run))
		if line, err := d.progressLine(ctx); err == nil {
			fmt.Fprintln(d.out, "progress  "+line)
		}
	}
	return nil
}

// follow reads run until it has ended, printing its progress line each time it moved, and the
// last one.
func (d *demo) follow(ctx context.Context, run populateRun) (populateRun, error) {
	last := ""
	for {
		if line := populaterun.Line(run.Run); line != last {
			fmt.Fprintln(d.out, line)
			last = line
		}
		if run.State != "running" {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		if err := d.client.do(ctx, http.MethodGet, fmt.Sprintf("/v1/populate-runs/%d", run.ID), nil, &run, http.StatusOK); err != nil {
			return run, err
		}
	}
}

func (d *demo) printProgress(ctx context.Context, done <-chan struct{}) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if line, err := d.progressLine(ctx); err == nil {
			fmt.Fprintln(d.out, "progress  "+line)
		}
	}
}

func (d *demo) progressLine(ctx context.Context) (string, error) {
	var parts []string
	for _, table := range tables {
		p, err := d.client.progress(ctx, table, d.seed.SignalIDs)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", strings.TrimPrefix(table, "example_signal_"), p.Total-p.Remaining, p.Total))
	}
	return strings.Join(parts, "  "), nil
}

// report waits until no seeded key is scheduled or reserved (River workers may still hold some),
// prints the counts and checks them: every table made every good signal, and exactly the empty
// signals failed in the tables that read samples.
func (d *demo) report(ctx context.Context) error {
	good, empty := len(d.seed.SignalIDs)-len(d.seed.EmptyIDs), len(d.seed.EmptyIDs)
	want := map[string][2]int{ // success, errors
		"example_signal_stats": {good, empty}, "example_signal_energy": {good, empty}, "example_signal_grade": {good, 0},
	}
	ok := true
	for _, table := range tables {
		p, err := d.settled(ctx, table)
		if err != nil {
			return err
		}
		success, errs := p.Total-p.Remaining, p.Jobs["error"]
		fmt.Fprintf(d.out, "%-22s success %4d  errors %3d  (expected %d and %d)\n", table, success, errs, want[table][0], want[table][1])
		ok = ok && success == want[table][0] && errs == want[table][1]
	}
	if !ok {
		return fmt.Errorf("the outcome differs from the expected one")
	}
	fmt.Fprintln(d.out, "populate demo: OK")
	return nil
}

func (d *demo) settled(ctx context.Context, table string) (progress, error) {
	done := make(chan struct{})
	defer close(done)
	go d.printProgress(ctx, done)
	for {
		p, err := d.client.progress(ctx, table, d.seed.SignalIDs)
		if err != nil {
			return p, err
		}
		if p.Jobs["scheduled"]+p.Jobs["reserved"] == 0 && p.Remaining == p.Jobs["error"]+p.Jobs["ignore"] {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("%s did not settle: %+v: %w", table, p, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
