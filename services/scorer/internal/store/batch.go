package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// ErrInputsDiffer is returned by BatchInsert when the batch is already stored with other inputs:
// a batch id names one batch forever, so the second version is refused rather than mixed in.
var ErrInputsDiffer = errors.New("batch already stored with different inputs")

// Batch is a batch as scorer received it.
type Batch struct {
	ID        int64
	StartedAt time.Time
	Peak      bool
	Results   []scoring.Result
}

// BatchInsert stores b and its inputs. A batch stored before with the same inputs is left as it
// is (River delivers at least once); one with other inputs is ErrInputsDiffer.
func BatchInsert(ctx context.Context, tx pgx.Tx, b Batch) error {
	inserted, err := queries.BatchInsert(ctx, tx, dbsqlc.BatchInsertParams{ID: b.ID, StartedAt: b.StartedAt, Peak: b.Peak})
	if err != nil {
		return fmt.Errorf("insert batch %d: %w", b.ID, err)
	}
	if inserted == 0 {
		return sameAsStored(ctx, tx, b)
	}
	return inputsInsert(ctx, tx, b)
}

func inputsInsert(ctx context.Context, tx pgx.Tx, b Batch) error {
	n := len(b.Results)
	arg := dbsqlc.BatchInputInsertParams{
		BatchID: b.ID, Hotkeys: make([]string, n), ExecutorClasses: make([]string, n),
		Executors: make([]int32, n), Completed: make([]int32, n), Excused: make([]int32, n), Failed: make([]int32, n),
	}
	for i, r := range b.Results {
		arg.Hotkeys[i], arg.ExecutorClasses[i] = r.Hotkey, r.ExecutorClass
		arg.Executors[i], arg.Completed[i] = int32(r.Executors), int32(r.Completed)
		arg.Excused[i], arg.Failed[i] = int32(r.Excused), int32(r.Failed)
	}
	if err := queries.BatchInputInsert(ctx, tx, arg); err != nil {
		return fmt.Errorf("insert inputs of batch %d: %w", b.ID, err)
	}
	return nil
}

func sameAsStored(ctx context.Context, tx pgx.Tx, b Batch) error {
	stored, err := BatchGet(ctx, tx, b.ID)
	if err != nil {
		return err
	}
	// Sorted here, not by the database: its collation need not be byte order.
	same := slices.Equal(sortedResults(stored.Results), sortedResults(b.Results))
	if !stored.StartedAt.Equal(b.StartedAt) || stored.Peak != b.Peak || !same {
		return fmt.Errorf("batch %d: %w", b.ID, ErrInputsDiffer)
	}
	return nil
}

// BatchGet returns the stored batch id with its inputs, sorted by hotkey and class.
func BatchGet(ctx context.Context, db postgres.DBTX, id int64) (Batch, error) {
	row, err := queries.BatchGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Batch{ID: id}, fmt.Errorf("batch %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return Batch{ID: id}, fmt.Errorf("get batch %d: %w", id, err)
	}
	b := Batch{ID: id, StartedAt: row.StartedAt, Peak: row.Peak}
	b.Results, err = inputsGet(ctx, db, id)
	return b, err
}

func inputsGet(ctx context.Context, db postgres.DBTX, id int64) ([]scoring.Result, error) {
	rows, err := queries.BatchInputList(ctx, db, id)
	if err != nil {
		return nil, fmt.Errorf("get inputs of batch %d: %w", id, err)
	}
	results := make([]scoring.Result, len(rows))
	for i, r := range rows {
		results[i] = scoring.Result{Hotkey: r.Hotkey, ExecutorClass: r.ExecutorClass, Executors: int(r.Executors),
			Completed: int(r.Completed), Excused: int(r.Excused), Failed: int(r.Failed)}
	}
	return results, nil
}

// PeakHistory returns the executor counts of the two last peak batches as of batch b (b itself
// when it is a peak batch). Only batches that started before b (or are b) count, so scoring b
// again later gives the same history even after newer peaks arrived.
func PeakHistory(ctx context.Context, db postgres.DBTX, b Batch) (scoring.History, error) {
	ids, err := queries.BatchPeakList(ctx, db, dbsqlc.BatchPeakListParams{StartedAt: b.StartedAt, ID: b.ID})
	if err != nil {
		return scoring.History{}, fmt.Errorf("find peak batches before batch %d: %w", b.ID, err)
	}
	var peaks [2]scoring.Counts
	for i, id := range ids {
		results, err := inputsGet(ctx, db, id)
		if err != nil {
			return scoring.History{}, err
		}
		peaks[i] = scoring.CountsOf(results)
	}
	return scoring.History{CurrPeak: peaks[0], PrevPeak: peaks[1]}, nil
}

// BatchMarkScored records when the batch was first scored; scoring it again keeps that time.
func BatchMarkScored(ctx context.Context, db postgres.DBTX, id int64) error {
	if err := queries.BatchMarkScored(ctx, db, id); err != nil {
		return fmt.Errorf("mark batch %d scored: %w", id, err)
	}
	return nil
}

func sortedResults(results []scoring.Result) []scoring.Result {
	out := slices.Clone(results)
	slices.SortFunc(out, func(a, b scoring.Result) int {
		return cmp.Or(strings.Compare(a.Hotkey, b.Hotkey), strings.Compare(a.ExecutorClass, b.ExecutorClass))
	})
	return out
}
