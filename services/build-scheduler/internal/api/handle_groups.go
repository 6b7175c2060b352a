package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/queue"
	"drover.dev/services/build-scheduler/internal/dag"
	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/shared/backlog"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// groupEvents is how many of its latest events a group's answer carries, and eventsPage how many
// GET /v1/groups/{id}/events lists.
const (
	groupEvents = 20
	eventsPage  = 500
)

// GroupView is a group with its latest events.
type GroupView struct {
	jobgraph.Group
	Events []jobgraph.Event `json:"events"`
}

func handleSubmit(pool *pgxpool.Pool, graph *jobgraph.Graph, submit Submit, queued *backlog.Gauge) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var sub dag.Submission
		if err := web.DecodeJSON(c, &sub); err != nil {
			return err
		}
		plan, err := dag.Validate(sub, submit.Limits)
		if err != nil {
			return err
		}
		if err := admitTargets(c, queued, plan); err != nil {
			return err
		}
		ctx := c.Request().Context()
		var id int64
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			id, err = graph.SubmitTx(ctx, tx, plan, submit.MaxAttempts)
			return err
		})
		if err != nil {
			return err
		}
		return writeGroup(c, pool, http.StatusCreated, id)
	}
}

// admitTargets refuses a group when the build queue of one of its targets is full: its jobs
// would only wait behind the others.
func admitTargets(c *echo.Context, queued *backlog.Gauge, plan dag.Plan) error {
	seen := map[string]bool{}
	for _, j := range plan.Jobs {
		if seen[j.Target] {
			continue
		}
		seen[j.Target] = true
		if err := queued.Admit(c, backlog.Key{Service: queue.BuildScheduler, Queue: queue.BuildQueue(j.Target)}); err != nil {
			return err
		}
	}
	return nil
}

func handleGetGroup(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		return writeGroup(c, pool, http.StatusOK, id)
	}
}

func writeGroup(c *echo.Context, db postgres.DBTX, status int, id int64) error {
	ctx := c.Request().Context()
	g, err := jobgraph.GetGroup(ctx, db, id)
	if err != nil {
		return err
	}
	events, err := jobgraph.Events(ctx, db, id, groupEvents)
	if err != nil {
		return err
	}
	if events == nil {
		events = []jobgraph.Event{}
	}
	return c.JSON(status, GroupView{Group: g, Events: events})
}

func handleListGroups(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		state, err := stateParam(c, jobgraph.GroupStates())
		if err != nil {
			return err
		}
		p, before, err := web.ParseIDListParams(c)
		if err != nil {
			return err
		}
		groups, err := jobgraph.ListGroups(c.Request().Context(), pool, state, before, p.Limit)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(groups, p, func(g jobgraph.Group) any { return g.ID }))
	}
}

// handleGroupEvents lists a group's latest events, newest first, in one page.
func handleGroupEvents(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if _, err := jobgraph.GetGroup(ctx, pool, id); err != nil {
			return err
		}
		events, err := jobgraph.Events(ctx, pool, id, eventsPage)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.OnePage(events))
	}
}

func handleCancel(pool *pgxpool.Pool, graph *jobgraph.Graph) echo.HandlerFunc {
	return groupTransition(pool, func(ctx context.Context, tx pgx.Tx, id int64) error {
		_, err := graph.CancelTx(ctx, tx, id, "cancelled through the API")
		return err
	})
}

func handleRetry(pool *pgxpool.Pool, graph *jobgraph.Graph) echo.HandlerFunc {
	return groupTransition(pool, func(ctx context.Context, tx pgx.Tx, id int64) error {
		_, err := graph.RetryTx(ctx, tx, id)
		return err
	})
}

// groupTransition runs fn on the group named in the path in one transaction and answers with
// the group.
func groupTransition(pool *pgxpool.Pool, fn func(context.Context, pgx.Tx, int64) error) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fn(ctx, tx, id) }); err != nil {
			return err
		}
		return writeGroup(c, pool, http.StatusOK, id)
	}
}

func handleRecount(pool *pgxpool.Pool, graph *jobgraph.Graph) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx := c.Request().Context()
		var rep jobgraph.Recount
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			rep, err = graph.RecountTx(ctx, tx)
			return err
		})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, rep)
	}
}

// stateParam reads ?state=, which must be one of states when given.
func stateParam[S ~string](c *echo.Context, states []S) (S, error) {
	s := S(c.QueryParam("state"))
	if s != "" && !slices.Contains(states, s) {
		return "", problem.Invalidf("state", "unknown state %q; one of %v", s, states)
	}
	return s, nil
}
