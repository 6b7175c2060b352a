package populate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CleanupResult says what cleanup_jobs removed.
type CleanupResult struct {
	Removed    int  `json:"removed"`
	Suppressed bool `json:"suppressed"`
}

// CleanupJobs is DataJoint's cleanup_jobs for the table registered as name: it deletes success
// jobs whose target row is gone and scheduled, error and ignore jobs whose key left key_source,
// whatever the sizes of the jobs table and key_source (DataJoint only cleaned up when jobs
// outnumbered keys, so a few orphans in a big table stayed forever). minInterval rate-limits
// event-driven calls like scheduling; zero always runs.
func (e *Engine) CleanupJobs(ctx context.Context, name string, minInterval time.Duration) (CleanupResult, error) {
	t, err := e.tables.Get(name)
	if err != nil {
		return CleanupResult{}, err
	}
	var res CleanupResult
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		ok, err := claimEvent(ctx, tx, t.Name, "cleanup", minInterval)
		if err != nil || !ok {
			res.Suppressed = !ok
			return err
		}
		tag, err := tx.Exec(ctx, cleanupSQL(t), t.Name)
		if err != nil {
			return fmt.Errorf("delete orphaned jobs: %w", err)
		}
		res.Removed = int(tag.RowsAffected())
		return recordEventKeys(ctx, tx, t.Name, "cleanup", res.Removed)
	})
	if err != nil {
		return CleanupResult{}, fmt.Errorf("clean up jobs of %s: %w", name, err)
	}
	e.cfg.Metrics.ran(t.Name, "cleanup", res.Suppressed, res.Removed)
	return res, nil
}

// cleanupSQL compares keys by their canonical hash, so both antijoins can be hash joins however
// large the jobs table and key_source are.
func cleanupSQL(t *Table) string {
	return `DELETE FROM jobs j WHERE j.table_name = $1 AND (
		(j.status = 'success' AND NOT EXISTS (
			SELECT 1 FROM ` + t.target() + ` t WHERE md5(` + t.keyObject("t") + `::text) = j.key_hash))
		OR (j.status IN ('scheduled', 'error', 'ignore') AND NOT EXISTS (
			SELECT 1 FROM (` + t.keySourceKeys() + `) x WHERE md5(x.key::text) = j.key_hash)))`
}

// Reclaim returns orphaned reservations to scheduled and enqueues their makes, in one
// transaction: those whose database connection is gone (the worker process died; its
// connection_id no longer appears in pg_stat_activity) and those whose lease expired (the worker
// stopped renewing it). It returns how many it reclaimed.
func (e *Engine) Reclaim(ctx context.Context) (int, error) {
	n := 0
	byTable := map[string][]string{}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		rows, err := queries.JobReclaim(ctx, tx)
		if err != nil {
			return fmt.Errorf("reclaim orphaned reservations: %w", err)
		}
		for _, r := range rows {
			byTable[r.TableName] = append(byTable[r.TableName], r.KeyHash)
		}
		n = len(rows)
		for table, hashes := range byTable {
			if err := e.enqueueMakes(ctx, tx, table, hashes); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for table, hashes := range byTable {
			e.cfg.Metrics.reclaimedFrom(table, len(hashes))
		}
	}
	return n, err
}
