package api

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// tableView is a computed table as GET /v1/tables shows it.
type tableView struct {
	*populate.Table
	Make   string          `json:"make"`   // go, three-part or http
	Source populate.Source `json:"source"` // code, file or api
}

func viewOf(t *populate.Table) tableView {
	kind := "go"
	switch {
	case t.FunctionURL != "":
		kind = "http"
	case t.Fetch != nil:
		kind = "three-part"
	}
	return tableView{Table: t, Make: kind, Source: t.Source()}
}

func handleTableList(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		out := []tableView{}
		for _, t := range e.Tables().All() {
			out = append(out, viewOf(t))
		}
		return c.JSON(http.StatusOK, web.OnePage(out))
	}
}

// populateRequest is POST /v1/tables/{name}/populate. reserve_jobs and schedule_jobs default to
// true: through the jobs table, every worker and replica shares the keys safely.
type populateRequest struct {
	Restriction    populate.Restriction `json:"restriction"`
	Order          populate.Order       `json:"order"`
	MaxCalls       int                  `json:"max_calls"`
	ReserveJobs    *bool                `json:"reserve_jobs"`
	ScheduleJobs   *bool                `json:"schedule_jobs"`
	SuppressErrors bool                 `json:"suppress_errors"`
	// Processes is 1 when omitted; an explicit 0 is refused, not read as the default.
	Processes *int `json:"processes"`
	// MinSchedulingInterval (seconds) overrides the service's for the schedule_jobs call that
	// precedes a reserved populate.
	MinSchedulingInterval *float64 `json:"min_scheduling_interval"`
}

// MaxWait bounds populate's wait parameter, in seconds.
const MaxWait = 60

// handlePopulate starts a populate run: 202 with the run (200 when it took no key to make and so
// has ended already), or with ?wait=SECONDS (0 to MaxWait)
// 200 with the ended run when it ends within that time (cut to what the server's write timeout
// leaves), else 202 with the running run.
func handlePopulate(e *populate.Engine, writeTimeout time.Duration) echo.HandlerFunc {
	return func(c *echo.Context) error {
		wait, err := waitParam(c, writeTimeout)
		if err != nil {
			return err
		}
		var req populateRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		interval, err := seconds(req.MinSchedulingInterval)
		if err != nil {
			return err
		}
		processes := 1
		if req.Processes != nil {
			processes = *req.Processes
		}
		if processes < 1 || processes > populate.MaxProcesses {
			return problem.Unprocessablef("processes", "must be 1 to %d", populate.MaxProcesses)
		}
		ctx := c.Request().Context()
		run, err := e.Populate(ctx, c.Param("name"), populate.Opts{
			Restriction: req.Restriction, Order: req.Order, MaxCalls: req.MaxCalls,
			ReserveJobs: orTrue(req.ReserveJobs), SkipSchedule: !orTrue(req.ScheduleJobs),
			SuppressErrors: req.SuppressErrors, Processes: processes, ScheduleInterval: interval,
		})
		if err != nil {
			return err
		}
		if wait > 0 && run.State == populate.RunRunning {
			waitCtx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if run, err = e.WaitRun(waitCtx, run.ID, waitPoll); err != nil {
				return err
			}
		}
		return c.JSON(runStatus(run), run)
	}
}

// waitPoll is how often a waiting populate call reads its run.
const waitPoll = 50 * time.Millisecond

// runStatus is 200 for an ended run, 202 for a running one.
func runStatus(run populate.Run) int {
	if run.State == populate.RunRunning {
		return http.StatusAccepted
	}
	return http.StatusOK
}

// waitParam reads ?wait=SECONDS, 0 to MaxWait, and cuts it so that the answer is written before
// the server's write timeout.
func waitParam(c *echo.Context, writeTimeout time.Duration) (time.Duration, error) {
	raw := c.QueryParam("wait")
	if raw == "" {
		return 0, nil
	}
	s, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(s) {
		return 0, problem.Invalidf("wait", "must be a number of seconds, not %q", raw)
	}
	if s < 0 || s > MaxWait {
		return 0, problem.Unprocessablef("wait", "must be 0 to %d seconds", MaxWait)
	}
	d := time.Duration(s * float64(time.Second))
	if writeTimeout > 0 {
		d = min(d, writeTimeout-5*time.Second)
	}
	return max(d, 0), nil
}

func handleRunGet(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		run, err := e.GetRun(c.Request().Context(), id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, run)
	}
}

func handleRunCancel(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		run, err := e.CancelRun(c.Request().Context(), id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, run)
	}
}

func orTrue(b *bool) bool { return b == nil || *b }

// scheduleRequest is POST /v1/tables/{name}/schedule; MinSchedulingInterval (seconds) overrides
// the service's for this call, and Restriction (as populate's) limits the keys it schedules.
type scheduleRequest struct {
	Force                 bool                 `json:"force"`
	Restriction           populate.Restriction `json:"restriction"`
	MinSchedulingInterval *float64             `json:"min_scheduling_interval"`
}

func handleSchedule(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var req scheduleRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		interval, err := seconds(req.MinSchedulingInterval)
		if err != nil {
			return err
		}
		res, err := e.ScheduleJobs(c.Request().Context(), c.Param("name"), populate.ScheduleOpts{
			Force: req.Force, Restriction: req.Restriction, MinInterval: interval,
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// seconds validates an optional min_scheduling_interval in seconds.
func seconds(s *float64) (*time.Duration, error) {
	if s == nil {
		return nil, nil
	}
	if *s < 0 || *s > 86400 {
		return nil, problem.Unprocessablef("min_scheduling_interval", "must be 0 to 86400 seconds")
	}
	d := time.Duration(*s * float64(time.Second))
	return &d, nil
}

func handleCleanup(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		res, err := e.CleanupJobs(c.Request().Context(), c.Param("name"), 0)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// handleProgress reads a restriction from the query: each parameter a key column, its value JSON
// (3, "a", [1,2]) or else a string.
func handleProgress(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := populate.Restriction{}
		for col, vals := range c.Request().URL.Query() {
			v := vals[len(vals)-1]
			if !json.Valid([]byte(v)) {
				b, _ := json.Marshal(v)
				v = string(b)
			}
			if err := web.CheckJSON(col, []byte(v)); err != nil {
				return err
			}
			r[col] = json.RawMessage(v)
		}
		p, err := e.Progress(c.Request().Context(), c.Param("name"), r)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, p)
	}
}
