package jobgraph

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// A group's count of unfinished jobs is split over the rows of group_stripes, a job counting in
// stripe id % group_stripe_count() (64, migrations 00002 and 00003). With one counter row per
// group, every report in the group queued for that row's lock, which is held until commit; with
// 64 stripes, two reports meet only when their jobs share a stripe. Only the SQL knows the
// number of stripes.

// insertStripes writes the stripe counters of a new group whose jobs are jobIDs.
func insertStripes(ctx context.Context, tx pgx.Tx, groupID int64, jobIDs []int64) error {
	err := queries.GroupStripeInsert(ctx, tx, dbsqlc.GroupStripeInsertParams{GroupID: groupID, JobIds: jobIDs})
	if err != nil {
		return fmt.Errorf("insert counters of group %d: %w", groupID, err)
	}
	return nil
}

// settle counts the jobs that have just become final off their stripes and returns the group's
// state; emptied and state say what the transition's own statement already counted (ReportTx
// counts the reported job). A transaction that takes a stripe to zero goes on to closeGroup, so
// the group is settled in the transaction of the transition that finished its last job.
func settle(ctx context.Context, tx pgx.Tx, groupID int64, finished []int64, emptied bool, state GroupState) (GroupState, error) {
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

// countOff subtracts finished from their stripes and returns whether one of them reached zero
// (or emptied already did) and the group's state. The statement locks the stripes in ascending
// order before it writes them, so two transactions never wait on each other's stripes.
func countOff(ctx context.Context, tx pgx.Tx, groupID int64, finished []int64, emptied bool) (bool, GroupState, error) {
	rows, err := queries.GroupStripeCountOff(ctx, tx, dbsqlc.GroupStripeCountOffParams{GroupID: groupID, JobIds: finished})
	if err != nil {
		return false, "", fmt.Errorf("count %d finished jobs off group %d: %w", len(finished), groupID, err)
	}
	var state GroupState
	for _, r := range rows {
		emptied = emptied || r.Emptied
		state = GroupState(r.GroupState)
	}
	return emptied, state, nil
}

// closeGroup settles the group if every stripe is at zero, recording its jobs' counts by state
// for the group's answers (GroupSettle): the jobs are counted once, when the group settles, so no
// report writes a counter and no list counts a settled group's jobs. It locks the group row first
// and reads the stripes in the next statement, whose snapshot is taken after the lock is granted:
// every other transaction that emptied a stripe took this lock before us and has committed, so
// the one of them that comes last sees all stripes at zero. The lock is FOR NO KEY UPDATE, what
// an UPDATE takes, so it does not wait for the key-share locks that inserting a system event (a
// foreign key to the group) holds in a transaction that may be waiting for our stripe.
// Transactions whose decrement left a stripe above zero need not look, as a later one will take
// that stripe to zero.
func closeGroup(ctx context.Context, tx pgx.Tx, groupID int64) (GroupState, error) {
	locked, err := queries.GroupGetStateForUpdate(ctx, tx, groupID)
	if err != nil {
		return "", fmt.Errorf("lock group %d: %w", groupID, err)
	}
	state := GroupState(locked)
	if state != GroupQueued && state != GroupDispatching {
		return state, nil
	}
	settled, err := queries.GroupSettle(ctx, tx, groupID)
	if errors.Is(err, pgx.ErrNoRows) {
		return state, nil
	}
	if err != nil {
		return "", fmt.Errorf("settle group %d: %w", groupID, err)
	}
	return GroupState(settled), nil
}

// recountStripes recomputes a group's stripe counters from its jobs' states, for the paths that
// change many jobs at once (cancel, retry, recount). The stripes are locked first, in order, so
// the count's snapshot includes every transition that finished a job before it, and every
// transition still waiting for a stripe will count its job off the recomputed figure.
func recountStripes(ctx context.Context, tx pgx.Tx, groupID int64) error {
	if err := queries.GroupStripeLockAll(ctx, tx, groupID); err != nil {
		return fmt.Errorf("lock counters of group %d: %w", groupID, err)
	}
	if err := queries.GroupStripeRecount(ctx, tx, groupID); err != nil {
		return fmt.Errorf("recount counters of group %d: %w", groupID, err)
	}
	return nil
}
