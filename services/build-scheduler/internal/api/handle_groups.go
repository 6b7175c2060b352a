package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v5"

	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// Page is one page of a list; NextCursor is passed back as ?cursor= for the next page and is
// empty on the last one.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// GroupView is a group with its latest events.
type GroupView struct {
	jobgraph.Group
	Events []jobgraph.Event `json:"events"`
}

func (a *API) handleSubmit(c *echo.Context) error {
	var sub dag.Submission
	if err := web.DecodeJSON(c, &sub); err != nil {
		return err
	}
	plan, err := dag.Validate(sub, a.Limits)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var id int64
	err = pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error {
		id, err = a.Graph.SubmitTx(ctx, tx, plan, a.MaxAttempts)
		return err
	})
	if err != nil {
		return err
	}
	return a.writeGroup(c, http.StatusCreated, id)
}

func (a *API) handleGetGroup(c *echo.Context) error {
	id, err := web.PathInt64(c, "id")
	if err != nil {
		return err
	}
	return a.writeGroup(c, http.StatusOK, id)
}

func (a *API) writeGroup(c *echo.Context, status int, id int64) error {
	ctx := c.Request().Context()
	g, err := jobgraph.GetGroup(ctx, a.Pool, id)
	if err != nil {
		return err
	}
	events, err := jobgraph.Events(ctx, a.Pool, id, 20)
	if err != nil {
		return err
	}
	return c.JSON(status, GroupView{Group: g, Events: events})
}

func (a *API) handleListGroups(c *echo.Context) error {
	state, err := stateParam(c, jobgraph.GroupStates())
	if err != nil {
		return err
	}
	cursor, limit, err := pageParams(c)
	if err != nil {
		return err
	}
	groups, err := jobgraph.ListGroups(c.Request().Context(), a.Pool, state, cursor, limit)
	if err != nil {
		return err
	}
	page := Page[jobgraph.Group]{Items: groups}
	if len(groups) == limit {
		page.NextCursor = strconv.FormatInt(groups[len(groups)-1].ID, 10)
	}
	return c.JSON(http.StatusOK, page)
}

func (a *API) handleGroupEvents(c *echo.Context) error {
	id, err := web.PathInt64(c, "id")
	if err != nil {
		return err
	}
	events, err := jobgraph.Events(c.Request().Context(), a.Pool, id, 500)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, Page[jobgraph.Event]{Items: events})
}

func (a *API) handleCancel(c *echo.Context) error {
	return a.groupTransition(c, func(ctx context.Context, tx pgx.Tx, id int64) error {
		_, err := a.Graph.CancelTx(ctx, tx, id, "cancelled through the API")
		return err
	})
}

func (a *API) handleRetry(c *echo.Context) error {
	return a.groupTransition(c, func(ctx context.Context, tx pgx.Tx, id int64) error {
		_, err := a.Graph.RetryTx(ctx, tx, id)
		return err
	})
}

// groupTransition runs fn on the group named in the path in one transaction and answers with
// the group.
func (a *API) groupTransition(c *echo.Context, fn func(context.Context, pgx.Tx, int64) error) error {
	id, err := web.PathInt64(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error { return fn(ctx, tx, id) }); err != nil {
		return err
	}
	return a.writeGroup(c, http.StatusOK, id)
}

func (a *API) handleRecount(c *echo.Context) error {
	ctx := c.Request().Context()
	var rep jobgraph.Recount
	err := pgx.BeginFunc(ctx, a.Pool, func(tx pgx.Tx) error {
		var err error
		rep, err = a.Graph.RecountTx(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// stateParam reads ?state=, which must be one of states when given.
func stateParam[S ~string](c *echo.Context, states []S) (S, error) {
	s := S(c.QueryParam("state"))
	if s != "" && !slices.Contains(states, s) {
		return "", problem.Invalidf("state", "unknown state %q; one of %v", s, states)
	}
	return s, nil
}

// pageParams reads ?cursor= (an id from next_cursor) and ?limit= (1..500, default 100).
func pageParams(c *echo.Context) (int64, int, error) {
	var cursor int64
	if s := c.QueryParam("cursor"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, problem.Invalidf("cursor", "not a cursor this API returned: %q", s)
		}
		cursor = n
	}
	limit := 100
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return 0, 0, problem.Invalidf("limit", "must be an integer from 1 to 500, not %q", s)
		}
		limit = n
	}
	return cursor, limit, nil
}
