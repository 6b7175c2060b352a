package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v5"

	"drover.dev/services/build-scheduler/internal/jobgraph"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/web"
)

// followPoll is how often a followed log looks for new chunks.
const followPoll = 200 * time.Millisecond

func handleListJobs(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		state, err := stateParam(c, jobgraph.JobStates())
		if err != nil {
			return err
		}
		p, after, err := web.ParseIDListParams(c)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if _, err := jobgraph.GetGroup(ctx, pool, id); err != nil {
			return err
		}
		jobs, err := jobgraph.ListJobs(ctx, pool, id, state, after, p.Limit)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, web.NewPage(jobs, p, func(j jobgraph.Job) any { return j.ID }))
	}
}

func handleGetJob(pool *pgxpool.Pool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := web.PathInt64(c, "id")
		if err != nil {
			return err
		}
		j, err := jobgraph.GetJob(c.Request().Context(), pool, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, j)
	}
}

// handleLog writes a job's output as plain text, each attempt introduced by a marker line. With
// follow=true it keeps the response open and writes new output as it is stored, until the job
// is final and everything has been sent: plain chunked HTTP, readable with curl -N.
func handleLog(pool *pgxpool.Pool, logs logstore.Store) echo.HandlerFunc {
	return func(c *echo.Context) error { return writeLog(c, pool, logs) }
}

func writeLog(c *echo.Context, pool *pgxpool.Pool, logs logstore.Store) error {
	id, err := web.PathInt64(c, "id")
	if err != nil {
		return err
	}
	followParam, err := web.QueryBool(c, "follow")
	if err != nil {
		return err
	}
	follow := followParam != nil && *followParam
	ctx := c.Request().Context()
	if _, err := jobgraph.GetJob(ctx, pool, id); err != nil {
		return err
	}
	w := c.Response()
	rc := http.NewResponseController(w)
	var after int64
	attempt, started := 0, false
	for {
		// Whether the job was final is read before its chunks, so none stored before it became
		// final can be missed.
		done, err := logDone(c, pool, id, follow)
		if err != nil {
			return err
		}
		chunks, err := logs.Read(ctx, id, after, 500)
		if err != nil {
			return err
		}
		// The status goes out after the first read, so a log store that cannot be read (an S3
		// service out of reach) answers 500 rather than an empty log.
		if !started {
			w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, ch := range chunks {
			if ch.Attempt != attempt {
				attempt = ch.Attempt
				fmt.Fprintf(w, "=== attempt %d ===\n", attempt)
			}
			if _, err := w.Write(ch.Data); err != nil {
				return nil // the client went away
			}
			after = ch.Seq
		}
		if len(chunks) == 500 {
			continue
		}
		if done {
			return nil
		}
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		_ = rc.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// logDone reports whether a log response may end after the next read: always without follow,
// and with follow once the job is final (a worker stores its last chunks before it reports).
func logDone(c *echo.Context, pool *pgxpool.Pool, id int64, follow bool) (bool, error) {
	if !follow {
		return true, nil
	}
	j, err := jobgraph.GetJob(c.Request().Context(), pool, id)
	if err != nil {
		return false, err
	}
	return jobgraph.IsFinal(j.State), nil
}
