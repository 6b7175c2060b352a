package populate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
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
	t, err := e.Table(ctx, name)
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

// Reclaim puts back to work the keys of dead or stalled workers, in one transaction: reserved
// jobs whose connection is gone or whose lease expired become scheduled with a new populate_make
// job; and make jobs that River shows running for longer than the orphan timeout while their key
// is still scheduled (the replica died after River fetched them, before it reserved the key) get
// a copy, so that whatever stage a worker died in, its key is made again within ORPHAN_TIMEOUT
// plus a reclaim period. The stalled River job itself is rescued by River after MAKE_TIMEOUT
// (and up to 30 s) and then finds its key taken. It also ends, as errors, the keys of running
// populate runs whose make job ended without settling them (endOrphanedRunKeys), so
// that such a run ends, and moves on the runs left waiting for nothing (advanceStalledRuns); at most once per orphan timeout, gives back to the feeder the scheduled
// keys whose make job is gone (giveBackLost); and inserts a feed job for every table whose
// scheduled keys wait for one with none waiting (ensureFeeders). It returns how many keys it put
// back or ended.
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
		for table, hashes := range byTable {
			if err := e.enqueueMakes(ctx, tx, table, Background, hashes); err != nil {
				return err
			}
		}
		stuck, err := e.reenqueueStuck(ctx, tx)
		if err != nil {
			return err
		}
		ended, err := e.endOrphanedRunKeys(ctx, tx)
		if err != nil {
			return err
		}
		lost, err := e.giveBackLost(ctx, tx)
		if err != nil {
			return err
		}
		n = len(rows) + stuck + ended + lost
		_, err = e.ensureFeeders(ctx, tx)
		return err
	})
	if err != nil {
		return n, err
	}
	for table, hashes := range byTable {
		e.cfg.Metrics.reclaimedFrom(table, len(hashes))
	}
	// In a transaction of its own: it locks runs from the lowest id again.
	return n, pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { return e.advanceStalledRuns(ctx, tx) })
}

// advanceStalledRuns moves on the runs that wait for nothing while a pending key of theirs is free
// (RunsStalled): the run passed over the key while another make held it, and that make's
// reservation was given back without ending it.
func (e *Engine) advanceStalledRuns(ctx context.Context, tx pgx.Tx) error {
	ids, err := queries.RunsStalled(ctx, tx)
	if err != nil {
		return fmt.Errorf("find stalled populate runs: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	if ids, err = queries.RunLockRunning(ctx, tx, ids); err != nil {
		return fmt.Errorf("lock stalled populate runs: %w", err)
	}
	for _, id := range ids {
		if err := e.advanceRun(ctx, tx, id, dbsqlc.RunTallyParams{}); err != nil {
			return err
		}
	}
	return nil
}

// lostChunk is the most keys one reclaim pass gives back to the feeder.
const lostChunk = 10_000

// giveBackLost gives back to the feeder the scheduled keys marked enqueued whose make job is gone
// (MakesLost): cancelled or deleted in River UI while it waited, or discarded by River outside
// the key's transactions. The feed job ensureFeeders then inserts enqueues a new make for each.
// It reads every scheduled key of the jobs table, so it runs at most once per orphan timeout on
// each replica, and returns how many keys it gave back.
func (e *Engine) giveBackLost(ctx context.Context, tx pgx.Tx) (int, error) {
	now := time.Now()
	if last := e.lostSweptAt.Load(); last != 0 && now.Sub(time.Unix(0, last)) < e.cfg.OrphanTimeout {
		return 0, nil
	}
	rows, err := queries.MakesLost(ctx, tx, lostChunk)
	if err != nil {
		return 0, fmt.Errorf("find keys whose make job is gone: %w", err)
	}
	e.lostSweptAt.Store(now.UnixNano())
	for _, r := range rows {
		e.cfg.Metrics.info("make job gone; key given back to the feeder", "table", r.TableName, "key_hash", r.KeyHash,
			"last_make_job_id", r.JobID, "last_make_job_state", r.JobState)
	}
	return len(rows), nil
}

// reenqueueStuck inserts a copy of every make job stalled between River's fetch and the key's
// reservation (RiverMakeJobsStuck) and returns how many it inserted.
func (e *Engine) reenqueueStuck(ctx context.Context, tx pgx.Tx) (int, error) {
	rows, err := queries.RiverMakeJobsStuck(ctx, tx, e.cfg.OrphanTimeout)
	if err != nil {
		return 0, fmt.Errorf("find stalled make jobs: %w", err)
	}
	for _, r := range rows {
		var a queue.PopulateMakeArgs
		if err := json.Unmarshal(r.Args, &a); err != nil {
			return 0, fmt.Errorf("stalled %s job: %w", r.Kind, err)
		}
		if err := e.enqueueMakes(ctx, tx, a.Table, AskerOf(a), []string{a.KeyHash}); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}

// endOrphanedRunKeys ends every queued or waiting key of a running populate run that no make job is left to
// settle (RunKeysOrphaned), by what became of the key. Still scheduled and marked enqueued, its
// job is gone: River discarded it once its attempts were spent on infrastructure errors, or it was
// cancelled or deleted in River UI while it waited, each outside the transaction that settles a
// key; the key counts as an error naming the job and its last error, which stops the run as a
// make's error does (unless suppress_errors), and a run with nothing left queued ends. Given back
// to the feeder, or made, failed or gone while the run decided to wait for its make (a make whose
// end did not see the run's entry), it is handed to River again for the run, which counts it; so
// is a key the run waited for another make to end, whose make ended without settling it. It
// returns how many keys it ended or handed again.
func (e *Engine) endOrphanedRunKeys(ctx context.Context, tx pgx.Tx) (int, error) {
	rows, err := queries.RunKeysOrphaned(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("find populate run keys without a make job: %w", err)
	}
	for _, r := range rows {
		if Status(r.Status) == StatusReserved {
			continue // its make runs; its end settles the key
		}
		if r.EntryState == keyWaiting { // the make it waited for ended without settling it
			if err := queries.RunKeyRequeue(ctx, tx, dbsqlc.RunKeyRequeueParams{RunID: r.RunID, TableName: r.TableName, KeyHash: r.KeyHash}); err != nil {
				return 0, fmt.Errorf("hand %s/%s back to populate run %d: %w", r.TableName, r.KeyHash, r.RunID, err)
			}
			if err := e.enqueueRunMakes(ctx, tx, r.RunID, r.TableName, []string{r.KeyHash}); err != nil {
				return 0, err
			}
			continue
		}
		if Status(r.Status) != StatusScheduled || !r.Enqueued {
			if err := e.enqueueRunMakes(ctx, tx, r.RunID, r.TableName, []string{r.KeyHash}); err != nil {
				return 0, err
			}
			continue
		}
		msg := orphanMessage(r.JobID, r.JobState, r.JobError)
		if _, err := e.settleRun(ctx, tx, r.RunID, r.TableName, r.KeyHash, keyError, &msg, stopError); err != nil {
			return 0, err
		}
		e.cfg.Metrics.info("populate run key without a make job; counted an error", "run_id", r.RunID, "table", r.TableName,
			"key_hash", r.KeyHash, "last_make_job_id", r.JobID, "last_make_job_state", r.JobState)
	}
	return len(rows), nil
}

// orphanMessage is the error message of a run's key whose make job (none when job is zero) ended
// in state without settling it, after jobErr.
func orphanMessage(job int64, state, jobErr string) string {
	if job == 0 {
		return "populate_make job: none left for the key; it was not made"
	}
	msg := fmt.Sprintf("populate_make job %d %s without making the key", job, state)
	if jobErr != "" {
		msg += ": " + jobErr
	}
	return truncateMessage(msg)
}
