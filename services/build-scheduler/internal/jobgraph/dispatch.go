package jobgraph

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
)

// readyJob is a job that has just become ready and needs a dispatch token.
type readyJob struct {
	id, groupID int64
	target      string
}

// collectReady reads (id, target, is_ready) rows and keeps the ready ones.
func collectReady(rows pgx.Rows, groupID int64) ([]readyJob, error) {
	var out []readyJob
	for rows.Next() {
		var (
			r  = readyJob{groupID: groupID}
			ok bool
		)
		if err := rows.Scan(&r.id, &r.target, &ok); err != nil {
			rows.Close()
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// dispatch inserts one dispatch token per job into its target's queue, on tx, so that a job
// becomes ready and gets its token together or not at all. InsertManyTx is one statement, one
// round trip; River's COPY insert takes two and cost more than the rows it saves, as most reports
// release one or two jobs.
func (g *Graph) dispatch(ctx context.Context, tx pgx.Tx, jobs []readyJob) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: queue.BuildRunArgs{Target: j.target, GroupID: j.groupID, JobID: j.id}}
	}
	if _, err := g.Tokens.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("dispatch %d jobs of group %d: %w", len(jobs), jobs[0].groupID, err)
	}
	return nil
}
