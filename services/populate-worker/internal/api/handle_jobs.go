package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"

	"github.com/labstack/echo/v5"

	"drover.dev/services/populate-worker/internal/populate"
	"drover.dev/shared/problem"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

var keyHashPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// jobPage is one page of GET /v1/jobs; NextCursor is empty on the last page.
type jobPage struct {
	Jobs       []populate.Job `json:"jobs"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func handleJobList(e *populate.Engine) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, err := jobListParams(c)
		if err != nil {
			return err
		}
		jobs, err := populate.JobList(c.Request().Context(), e.Pool(), p)
		if err != nil {
			return err
		}
		page := jobPage{Jobs: jobs}
		if len(jobs) == p.Limit {
			last := jobs[len(jobs)-1]
			b, _ := json.Marshal([2]string{last.TableName, last.KeyHash})
			page.NextCursor = base64.RawURLEncoding.EncodeToString(b)
		}
		return c.JSON(http.StatusOK, page)
	}
}

func jobListParams(c *echo.Context) (populate.JobListParams, error) {
	p := populate.JobListParams{Table: c.QueryParam("table"), Limit: defaultPageSize}
	if s := c.QueryParam("status"); s != "" {
		st, err := populate.ParseStatus(s)
		if err != nil {
			return p, problem.Invalidf("status", "must be scheduled, reserved, error, ignore or success")
		}
		p.Status = st
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			return p, problem.Invalidf("limit", "must be 1 to %d", maxPageSize)
		}
		p.Limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		var after [2]string
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || json.Unmarshal(b, &after) != nil {
			return p, problem.Invalidf("cursor", "is not a cursor this service returned")
		}
		p.AfterTable, p.AfterKeyHash = after[0], after[1]
	}
	return p, nil
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
