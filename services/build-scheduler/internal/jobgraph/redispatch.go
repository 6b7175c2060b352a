package jobgraph

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RedispatchTx issues a new dispatch token for every ready job that could otherwise wait on a lost
// one, and returns how many it issued.
//
// A token is lost when a build worker dies after River handed it the token but before its claim
// committed: the job is still ready, while River shows the token as running and only rescues it
// after the token's timeout (the longest build, buildworker.Worker.Timeout). A token cancelled or
// deleted in River UI before it ran is lost too. Tokens are not tied to jobs (a token claims
// whichever ready job of its target comes first), so the check is a count per target: a target
// whose jobs have been ready for longer than grace outnumber the tokens still waiting in its queue
// gets the difference. grace covers the moment between a live worker taking a token and its claim
// committing; an extra token is harmless anyway, as it claims nothing and ends at once.
//
// The pass holds a transaction-scoped advisory lock, so scheduler replicas reaping at once issue
// each missing token once.
func (g *Graph) RedispatchTx(ctx context.Context, tx pgx.Tx, grace time.Duration) (int, error) {
	if err := queries.RedispatchLock(ctx, tx); err != nil {
		return 0, fmt.Errorf("lock redispatch: %w", err)
	}
	rows, err := queries.DispatchTokenCountMissing(ctx, tx, grace.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("count lost dispatch tokens: %w", err)
	}
	var missing []readyJob
	for _, r := range rows {
		for range r.Missing {
			missing = append(missing, readyJob{target: r.Target})
		}
	}
	return len(missing), g.dispatch(ctx, tx, missing)
}
