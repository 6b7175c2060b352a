package api

import (
	"net/http"
	"regexp"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

var keyHashPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// jobCursor is the sort key of GET /v1/jobs: (table_name, key_hash).
type jobCursor [2]string

func handleJobList(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, err := web.ParseListParams(c)
		if err != nil {
			return err
		}
		f, err := jobFilter(c, p)
		if err != nil {
			return err
		}
		jobs, err := populate.JobList(c.Request().Context(), e.Pool(), f)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(jobs, p, func(j populate.Job) any {
			return jobCursor{j.TableName, j.KeyHash}
		}))
	}
}

func jobFilter(c *echo.Context, p web.ListParams) (populate.JobListParams, error) {
	f := populate.JobListParams{Table: c.QueryParam("table"), Limit: p.Limit}
	if s := c.QueryParam("status"); s != "" {
		st, err := populate.ParseStatus(s)
		if err != nil {
			return f, problem.Invalidf("status", "must be one of %v", populate.Statuses())
		}
		f.Status = st
	}
	var after jobCursor
	if _, err := p.After(&after); err != nil {
		return f, err
	}
	f.AfterTable, f.AfterKeyHash = after[0], after[1]
	return f, nil
}

func jobPath(c *echo.Context) (string, string, error) {
	hash := c.Param("key_hash")
	if !keyHashPattern.MatchString(hash) {
		return "", "", problem.Invalidf("key_hash", "must be 32 lowercase hex digits")
	}
	return c.Param("table"), hash, nil
}

func handleJobGet(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		table, hash, err := jobPath(c)
		if err != nil {
			return err
		}
		job, err := populate.JobGet(c.Request().Context(), e.Pool(), table, hash)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, job)
	}
}

func handleJobIgnore(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		table, hash, err := jobPath(c)
		if err != nil {
			return err
		}
		job, err := e.Ignore(c.Request().Context(), table, hash)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, job)
	}
}

// ignoreRequest is POST /v1/tables/{name}/ignore: DataJoint's jobs.ignore(key).
type ignoreRequest struct {
	Key populate.Restriction `json:"key"`
}

func handleTableIgnore(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var req ignoreRequest
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		job, err := e.IgnoreKey(c.Request().Context(), c.Param("name"), req.Key)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, job)
	}
}

func handleJobReschedule(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		table, hash, err := jobPath(c)
		if err != nil {
			return err
		}
		job, err := e.Reschedule(c.Request().Context(), table, hash)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, job)
	}
}
