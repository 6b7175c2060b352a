package populate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Progress is how far a computed table is: DataJoint's progress (remaining of total keys), its
// jobs by status, and how many of its scheduled jobs still wait for the feeder to enqueue their
// make (NotEnqueued: River shows those makes only once enqueued).
type Progress struct {
	Table       string           `json:"table"`
	Total       int64            `json:"total"`
	Remaining   int64            `json:"remaining"`
	Jobs        map[Status]int64 `json:"jobs"`
	NotEnqueued int64            `json:"not_enqueued"`
}

// Progress counts key_source keys and those still missing from the target, and the table's jobs
// by status, all restricted by r.
func (e *Engine) Progress(ctx context.Context, name string, r Restriction) (Progress, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return Progress{}, err
	}
	f, err := r.compile(t, "restriction")
	if err != nil {
		return Progress{}, err
	}
	p := Progress{Table: t.Name, Jobs: map[Status]int64{}}
	for _, s := range Statuses() {
		p.Jobs[s] = 0
	}
	// One snapshot for both counts: read apart, a key made in between is still remaining while
	// its job is already gone, and a follower sees nothing pending with keys left to make.
	err = pgx.BeginTxFunc(ctx, e.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		cond, args := f.where("x.key", nil)
		if err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (`+t.keySourceKeys()+`) x WHERE `+cond+`),
			(SELECT count(*) FROM (`+todoSQL(t)+`) x WHERE `+cond+`)`, args...).Scan(&p.Total, &p.Remaining); err != nil {
			return fmt.Errorf("progress of %s: %w", name, err)
		}
		cond, args = f.where("key", []any{t.Name})
		rows, err := tx.Query(ctx, `SELECT status, count(*), count(*) FILTER (WHERE NOT enqueued) FROM jobs
			WHERE table_name = $1 AND `+cond+` GROUP BY status`, args...)
		if err != nil {
			return fmt.Errorf("count jobs of %s: %w", name, err)
		}
		var st Status
		var n, notEnqueued int64
		for rows.Next() {
			if err := rows.Scan(&st, &n, &notEnqueued); err != nil {
				rows.Close()
				return fmt.Errorf("count jobs of %s: %w", name, err)
			}
			p.Jobs[st] = n
			if st == StatusScheduled {
				p.NotEnqueued = notEnqueued
			}
		}
		return rows.Err()
	})
	return p, err
}
