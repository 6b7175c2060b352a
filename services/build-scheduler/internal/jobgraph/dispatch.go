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
	id, groupID  int64
	name, target string
}

// dispatch inserts one dispatch token per job into its target's queue, on tx, so that a job
// becomes ready and gets its token together or not at all. InsertManyTx is one statement, one
// round trip; River's COPY insert takes two and cost more than the rows it saves, as most reports
// release one or two jobs. Whether River notifies the target's workers inside tx depends on
// Tokens: a quiet inserter's caller announces the tokens after the commit (queue.Announcer).
func (g *Graph) dispatch(ctx context.Context, tx pgx.Tx, jobs []readyJob) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: queue.BuildRunArgs{Target: j.target, GroupID: j.groupID, JobID: j.id, JobName: j.name}}
	}
	if _, err := g.Tokens.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("dispatch %d jobs of group %d: %w", len(jobs), jobs[0].groupID, err)
	}
	return nil
}
