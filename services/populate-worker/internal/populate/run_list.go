package populate

import (
	"context"
	"encoding/json"
	"fmt"

	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

// RunFilter picks the runs ListRuns returns: those of Table and in State (every one when empty),
// with ids below Before (0: from the newest), at most Limit.
type RunFilter struct {
	Table  string
	State  RunState
	Before int64
	Limit  int
}

// ListRuns returns populate runs newest first, as GetRun shows them but with an empty
// error_list: a run's failed keys are read one run at a time.
func (e *Engine) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	rows, err := queries.RunList(ctx, e.pool, dbsqlc.RunListParams{
		Before: f.Before, TableName: f.Table, State: string(f.State), MaxRows: int32(f.Limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list populate runs: %w", err)
	}
	runs := make([]Run, 0, len(rows))
	for _, r := range rows {
		run, err := runOf(dbsqlc.RunGetRow(r))
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// runOf is a run's row as the API shows it, without its error_list: its counts, and its rate
// and ETA as of the database's clock.
func runOf(r dbsqlc.RunGetRow) (Run, error) {
	run := Run{
		ID: r.ID, Table: r.TableName, State: RunState(r.State), Stopping: r.Stopping, Total: r.Total,
		Made: r.Made, SuccessCount: r.Made, Errors: r.Errors, MadeElsewhere: r.MadeElsewhere, Skipped: r.Skipped,
		Dropped: r.Dropped, Queued: r.Queued, Remaining: r.Total - r.Made - r.Errors - r.MadeElsewhere - r.Skipped - r.Dropped, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt,
		ErrorList: []RunError{},
	}
	if err := json.Unmarshal(r.Options, &run.Options); err != nil {
		return Run{}, fmt.Errorf("populate run %d options: %w", r.ID, err)
	}
	end := r.Now
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	if secs := end.Sub(r.CreatedAt).Seconds(); secs > 0 {
		run.Rate = float64(r.Made+r.Errors) / secs
	}
	if run.State == RunRunning && run.Rate > 0 {
		eta := float64(run.Remaining) / run.Rate
		run.ETASeconds = &eta
	}
	return run, nil
}
