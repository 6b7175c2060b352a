package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/scorer/internal/scoring"
	"drover.dev/services/scorer/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// ScoresReplace writes the outcome of scoring batch id in place of any earlier one, so scoring a
// batch twice leaves exactly one set of rows.
func ScoresReplace(ctx context.Context, tx pgx.Tx, id int64, out scoring.Outcome) error {
	if err := queries.ClassScoreDelete(ctx, tx, id); err != nil {
		return fmt.Errorf("clear class scores of batch %d: %w", id, err)
	}
	if err := queries.MinerScoreDelete(ctx, tx, id); err != nil {
		return fmt.Errorf("clear miner scores of batch %d: %w", id, err)
	}
	if err := classScoresInsert(ctx, tx, id, out.Classes); err != nil {
		return err
	}
	return minerScoresInsert(ctx, tx, id, out.Miners)
}

func classScoresInsert(ctx context.Context, tx pgx.Tx, id int64, scores []scoring.ClassScore) error {
	n := len(scores)
	arg := dbsqlc.ClassScoreInsertParams{
		BatchID: id, Hotkeys: make([]string, n), ExecutorClasses: make([]string, n),
		ClassWeights: make([]float64, n), Raws: make([]float64, n), Normalised: make([]float64, n),
	}
	for i, s := range scores {
		arg.Hotkeys[i], arg.ExecutorClasses[i] = s.Hotkey, s.ExecutorClass
		arg.ClassWeights[i], arg.Raws[i], arg.Normalised[i] = s.ClassWeight, s.Raw, s.Normalised
	}
	if err := queries.ClassScoreInsert(ctx, tx, arg); err != nil {
		return fmt.Errorf("insert class scores of batch %d: %w", id, err)
	}
	return nil
}

func minerScoresInsert(ctx context.Context, tx pgx.Tx, id int64, miners []scoring.MinerScore) error {
	n := len(miners)
	arg := dbsqlc.MinerScoreInsertParams{
		BatchID: id, Hotkeys: make([]string, n), Bases: make([]float64, n), Dancing: make([]float64, n),
		NonPeaks: make([]float64, n), Scores: make([]float64, n), Weights: make([]float64, n), WeightsU16: make([]int32, n),
	}
	for i, m := range miners {
		arg.Hotkeys[i], arg.WeightsU16[i] = m.Hotkey, int32(m.WeightU16)
		arg.Bases[i], arg.Dancing[i], arg.NonPeaks[i], arg.Scores[i], arg.Weights[i] = m.Base, m.Dancing, m.NonPeak, m.Score, m.Weight
	}
	if err := queries.MinerScoreInsert(ctx, tx, arg); err != nil {
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
	b, err := queries.BatchScoredGet(ctx, db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return bs, failureOf(ctx, db, id)
	}
	if err != nil {
		return bs, fmt.Errorf("get batch %d: %w", id, err)
	}
	bs.StartedAt, bs.Peak, bs.ScoredAt = b.StartedAt, b.Peak, b.ScoredAt
	rows, err := queries.MinerScoreList(ctx, db, id)
	if err != nil {
		return bs, fmt.Errorf("get miner scores of batch %d: %w", id, err)
	}
	for _, m := range rows {
		bs.Miners = append(bs.Miners, MinerScore{Hotkey: m.Hotkey, Base: m.Base, Dancing: m.Dancing, NonPeak: m.NonPeak,
			Score: m.Score, Weight: m.Weight, WeightU16: int(m.WeightU16), Classes: []ClassScore{}})
	}
	return bs, classDetail(ctx, db, &bs)
}

func classDetail(ctx context.Context, db postgres.DBTX, bs *BatchScores) error {
	rows, err := queries.ClassScoreList(ctx, db, bs.BatchID)
	if err != nil {
		return fmt.Errorf("get class scores of batch %d: %w", bs.BatchID, err)
	}
	index := make(map[string]int, len(bs.Miners))
	for i, m := range bs.Miners {
		index[m.Hotkey] = i
	}
	for _, r := range rows {
		c := ClassScore{ExecutorClass: r.ExecutorClass, Executors: int(r.Executors), Completed: int(r.Completed),
			Excused: int(r.Excused), Failed: int(r.Failed), ClassWeight: r.ClassWeight, Raw: r.Raw, Normalised: r.Normalised}
		if i, ok := index[r.Hotkey]; ok {
			bs.Miners[i].Classes = append(bs.Miners[i].Classes, c)
		}
	}
	return nil
}
