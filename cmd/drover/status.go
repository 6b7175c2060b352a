package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// serviceStatus is one service as status shows it.
type serviceStatus struct {
	Name   string        `json:"name"`
	URL    string        `json:"url"`
	Ready  bool          `json:"ready"`
	Detail string        `json:"detail,omitempty"` // why it is not ready
	Queues []queueStatus `json:"queues"`
	// Processes are the River client processes working the service's schema: its replicas (and
	// build-scheduler's build workers), live, or dead until a sweep gives their jobs back.
	Processes []processStatus `json:"processes"`
}

// processStatus is one River client process as GET /v1/processes gives it.
type processStatus struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	State     string    `json:"state"`
	RenewedAt time.Time `json:"renewed_at"`
	Timeout   string    `json:"timeout"`
	Running   int       `json:"running"`
}

// queueStatus is one River queue: unfinished jobs by state, and how long the next has waited.
type queueStatus struct {
	Queue         string             `json:"queue"`
	Jobs          map[string]float64 `json:"jobs"`
	OldestWaiting float64            `json:"oldest_available_seconds"`
}

// fleetStatus is what status prints.
type fleetStatus struct {
	Services       []serviceStatus `json:"services"`
	LastSync       json.RawMessage `json:"last_sync"`
	LastBatch      json.RawMessage `json:"last_batch"`
	LastSubmission json.RawMessage `json:"last_weights_submission"`
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "status",
		GroupID: "fleet",
		Short:   "Every service's health and queues, the last sync, batch and weights sent",
		Long: `status reads every service's /readyz and /metrics (River's jobs by queue and state, and the
age of each queue's next job), its River client processes (/v1/processes: each replica and build
worker, live, or DEAD from when it stopped renewing its liveness record until a sweep gives its
jobs back), miner-sync's last sync (with its block), batch-runner's last batch and scorer's last
weights submission, and prints them on one screen. It exits 5 when a service
does not answer or is not ready.`,
		Example: "  drover status\n  drover status -o json | jq '.services[] | select(.ready | not)'",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			st := a.fleetStatus()
			if err := a.printStatus(st); err != nil {
				return err
			}
			for _, s := range st.Services {
				if !s.Ready {
					return &exitError{code: exitUnavailable, err: fmt.Errorf("%s is not ready: %s", s.Name, s.Detail)}
				}
			}
			return nil
		},
	}
}

// fleetStatus asks every service at once.
func (a *app) fleetStatus() fleetStatus {
	st := fleetStatus{Services: make([]serviceStatus, len(services))}
	var wg sync.WaitGroup
	for i, s := range services {
		wg.Go(func() { st.Services[i] = a.serviceStatus(s.name) })
	}
	last := func(op operation, into *json.RawMessage) {
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := a.api.get(a.ctx, request{op: op, query: map[string][]string{"limit": {"1"}}}, &page); err == nil && len(page.Items) > 0 {
			*into = page.Items[0]
		}
	}
	wg.Go(func() { last(opListSyncEvents, &st.LastSync) })
	wg.Go(func() { last(opListBatches, &st.LastBatch) })
	wg.Go(func() { last(opListWeightSubmissions, &st.LastSubmission) })
	wg.Wait()
	return st
}

func (a *app) serviceStatus(name string) serviceStatus {
	s := serviceStatus{Name: name, URL: a.cfg.urls[name], Queues: []queueStatus{}, Processes: []processStatus{}}
	if _, err := a.api.call(a.ctx, request{op: opReadiness, service: name}); err != nil {
		s.Detail = err.Error()
		if se, ok := errors.AsType[*statusError](err); ok {
			s.Detail = se.problem
		}
		return s
	}
	s.Ready = true
	raw, err := a.api.call(a.ctx, request{op: opMetrics, service: name})
	if err != nil {
		s.Detail = "metrics: " + err.Error()
		return s
	}
	s.Queues = queuesOf(raw)
	var page struct {
		Items []processStatus `json:"items"`
	}
	if err := a.api.get(a.ctx, request{op: opListProcesses, service: name}, &page); err != nil {
		s.Detail = "processes: " + err.Error()
		return s
	}
	s.Processes = page.Items
	return s
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// queuesOf reads drover_river_jobs and drover_river_oldest_available_seconds from Prometheus's
// text format.
func queuesOf(metrics []byte) []queueStatus {
	byQueue := map[string]*queueStatus{}
	queue := func(name string) *queueStatus {
		if byQueue[name] == nil {
			byQueue[name] = &queueStatus{Queue: name, Jobs: map[string]float64{}}
		}
		return byQueue[name]
	}
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "drover_river_jobs" && name != "drover_river_oldest_available_seconds") {
			continue
		}
		labelText, valueText, _ := strings.Cut(rest, "} ")
		value, err := strconv.ParseFloat(strings.TrimSpace(valueText), 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(labelText, -1) {
			labels[m[1]] = m[2]
		}
		q := queue(labels["queue"])
		if name == "drover_river_jobs" {
			q.Jobs[labels["state"]] = value
		} else {
			q.OldestWaiting = value
		}
	}
	out := make([]queueStatus, 0, len(byQueue))
	for _, name := range slices.Sorted(maps.Keys(byQueue)) {
		out = append(out, *byQueue[name])
	}
	return out
}

// jobStates are the columns of the queue table, in River's order.
var jobStates = []string{"available", "running", "retryable", "scheduled", "pending"}

func (a *app) printStatus(st fleetStatus) error {
	if a.out.json {
		return a.out.value(st)
	}
	tw := tabwriter.NewWriter(a.out.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tREADY\tQUEUE\t"+strings.ToUpper(strings.Join(jobStates, "\t"))+"\tOLDEST WAITING")
	for _, s := range st.Services {
		ready := "ready"
		if !s.Ready {
			ready = "DOWN: " + firstLine(s.Detail)
		}
		if len(s.Queues) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\n", s.Name, ready)
		}
		for i, q := range s.Queues {
			name := s.Name
			if i > 0 {
				name, ready = "", ""
			}
			cells := []string{name, ready, q.Queue}
			for _, state := range jobStates {
				cells = append(cells, format(q.Jobs[state]))
			}
			cells = append(cells, seconds(q.OldestWaiting))
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(a.out.w)
	a.printProcesses(st)
	a.out.fields(map[string]any{
		"sync":   summary(st.LastSync, "#%v %v at %v, block %v, %v entries", "id", "outcome", "at", "block", "entries"),
		"batch":  summary(st.LastBatch, "#%v %v, %v miners, created %v, jobs %v", "id", "state", "miners", "created_at", "counts"),
		"weight": summary(st.LastSubmission, "#%v %v via %v at %v, block %v", "id", "outcome", "via", "at", "block"),
	}, cols("last sync", "sync", "last batch", "batch", "weights last sent", "weight"))
	return nil
}

// printProcesses prints every service's River client processes: a dead one (it stopped renewing
// its liveness record) stays listed, in capitals, until a sweep has given its jobs back.
func (a *app) printProcesses(st fleetStatus) {
	tw := tabwriter.NewWriter(a.out.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tPROCESS\tHOST\tPID\tSTATE\tRENEWED\tRUNNING JOBS")
	for _, s := range st.Services {
		for _, p := range s.Processes {
			state := p.State
			if state != "live" {
				state = strings.ToUpper(state) + " (timeout " + p.Timeout + ")"
			}
			service := s.Name
			if p.Name != s.Name {
				service += " (" + p.Name + ")"
			}
			renewed := time.Since(p.RenewedAt).Round(100*time.Millisecond).String() + " ago"
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\n", service, p.ID, p.Host, p.PID, state, renewed, p.Running)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(a.out.w)
}

// summary formats keys of the object raw into layout; nil when there is none.
func summary(raw json.RawMessage, layout string, keys ...string) any {
	var item map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &item) != nil {
		return nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = format(item[k])
	}
	return fmt.Sprintf(layout, args...)
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 60 {
		line = line[:60] + "…"
	}
	return line
}
