package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/shared/postgres"
	"drover.dev/shared/problem"
)

// ScoresReplace writes the outcome of scoring batch id in place of any earlier one, so scoring a
// batch twice leaves exactly one set of rows.
func ScoresReplace(ctx context.Context, tx pgx.Tx, id int64, out scoring.Outcome) error {
	for _, table := range []string{"class_scores", "miner_scores"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE batch_id = $1`, id); err != nil {
			return fmt.Errorf("clear %s of batch %d: %w", table, id, err)
		}
	}
	if err := classScoresInsert(ctx, tx, id, out.Classes); err != nil {
		return err
	}
	return minerScoresInsert(ctx, tx, id, out.Miners)
}

func classScoresInsert(ctx context.Context, tx pgx.Tx, id int64, scores []scoring.ClassScore) error {
	n := len(scores)
	hotkeys, classes := make([]string, n), make([]string, n)
	weights, raws, normalised := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, s := range scores {
		hotkeys[i], classes[i] = s.Hotkey, s.ExecutorClass
		weights[i], raws[i], normalised[i] = s.ClassWeight, s.Raw, s.Normalised
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO class_scores (batch_id, hotkey, executor_class, class_weight, raw, normalised)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[])`,
		id, hotkeys, classes, weights, raws, normalised)
	if err != nil {
		return fmt.Errorf("insert class scores of batch %d: %w", id, err)
	}
	return nil
}

func minerScoresInsert(ctx context.Context, tx pgx.Tx, id int64, miners []scoring.MinerScore) error {
	n := len(miners)
	hotkeys, u16 := make([]string, n), make([]int32, n)
	cols := [5][]float64{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)}
	for i, m := range miners {
		hotkeys[i], u16[i] = m.Hotkey, int32(m.WeightU16)
		cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i] = m.Base, m.Dancing, m.NonPeak, m.Score, m.Weight
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO miner_scores (batch_id, hotkey, base, dancing, non_peak, score, weight, weight_u16)
		SELECT $1, * FROM unnest($2::text[], $3::float8[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::int[])`,
		id, hotkeys, cols[0], cols[1], cols[2], cols[3], cols[4], u16)
	if err != nil {
		return fmt.Errorf("insert miner scores of batch %d: %w", id, err)
	}
	return nil
}

// BatchScores is a scored batch as GET /v1/batches/{id}/scores shows it.
type BatchScores struct {
	BatchID   int64        `json:"batch_id"`
	StartedAt time.Time    `json:"started_at"`
	Peak      bool         `json:"peak"`
	ScoredAt  *time.Time   `json:"scored_at"`
	Miners    []MinerScore `json:"miners"`
}

// MinerScore is one miner's score in a batch with its per-class detail.
type MinerScore struct {
	Hotkey    string       `json:"hotkey"`
	Base      float64      `json:"base"`
	Dancing   float64      `json:"dancing"`
	NonPeak   float64      `json:"non_peak"`
	Score     float64      `json:"score"`
	Weight    float64      `json:"weight"`
	WeightU16 int          `json:"weight_u16"`
	Classes   []ClassScore `json:"classes"`
}

// ClassScore is a miner's inputs and score in one executor class.
type ClassScore struct {
	ExecutorClass string  `json:"executor_class"`
	Executors     int     `json:"executors"`
	Completed     int     `json:"completed"`
	Excused       int     `json:"excused"`
	Failed        int     `json:"failed"`
	ClassWeight   float64 `json:"class_weight"`
	Raw           float64 `json:"raw"`
	Normalised    float64 `json:"normalised"`
}

// BatchScoresGet returns batch id's scores; a batch received but not scored yet is NotFound.
func BatchScoresGet(ctx context.Context, db postgres.DBTX, id int64) (BatchScores, error) {
	bs := BatchScores{BatchID: id, Miners: []MinerScore{}}
	err := db.QueryRow(ctx, `SELECT started_at, peak, scored_at FROM batches WHERE id = $1 AND scored_at IS NOT NULL`, id).
		Scan(&bs.StartedAt, &bs.Peak, &bs.ScoredAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return bs, fmt.Errorf("scores of batch %d: %w", id, problem.ErrNotFound)
	}
	if err != nil {
		return bs, fmt.Errorf("get batch %d: %w", id, err)
	}
	rows, err := db.Query(ctx, `
		SELECT hotkey, base, dancing, non_peak, score, weight, weight_u16
		FROM miner_scores WHERE batch_id = $1 ORDER BY hotkey`, id)
	if err != nil {
		return bs, fmt.Errorf("get miner scores of batch %d: %w", id, err)
	}
	bs.Miners, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (MinerScore, error) {
		m := MinerScore{Classes: []ClassScore{}}
		return m, row.Scan(&m.Hotkey, &m.Base, &m.Dancing, &m.NonPeak, &m.Score, &m.Weight, &m.WeightU16)
	})
	if err != nil {
		return bs, fmt.Errorf("read miner scores of batch %d: %w", id, err)
	}
	return bs, classDetail(ctx, db, &bs)
}

func classDetail(ctx context.Context, db postgres.DBTX, bs *BatchScores) error {
	rows, err := db.Query(ctx, `
		SELECT s.hotkey, s.executor_class, i.executors, i.completed, i.excused, i.failed, s.class_weight, s.raw, s.normalised
		FROM class_scores s
		JOIN batch_inputs i USING (batch_id, hotkey, executor_class)
		WHERE s.batch_id = $1 ORDER BY s.hotkey, s.executor_class`, bs.BatchID)
	if err != nil {
		return fmt.Errorf("get class scores of batch %d: %w", bs.BatchID, err)
	}
	defer rows.Close()
	index := make(map[string]int, len(bs.Miners))
	for i, m := range bs.Miners {
		index[m.Hotkey] = i
	}
	for rows.Next() {
		var hotkey string
		var c ClassScore
		if err := rows.Scan(&hotkey, &c.ExecutorClass, &c.Executors, &c.Completed, &c.Excused, &c.Failed, &c.ClassWeight, &c.Raw, &c.Normalised); err != nil {
			return fmt.Errorf("read class scores of batch %d: %w", bs.BatchID, err)
		}
		if i, ok := index[hotkey]; ok {
			bs.Miners[i].Classes = append(bs.Miners[i].Classes, c)
		}
	}
	return rows.Err()
}
