package jobgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"drover.dev/services/build-scheduler/internal/store/dbsqlc"
)

// watch is one watchdog pass's view of an active group.
type watch struct {
	id        int64
	counts    string // "ready=1 running=2", the signature compared between passes
	changedAt time.Time
	byState   map[JobState]int
	active    int // jobs not final
	idleFor   time.Duration
	// unserved lists the targets of the group's ready jobs with no worker seen within stallAfter.
	unserved []string
}

// WatchReport is what one watchdog pass did.
type WatchReport struct {
	Watched  int // open groups the pass looked at
	Canceled []int64
	Settled  []int64
	Drift    map[int64][]string
}

// WatchTx runs one watchdog pass on tx. A group whose counts have not changed for stallAfter is
// cancelled when it has waiting jobs but nothing ready or running (stalled), or ready jobs for a
// target no worker has served within stallAfter. A group that is progressing, or whose jobs are
// running, is never touched however slow it is. Groups whose jobs are all
// final are settled, and counter drift against the readiness query is reported as events.
func (g *Graph) WatchTx(ctx context.Context, tx pgx.Tx, stallAfter time.Duration) (rep WatchReport, err error) {
	// Drift is reported before any group is cancelled, while the drifting groups are still active.
	if rep.Drift, err = reportDrift(ctx, tx); err != nil {
		return rep, err
	}
	watches, err := observe(ctx, tx, stallAfter)
	if err != nil {
		return rep, err
	}
	rep.Watched = len(watches)
	for _, w := range watches {
		reason := w.verdict(stallAfter)
		switch {
		case w.active == 0:
			if settled, err := resettleGroup(ctx, tx, w.id); err != nil {
				return rep, err
			} else if settled {
				rep.Settled = append(rep.Settled, w.id)
				err = addEvent(ctx, tx, &w.id, nil, EventSettled, "watchdog settled group %d: every job is final (%s) but the group was still open", w.id, w.counts)
				if err != nil {
					return rep, err
				}
			}
		case reason != "":
			if _, err := g.CancelTx(ctx, tx, w.id, reason); err != nil {
				return rep, err
			}
			rep.Canceled = append(rep.Canceled, w.id)
		}
	}
	// The group rows are written last, after the cancellations have locked their jobs and
	// stripes, in the lock order of the package documentation.
	return rep, remember(ctx, tx, watches)
}

// verdict returns why the group must be cancelled, or "" when it must be left alone.
func (w watch) verdict(stallAfter time.Duration) string {
	if w.idleFor < stallAfter || w.byState[Running]+w.byState[CancelPending] > 0 {
		return ""
	}
	since := fmt.Sprintf("counts unchanged (%s) since %s", w.counts, w.changedAt.UTC().Format(time.RFC3339))
	if w.byState[Ready] == 0 && w.byState[Waiting]+w.byState[Pending] > 0 {
		return fmt.Sprintf("watchdog: group %d stalled: %d jobs waiting on dependencies, none ready or running, %s",
			w.id, w.byState[Waiting]+w.byState[Pending], since)
	}
	if len(w.unserved) > 0 {
		return fmt.Sprintf("watchdog: group %d has %d ready jobs but no worker has polled target %s for %s; %s",
			w.id, w.byState[Ready], strings.Join(w.unserved, ", "), stallAfter, since)
	}
	return ""
}

// observe reads every active group's counts, works out how long they have been unchanged, and
// finds ready targets without workers; remember stores what it saw.
func observe(ctx context.Context, tx pgx.Tx, stallAfter time.Duration) ([]watch, error) {
	rows, err := queries.GroupWatchList(ctx, tx, stallAfter.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("observe active groups: %w", err)
	}
	out := make([]watch, 0, len(rows))
	for _, r := range rows {
		w := watch{id: r.ID, changedAt: r.WatchChangedAt, idleFor: time.Duration(r.IdleMs) * time.Millisecond, unserved: r.Unserved}
		if err := json.Unmarshal(r.Counts, &w.byState); err != nil {
			return nil, fmt.Errorf("decode counts of group %d: %w", r.ID, err)
		}
		w.counts, w.active = signature(w.byState)
		if w.counts != r.WatchCounts {
			w.changedAt, w.idleFor = time.Now(), 0
		}
		out = append(out, w)
	}
	return out, nil
}

// remember stores each group's counts signature, restarting its clock when they changed.
func remember(ctx context.Context, tx pgx.Tx, watches []watch) error {
	for _, w := range watches {
		err := queries.GroupWatchRemember(ctx, tx, dbsqlc.GroupWatchRememberParams{ID: w.id, Counts: w.counts})
		if err != nil {
			return fmt.Errorf("remember counts of group %d: %w", w.id, err)
		}
	}
	return nil
}

// signature is a stable text form of counts by state; it also returns the number of jobs not
// final.
func signature(byState map[JobState]int) (string, int) {
	var parts []string
	active := 0
	for _, s := range JobStates() {
		if n := byState[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", s, n))
			if !IsFinal(s) {
				active += n
			}
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " "), active
}

func reportDrift(ctx context.Context, tx pgx.Tx) (map[int64][]string, error) {
	drift, err := Drift(ctx, tx)
	if err != nil {
		return nil, err
	}
	for group, msgs := range drift {
		err := addEvent(ctx, tx, &group, nil, EventDrift, "watchdog: %d counters disagree with the dependency arrays (POST /v1/admin/recount fixes them): %s",
			len(msgs), strings.Join(msgs, "; "))
		if err != nil {
			return nil, err
		}
	}
	return drift, nil
}
