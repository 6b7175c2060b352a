package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// operation is one OpenAPI operation drover calls: its service ("" for those every service
// serves), operationId, method and path template. TestOperationsAreDocumented holds each to the
// service's document.
type operation struct {
	service, id, method, path string
}

// The operations drover calls.
var (
	opReadiness = operation{"", "getReadiness", http.MethodGet, "/readyz"}
	opMetrics   = operation{"", "getMetrics", http.MethodGet, "/metrics"}
	// opListProcesses is every service's: its River client processes and their liveness.
	opListProcesses = operation{"", "listProcesses", http.MethodGet, "/v1/processes"}

	opListMiners     = operation{minerSync, "listMiners", http.MethodGet, "/v1/miners"}
	opStartSync      = operation{minerSync, "startSync", http.MethodPost, "/v1/sync"}
	opListSyncEvents = operation{minerSync, "listSyncEvents", http.MethodGet, "/v1/sync/events"}

	opCreateBatch     = operation{batchRunner, "createBatch", http.MethodPost, "/v1/batches"}
	opListBatches     = operation{batchRunner, "listBatches", http.MethodGet, "/v1/batches"}
	opGetCurrentBatch = operation{batchRunner, "getCurrentBatch", http.MethodGet, "/v1/batches/current"}
	opGetBatch        = operation{batchRunner, "getBatch", http.MethodGet, "/v1/batches/{id}"}
	opCancelBatch     = operation{batchRunner, "cancelBatch", http.MethodPost, "/v1/batches/{id}/cancel"}

	opGetBatchScores        = operation{scorer, "getBatchScores", http.MethodGet, "/v1/batches/{id}/scores"}
	opGetWeights            = operation{scorer, "getWeights", http.MethodGet, "/v1/weights"}
	opListWeightSubmissions = operation{scorer, "listWeightSubmissions", http.MethodGet, "/v1/weights/submissions"}

	opCreateGroup   = operation{buildScheduler, "createGroup", http.MethodPost, "/v1/groups"}
	opListGroups    = operation{buildScheduler, "listGroups", http.MethodGet, "/v1/groups"}
	opGetGroup      = operation{buildScheduler, "getGroup", http.MethodGet, "/v1/groups/{id}"}
	opListGroupJobs = operation{buildScheduler, "listGroupJobs", http.MethodGet, "/v1/groups/{id}/jobs"}
	opGetGroupGraph = operation{buildScheduler, "getGroupGraph", http.MethodGet, "/v1/groups/{id}/graph"}
	opCancelGroup   = operation{buildScheduler, "cancelGroup", http.MethodPost, "/v1/groups/{id}/cancel"}
	opRetryGroup    = operation{buildScheduler, "retryGroup", http.MethodPost, "/v1/groups/{id}/retry"}
	opGetBuildJob   = operation{buildScheduler, "getJob", http.MethodGet, "/v1/jobs/{id}"}
	opGetJobLog     = operation{buildScheduler, "getJobLog", http.MethodGet, "/v1/jobs/{id}/log"}

	opListTables        = operation{populateWorker, "listTables", http.MethodGet, "/v1/tables"}
	opPutTable          = operation{populateWorker, "putTable", http.MethodPut, "/v1/tables/{name}"}
	opRetireTable       = operation{populateWorker, "retireTable", http.MethodDelete, "/v1/tables/{name}"}
	opPopulateTable     = operation{populateWorker, "populateTable", http.MethodPost, "/v1/tables/{name}/populate"}
	opListPopulateRuns  = operation{populateWorker, "listPopulateRuns", http.MethodGet, "/v1/populate-runs"}
	opGetPopulateRun    = operation{populateWorker, "getPopulateRun", http.MethodGet, "/v1/populate-runs/{id}"}
	opCancelPopulateRun = operation{populateWorker, "cancelPopulateRun", http.MethodPost, "/v1/populate-runs/{id}/cancel"}
	opScheduleJobs      = operation{populateWorker, "scheduleJobs", http.MethodPost, "/v1/tables/{name}/schedule"}
	opListJobs          = operation{populateWorker, "listJobs", http.MethodGet, "/v1/jobs"}
	opIgnoreJob         = operation{populateWorker, "ignoreJob", http.MethodPost, "/v1/jobs/{table}/{key_hash}/ignore"}
	opRescheduleJob     = operation{populateWorker, "rescheduleJob", http.MethodPost, "/v1/jobs/{table}/{key_hash}/reschedule"}
)

// operations lists every operation drover calls, for the test.
var operations = []operation{
	opReadiness, opMetrics, opListProcesses, opListMiners, opStartSync, opListSyncEvents,
	opCreateBatch, opListBatches, opGetCurrentBatch, opGetBatch, opCancelBatch,
	opGetBatchScores, opGetWeights, opListWeightSubmissions,
	opCreateGroup, opListGroups, opGetGroup, opListGroupJobs, opGetGroupGraph, opCancelGroup, opRetryGroup,
	opGetBuildJob, opGetJobLog,
	opListTables, opPutTable, opRetireTable, opPopulateTable, opListPopulateRuns, opGetPopulateRun, opCancelPopulateRun,
	opScheduleJobs, opListJobs, opIgnoreJob, opRescheduleJob,
}

// maxAnswer bounds what drover reads of an answer that is not streamed.
const maxAnswer = 64 << 20

// client calls the services.
type client struct {
	cfg  config
	http *http.Client
}

// request is one call: the operation, on service (op.service when empty), its path parameters
// in the template's order, its query, and a body sent as JSON when not nil. admin sends the
// admin scope's token instead of the API token.
type request struct {
	op      operation
	service string
	params  []string
	query   url.Values
	body    any
	admin   bool
}

// url is the request's full URL.
func (r request) url(cfg config) string {
	path := r.op.path
	for _, p := range r.params {
		start := strings.Index(path, "{")
		end := strings.Index(path, "}")
		if start < 0 || end < start {
			break
		}
		path = path[:start] + url.PathEscape(p) + path[end+1:]
	}
	u := cfg.urls[cmpService(r)] + path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	return u
}

func cmpService(r request) string {
	if r.service != "" {
		return r.service
	}
	return r.op.service
}

// StatusError is an answer with a status that is not a success; Problem is its body.
type statusError struct {
	service string
	op      operation
	status  int
	problem string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s (%s): %d %s: %s", e.service, e.op.id, e.op.path, e.status, http.StatusText(e.status), problemMessage(e.problem))
}

// problemMessage is what a problem body says, the field at fault first when it names one
// ("jobs[0].command[0]: must be a string, not a boolean"); a body that is no problem is said as
// it is.
func problemMessage(body string) string {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Field  string `json:"field"`
	}
	if json.Unmarshal([]byte(body), &p) != nil || (p.Detail == "" && p.Title == "") {
		return body
	}
	msg := p.Detail
	if msg == "" {
		msg = p.Title
	}
	if p.Field != "" {
		msg = p.Field + ": " + msg
	}
	return msg
}

// open sends r and returns the answer of a 2xx status; any other is a *exitError with the code
// the status means, and a service that does not answer is exitUnavailable.
func (c *client) open(ctx context.Context, r request) (*http.Response, error) {
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", r.op.id, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.op.method, r.url(c.cfg), body)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	token := c.cfg.token
	if r.admin {
		token = c.cfg.adminToken
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &exitError{code: exitInterrupted, err: ctx.Err()}
		}
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("%s does not answer: %w", cmpService(r), err)}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		se := &statusError{service: cmpService(r), op: r.op, status: resp.StatusCode, problem: string(bytes.TrimSpace(raw))}
		return nil, &exitError{code: codeOf(resp.StatusCode), err: se}
	}
	return resp, nil
}

// call sends r and returns the answer's body (JSON, or text for the text operations).
func (c *client) call(ctx context.Context, r request) ([]byte, error) {
	resp, err := c.open(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.op.id, err)
	}
	return raw, nil
}

// get sends r and decodes its JSON answer into out.
func (c *client) get(ctx context.Context, r request, out any) error {
	raw, err := c.call(ctx, r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s: %w", r.op.id, err)
	}
	return nil
}
