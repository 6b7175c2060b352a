package populate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"drover.dev/queue"
	"drover.dev/services/populate-worker/internal/store/dbsqlc"
)

// Asker is who asked for a make: the background (the feeder, a reschedule, a reclaim) or a
// populate run, whose success count, errors and state count the makes done for it alone.
type Asker struct{ run int64 }

// Background is the asker of the makes of scheduled keys that no populate run asked for.
var Background = Asker{}

// ForRun is the asker of the makes of populate run id.
func ForRun(id int64) Asker { return Asker{run: id} }

// AskerOf is who asked for the make job args.
func AskerOf(args queue.PopulateMakeArgs) Asker { return Asker{run: args.RunID} }

// Run returns the populate run that asked, and false for the background.
func (a Asker) Run() (int64, bool) { return a.run, a.run != 0 }

// is reports whether run asked.
func (a Asker) is(run int64) bool { id, ok := a.Run(); return ok && id == run }

// enqueueMakes inserts a populate_make River job per key hash of table on tx, asked for by by, in
// batches, with COPY: the one place make jobs are enqueued. The caller has marked the keys
// enqueued (MakesMark, MakesClaim, JobSetStatus, JobReclaim) in the same transaction, so that a
// key holds one make job at a time; a run's makes go before the background's (their priority).
func (e *Engine) enqueueMakes(ctx context.Context, tx pgx.Tx, table string, by Asker, hashes []string) error {
	return e.enqueueMakesAt(ctx, tx, table, by, hashes, time.Time{})
}

// enqueueMakesAt is enqueueMakes of jobs that River runs from at on (a scheduled job until then);
// zero is now.
func (e *Engine) enqueueMakesAt(ctx context.Context, tx pgx.Tx, table string, by Asker, hashes []string, at time.Time) error {
	var opts *river.InsertOpts
	if time.Until(at) > 0 {
		opts = &river.InsertOpts{ScheduledAt: at}
	}
	const batch = 5000
	for start := 0; start < len(hashes); start += batch {
		end := min(start+batch, len(hashes))
		params := make([]riverInsert, 0, end-start)
		for _, h := range hashes[start:end] {
			params = append(params, riverInsert{Args: queue.PopulateMakeArgs{Table: table, KeyHash: h, RunID: by.run}, InsertOpts: opts})
		}
		if _, err := e.river.InsertManyFastTx(ctx, tx, params); err != nil {
			return fmt.Errorf("enqueue makes of %s: %w", table, err)
		}
	}
	return nil
}

// enqueueRunMakes hands keys of populate run to River, in the run's order: each gets a make job of
// the run, whoever else has one waiting. The make that starts first reserves the key; a
// background one yields to the run's; the others count it (made elsewhere, or skipped when it
// failed) when that make ends (a run's make finding the key reserved leaves its entry waiting
// for that end, RunKeyWait). Scheduled keys whose make is not yet enqueued are marked so (rows
// locked at this instant, by a reservation or a feeder, are left as they are), so that the feeder
// gives them none.
func (e *Engine) enqueueRunMakes(ctx context.Context, tx pgx.Tx, run int64, table string, hashes []string) error {
	if len(hashes) == 0 {
		return nil
	}
	if err := queries.MakesClaim(ctx, tx, dbsqlc.MakesClaimParams{TableName: table, KeyHashes: hashes}); err != nil {
		return fmt.Errorf("mark keys of populate run %d enqueued: %w", run, err)
	}
	return e.enqueueMakes(ctx, tx, table, ForRun(run), hashes)
}

// unfeed gives the key of hash, when it is still scheduled and marked enqueued, back to the
// feeder on tx, with a feed job waiting for it: its make job ends without making it (GiveUp, a
// stopped run's make, a yield to a run that stopped since), and without this the key would have no job to make it and no feeder to
// give it one until the reclaim sweep.
func (e *Engine) unfeed(ctx context.Context, tx pgx.Tx, table, hash string) error {
	n, err := queries.JobUnenqueue(ctx, tx, dbsqlc.JobUnenqueueParams{TableName: table, KeyHash: hash})
	if err != nil {
		return fmt.Errorf("give %s/%s back to the feeder: %w", table, hash, err)
	}
	if n > 0 {
		_, err = e.ensureFeed(ctx, tx, table)
	}
	return err
}

// FeedArgs asks the populate-worker to enqueue the populate_make jobs of a table's scheduled keys
// that have none yet (the feeder). schedule_jobs inserts one in the transaction that schedules
// the keys; the feed job is the populate-worker's own, worked by the populate_feed queue of every
// replica.
type FeedArgs struct {
	// Table is the computed table's registered name.
	Table string `json:"table"`
}

// Kind is the job kind of FeedArgs.
func (FeedArgs) Kind() string { return "populate_feed" }

// InsertOpts pins FeedArgs to its queue. It has no UniqueOpts: River's uniqueness counts a running
// job, and a running feed job may have looked for keys before the caller's committed, or belong
// to a replica that died; ensureFeed skips the insert only when a feed job of the table is
// waiting.
func (FeedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue.QueuePopulateFeed, MaxAttempts: 5}
}

// ensureFeed inserts table's feed job on tx unless one is waiting (JobOfTableWaiting) and reports
// whether it inserted one. Two transactions doing so at once may both insert one: a second feed
// job is harmless (the feeder's chunks lock what they enqueue).
func (e *Engine) ensureFeed(ctx context.Context, tx pgx.Tx, table string) (bool, error) {
	waiting, err := queries.JobOfTableWaiting(ctx, tx, dbsqlc.JobOfTableWaitingParams{TableName: table, Kind: FeedArgs{}.Kind()})
	if err != nil {
		return false, fmt.Errorf("look for the feed job of %s: %w", table, err)
	}
	if waiting {
		return false, nil
	}
	if _, err := e.river.InsertTx(ctx, tx, FeedArgs{Table: table}, nil); err != nil {
		return false, fmt.Errorf("enqueue feed job of %s: %w", table, err)
	}
	return true, nil
}

// ensureFeeders inserts on tx a feed job for every table that has scheduled keys without a make
// job and no feed job waiting, and returns how many it inserted. It is the reclaim pass's safety
// net: a feed job lost with its replica (River shows it running until it rescues it, FEED_TIMEOUT
// plus up to 30 s later), discarded after its attempts, cancelled or deleted in River UI, or a
// feed pass that found the keys locked by a transaction that then rolled back, leaves keys no
// feed job would enqueue; within a reclaim period they get one.
func (e *Engine) ensureFeeders(ctx context.Context, tx pgx.Tx) (int, error) {
	names := make([]string, 0, len(e.tables.All()))
	for _, t := range e.tables.All() {
		names = append(names, t.Name)
	}
	tables, err := queries.TablesToFeed(ctx, tx, names)
	if err != nil {
		return 0, fmt.Errorf("find tables to feed: %w", err)
	}
	n := 0
	for _, table := range tables {
		wrote, err := e.ensureFeed(ctx, tx, table)
		if err != nil {
			return 0, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}
