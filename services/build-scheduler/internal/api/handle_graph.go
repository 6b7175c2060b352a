package api

import (
	"net/http"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/picture"
	"drover.dev/shared/problem"
	"drover.dev/shared/web"
)

// graphPage is how many jobs a picture reads at a time: the answer is written page by page, so
// a group of any size (up to MAX_JOBS_PER_GROUP) is drawn in constant memory.
const graphPage = 1000

// handleGraph draws a group's DAG with each job's state, as Graphviz DOT or Mermaid (?format=,
// dot by default). Every page is read in one read-only repeatable-read transaction, so the
// picture is one instant of the group even while it is written out.
func handleGraph(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		format := picture.Format(c.QueryParam("format"))
		if format == "" {
			format = picture.DOT
		}
		if !slices.Contains(picture.Formats(), format) {
			return problem.Invalidf("format", "unknown format %q; one of %v", format, picture.Formats())
		}
		ctx := c.Request().Context()
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, pool, opts, func(tx pgx.Tx) error {
			g, err := jobgraph.GetGroup(ctx, tx, id)
			if err != nil {
				return err
			}
			page, err := jobgraph.GraphPage(ctx, tx, id, 0, graphPage)
			if err != nil {
				return err
			}
			w := c.Response()
			w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			p := picture.Begin(w, format, g)
			for len(page) > 0 {
				for _, j := range page {
					p.Job(j)
				}
				if len(page) < graphPage {
					break
				}
				if page, err = jobgraph.GraphPage(ctx, tx, id, page[len(page)-1].ID, graphPage); err != nil {
					return err
				}
			}
			return p.End()
		})
	}
}
