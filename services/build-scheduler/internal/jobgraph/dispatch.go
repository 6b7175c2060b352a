package jobgraph

import (
	"context"
	"errors"
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
// release one or two jobs.
func (g *Graph) dispatch(ctx context.Context, tx pgx.Tx, jobs []readyJob) error {
	return g.dispatchWith(ctx, tx, nil, jobs)
}

// dispatchWith is dispatch, but for a Graph whose tokens are Announced and a last that is not
// nil, the insert is queued on last, the batch that carries the transaction's COMMIT (see
// commitWith), instead of taking a round trip of its own. Until River's driver can batch its
// insert (queue.ErrNotBatched: the process's first insert), it runs on tx as dispatch's does.
func (g *Graph) dispatchWith(ctx context.Context, tx pgx.Tx, last *pgx.Batch, jobs []readyJob) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: queue.BuildRunArgs{Target: j.target, GroupID: j.groupID, JobID: j.id, JobName: j.name}}
	}
	var err error
	if g.Announced && last != nil {
		err = queue.BatchInsertMany(ctx, last, g.Tokens, params)
	}
	if !g.Announced || last == nil || errors.Is(err, queue.ErrNotBatched) {
		_, err = g.Tokens.InsertManyTx(ctx, tx, params)
	}
	if err != nil {
		return fmt.Errorf("dispatch %d jobs of group %d: %w", len(jobs), jobs[0].groupID, err)
	}
	return nil
}
