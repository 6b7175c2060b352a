package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// tableView is a computed table as GET /v1/tables shows it.
type tableView struct {
	*populate.Table
	Make string `json:"make"` // go, three-part or http
}

func handleTableList(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		out := []tableView{}
		for _, t := range e.Tables().All() {
			kind := "go"
			switch {
			case t.FunctionURL != "":
				kind = "http"
			case t.Fetch != nil:
				kind = "three-part"
			}
			out = append(out, tableView{Table: t, Make: kind})
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

func handlePopulate(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
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
		res, err := e.Populate(c.Request().Context(), c.Param("name"), populate.Opts{
			Restriction: req.Restriction, Order: req.Order, MaxCalls: req.MaxCalls,
			ReserveJobs: orTrue(req.ReserveJobs), SkipSchedule: !orTrue(req.ScheduleJobs),
			SuppressErrors: req.SuppressErrors, Processes: processes, ScheduleInterval: interval,
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
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
