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
	tag, err := tx.Exec(ctx, `
		INSERT INTO batches (id, started_at, peak) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO NOTHING`, b.ID, b.StartedAt, b.Peak)
	if err != nil {
		return fmt.Errorf("insert batch %d: %w", b.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return sameAsStored(ctx, tx, b)
	}
	return inputsInsert(ctx, tx, b)
}

func inputsInsert(ctx context.Context, tx pgx.Tx, b Batch) error {
	n := len(b.Results)
	hotkeys, classes := make([]string, n), make([]string, n)
	counts := [4][]int32{make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)}
	for i, r := range b.Results {
		hotkeys[i], classes[i] = r.Hotkey, r.ExecutorClass
		counts[0][i], counts[1][i] = int32(r.Executors), int32(r.Completed)
		counts[2][i], counts[3][i] = int32(r.Excused), int32(r.Failed)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO batch_inputs (batch_id, hotkey, executor_class, executors, completed, excused, failed)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[])`,
		b.ID, hotkeys, classes, counts[0], counts[1], counts[2], counts[3])
	if err != nil {
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
	b := Batch{ID: id}
	err := db.QueryRow(ctx, `SELECT started_at, peak FROM batches WHERE id = $1`, id).Scan(&b.StartedAt, &b.Peak)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, fmt.Errorf("batch %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return b, fmt.Errorf("get batch %d: %w", id, err)
	}
	b.Results, err = inputsGet(ctx, db, id)
	return b, err
}

func inputsGet(ctx context.Context, db postgres.DBTX, id int64) ([]scoring.Result, error) {
	rows, err := db.Query(ctx, `
		SELECT hotkey, executor_class, executors, completed, excused, failed
		FROM batch_inputs WHERE batch_id = $1 ORDER BY hotkey, executor_class`, id)
	if err != nil {
		return nil, fmt.Errorf("get inputs of batch %d: %w", id, err)
	}
	results, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (scoring.Result, error) {
		var r scoring.Result
		err := row.Scan(&r.Hotkey, &r.ExecutorClass, &r.Executors, &r.Completed, &r.Excused, &r.Failed)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read inputs of batch %d: %w", id, err)
	}
	return results, nil
}

// PeakHistory returns the executor counts of the two last peak batches as of batch b (b itself
// when it is a peak batch). Only batches that started before b (or are b) count, so scoring b
// again later gives the same history even after newer peaks arrived.
func PeakHistory(ctx context.Context, db postgres.DBTX, b Batch) (scoring.History, error) {
	rows, err := db.Query(ctx, `
		SELECT id FROM batches
		WHERE peak AND (started_at, id) <= ($1, $2)
		ORDER BY started_at DESC, id DESC LIMIT 2`, b.StartedAt, b.ID)
	if err != nil {
		return scoring.History{}, fmt.Errorf("find peak batches before batch %d: %w", b.ID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
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
	if _, err := db.Exec(ctx, `UPDATE batches SET scored_at = coalesce(scored_at, now()) WHERE id = $1`, id); err != nil {
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
