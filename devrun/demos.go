package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"drover.dev/shared/procattr"
)

// demo is one workload's demonstration program, run against the live fleet when it is built.
type demo struct {
	name   string
	binary string
	args   func(f *fleet, opts options) []string
	// helper, when set, is a process the demo needs running first (e.g. a build worker).
	helper *helperProcess
}

type helperProcess struct {
	name, binary string
	args         []string
	addrs        []string // the fixed addresses it listens on
	env          func(f *fleet, opts options) map[string]string
}

// demos are run in order after the probes; one whose binary is missing is skipped with a note.
var demos []demo

func runDemos(ctx context.Context, opts options, f *fleet, p *printer) error {
	p.step("probing every pair of services through their queues")
	errs := []error{probeAll(ctx, opts, f, p)}
	if f.minersim {
		errs = append(errs, showSync(ctx, opts, f, p))
	}
	for _, d := range demos {
		if ctx.Err() != nil {
			break
		}
		errs = append(errs, runDemo(ctx, opts, f, p, d))
		if d.name == "batch" && f.minersim {
			errs = append(errs, showWeights(ctx, opts, f, p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		p.fail("some demos failed: %v", err)
		return err
	}
	p.ok("all demos succeeded")
	return nil
}

func runDemo(ctx context.Context, opts options, f *fleet, p *printer, d demo) error {
	path := filepath.Join(opts.bin, d.binary)
	if !built(opts, d.binary) {
		p.info("%s demo skipped: %s is not built", d.name, d.binary)
		return nil
	}
	p.step("%s demo", d.name)
	if h := d.helper; h != nil {
		s := &service{name: h.name, addrs: h.addrs}
		if err := s.start(ctx, opts, h.binary, h.args, h.env(f, opts)); err != nil {
			return err
		}
		f.extra = append(f.extra, s)
		p.ok("started %s (log %s)", h.name, filepath.Join(opts.logs, h.name+".log"))
		f.supervise(ctx, opts, p, s)
	}
	cmd := exec.CommandContext(ctx, path, d.args(f, opts)...)
	cmd.Env = env(opts, nil)
	procattr.DieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s demo: %w", d.name, err)
	}
	relay(out, p, d.name)
	if err := cmd.Wait(); err != nil {
		p.fail("%s demo: %v", d.name, err)
		return fmt.Errorf("%s demo: %w", d.name, err)
	}
	p.ok("%s demo finished", d.name)
	return nil
}

// relay prints a demo's output line by line under devrun's clock.
func relay(r io.Reader, p *printer, name string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.info("%s | %s", name, sc.Text())
	}
}

type probeView struct {
	ID          int64    `json:"id"`
	State       string   `json:"state"`
	RoundTripMS *float64 `json:"round_trip_ms"`
}

// probeAll sends a probe from every service to every service and waits for each to come back.
func probeAll(ctx context.Context, opts options, f *fleet, p *printer) error {
	var failed []string
	for _, from := range f.services {
		var cells []string
		for _, to := range f.services {
			rt, err := probe(ctx, opts, from, to)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s→%s: %v", from.name, to.name, err))
				cells = append(cells, to.name+" FAILED")
				continue
			}
			cells = append(cells, fmt.Sprintf("%s %.0fms", to.name, rt))
		}
		p.info("%-16s → %s", from.name, strings.Join(cells, ", "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("probes failed: %s", strings.Join(failed, "; "))
	}
	p.ok("%d probes made the round trip (times: sent → acknowledged back at the origin)", len(f.services)*len(f.services))
	return nil
}

func probe(ctx context.Context, opts options, from, to *service) (float64, error) {
	var sent probeView
	body := fmt.Sprintf(`{"target":%q}`, to.name)
	if err := apiCall(ctx, opts, http.MethodPost, from.url+"/v1/probes", body, &sent); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var got probeView
		if err := apiCall(ctx, opts, http.MethodGet, fmt.Sprintf("%s/v1/probes/%d", from.url, sent.ID), "", &got); err != nil {
			return 0, err
		}
		if got.State == "acked" && got.RoundTripMS != nil {
			return *got.RoundTripMS, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	return 0, errors.New("no acknowledgement within 20s")
}

func apiCall(ctx context.Context, opts options, method, url, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+opts.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
