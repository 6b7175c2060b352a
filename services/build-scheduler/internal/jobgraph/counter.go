package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// groupShards is how many rows of group_shards a group's count of unfinished jobs is split over
// (migration 00002); a job counts in shard id % groupShards. With one counter row per group,
// every report in the group queued for that row's lock, which is held until commit; with 64, two
// reports meet only when their jobs share a shard.
const groupShards = 64

// finalStates is the SQL list of the job states that count as finished.
const finalStates = `('complete', 'job_failed', 'dependency_failed', 'cancel_complete')`

func shardOf(jobID int64) int32 { return int32(jobID % groupShards) }

// insertShards writes the shard counters of a new group whose jobs are jobIDs.
func insertShards(ctx context.Context, tx pgx.Tx, groupID int64, jobIDs []int64) error {
	counts := make([]int32, groupShards)
	for _, id := range jobIDs {
		counts[shardOf(id)]++
	}
	_, err := tx.Exec(ctx, `INSERT INTO group_shards (group_id, shard, remaining)
		SELECT $1, s - 1, n FROM unnest($2::int[]) WITH ORDINALITY AS u(n, s)`, groupID, counts)
	if err != nil {
		return fmt.Errorf("insert counters of group %d: %w", groupID, err)
	}
	return nil
}

// groupShardsSQL is groupShards as SQL text; TestGroupShardsSQL keeps the two equal.
const groupShardsSQL = "64"

// settle counts the jobs that have just become final off their shards and returns the group's
// state; emptied and state say what the transition's own statement already counted (ReportTx
// counts the reported job). A transaction that takes a shard to zero goes on to closeGroup, so
// the group is settled in the transaction of the transition that finished its last job.
func settle(ctx context.Context, tx pgx.Tx, groupID int64, finished []int64, emptied bool, state string) (string, error) {
	if len(finished) > 0 {
		var err error
		if emptied, state, err = countOff(ctx, tx, groupID, finished, emptied); err != nil {
			return "", err
		}
	}
	if !emptied {
		return state, nil
	}
	return closeGroup(ctx, tx, groupID)
}

// countOff subtracts finished from their shards and returns whether one of them reached zero
// (or emptied already did) and the group's state.
func countOff(ctx context.Context, tx pgx.Tx, groupID int64, finished []int64, emptied bool) (bool, string, error) {
	shards, counts := shardCounts(finished)
	if len(shards) > 1 {
		// Several shards are locked in ascending order, so two transactions never wait on each
		// other's shards.
		_, err := tx.Exec(ctx, `SELECT FROM group_shards WHERE group_id = $1 AND shard = ANY($2)
			ORDER BY shard FOR UPDATE`, groupID, shards)
		if err != nil {
			return false, "", fmt.Errorf("lock counters of group %d: %w", groupID, err)
		}
	}
	rows, err := tx.Query(ctx, `
		UPDATE group_shards s SET remaining = s.remaining - u.n
		FROM unnest($2::int[], $3::int[]) AS u(shard, n)
		WHERE s.group_id = $1 AND s.shard = u.shard
		RETURNING s.remaining = 0, (SELECT state::text FROM groups WHERE id = $1)`, groupID, shards, counts)
	if err != nil {
		return false, "", fmt.Errorf("count %d finished jobs off group %d: %w", len(finished), groupID, err)
	}
	var (
		zero  bool
		state string
	)
	_, err = pgx.ForEachRow(rows, []any{&zero, &state}, func() error { emptied = emptied || zero; return nil })
	if err != nil {
		return false, "", fmt.Errorf("count %d finished jobs off group %d: %w", len(finished), groupID, err)
	}
	return emptied, state, nil
}

// shardCounts returns the shards of jobIDs in ascending order and how many of them each holds.
func shardCounts(jobIDs []int64) (shards, counts []int32) {
	perShard := make([]int32, groupShards)
	for _, id := range jobIDs {
		perShard[shardOf(id)]++
	}
	for s, n := range perShard {
		if n > 0 {
			shards, counts = append(shards, int32(s)), append(counts, n)
		}
	}
	return shards, counts
}

// closeGroup settles the group if every shard is at zero. It locks the group row first and reads
// the shards in the next statement, whose snapshot is taken after the lock is granted: every
// other transaction that emptied a shard took this lock before us and has committed, so the one
// of them that comes last sees all shards at zero. The lock is FOR NO KEY UPDATE, what an UPDATE
// takes, so it does not wait for the key-share locks that inserting a system event (a foreign key
// to the group) holds in a transaction that may be waiting for our shard. Transactions whose decrement left a shard
// above zero need not look, as a later one will take that shard to zero.
func closeGroup(ctx context.Context, tx pgx.Tx, groupID int64) (string, error) {
	var state string
	err := tx.QueryRow(ctx, `SELECT state::text FROM groups WHERE id = $1 FOR NO KEY UPDATE`, groupID).Scan(&state)
	if err != nil {
		return "", fmt.Errorf("lock group %d: %w", groupID, err)
	}
	if state != GroupQueued && state != GroupDispatching {
		return state, nil
	}
	err = tx.QueryRow(ctx, `
		UPDATE groups g SET remaining = 0, failed = c.failed, updated_at = clock_timestamp(),
			state = CASE WHEN g.cancel_requested THEN 'canceled' WHEN c.failed > 0 THEN 'failed' ELSE 'complete' END::group_state,
			finished_at = clock_timestamp()
		FROM (SELECT count(*) AS failed FROM job_graph
			WHERE group_id = $1 AND state IN ('job_failed', 'dependency_failed')) c
		WHERE g.id = $1 AND NOT EXISTS (SELECT FROM group_shards WHERE group_id = $1 AND remaining > 0)
		RETURNING g.state::text`, groupID).Scan(&state)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("settle group %d: %w", groupID, err)
	}
	return state, nil
}

// recountShards recomputes a group's shard counters from its jobs' states, for the paths that
// change many jobs at once (cancel, retry, recount). The shards are locked first, in order, so
// the count's snapshot includes every transition that finished a job before it, and every
// transition still waiting for a shard will count its job off the recomputed figure.
func recountShards(ctx context.Context, tx pgx.Tx, groupID int64) error {
	_, err := tx.Exec(ctx, `SELECT FROM group_shards WHERE group_id = $1 ORDER BY shard FOR UPDATE`, groupID)
	if err != nil {
		return fmt.Errorf("lock counters of group %d: %w", groupID, err)
	}
	_, err = tx.Exec(ctx, `
		WITH c AS MATERIALIZED (
			SELECT id % `+groupShardsSQL+` AS shard, count(*) AS n FROM job_graph
			WHERE group_id = $1 AND state NOT IN `+finalStates+` GROUP BY 1
		)
		UPDATE group_shards s SET remaining = coalesce((SELECT n FROM c WHERE c.shard = s.shard), 0)
		WHERE s.group_id = $1`, groupID)
	if err != nil {
		return fmt.Errorf("recount counters of group %d: %w", groupID, err)
	}
	return nil
}
