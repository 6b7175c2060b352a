package work

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"drover.dev/computehorde/subtensor"
	"drover.dev/services/scorer/internal/store"
)

// attemptDirect sets the weights without Pylon: it reads the subnet at the node's finalized head,
// refuses when the subnet has commit-reveal on (a plain set_weights would fail with
// CommitRevealEnabled), honours the subnet's WeightsSetRateLimit against the validator's
// last_update and the last weights sent from here, and signs and submits set_weights with the
// subnet's version key. Only a database error is returned.
func (w *SetWeightsWorker) attemptDirect(ctx context.Context, tx pgx.Tx, sub *store.Submission, weights store.Weights) (*store.Submission, error) {
	sess, err := w.Direct.Open(ctx)
	if err != nil {
		return sub.Because(fmt.Errorf("read the subnet from the node: %w", err)), nil
	}
	defer sess.Close()
	neurons := sess.Neurons
	sub.Block, sub.BlockHash = &neurons.Block, &neurons.Hash
	if err := w.confirm(ctx, tx, neurons); err != nil {
		return nil, err
	}
	netuid := w.Direct.Netuid
	if sess.Params.CommitReveal {
		sub.Outcome = store.SubmissionRefused
		return sub.Because(fmt.Errorf("subnet %d has commit-reveal on (CommitRevealWeightsEnabled at block %d): a plain set_weights would fail with CommitRevealEnabled, and the timelocked commit it needs is made by Pylon: set PYLON_ADDRESS", netuid, neurons.Block)), nil
	}
	limit := int64(min(sess.Params.RateLimit, 1<<40))
	if lu, ok := neurons.LastUpdate[w.Validator]; ok && neurons.Block < lu+limit {
		sub.Outcome = store.SubmissionSkipped
		return sub.Because(fmt.Errorf("rate limit: the validator's last_update is block %d and the subnet's WeightsSetRateLimit %d blocks: the next may be set from block %d", lu, limit, lu+limit)), nil
	}
	last, err := store.SubmissionLastSentBlock(ctx, tx)
	if err != nil {
		return nil, err
	}
	if last > 0 && neurons.Block < last+limit {
		sub.Outcome = store.SubmissionSkipped
		return sub.Because(fmt.Errorf("rate limit: weights were sent at block %d and the subnet's WeightsSetRateLimit is %d blocks: the next may be set from block %d", last, limit, last+limit)), nil
	}
	if _, ok := neurons.UIDs[w.Validator]; !ok {
		return sub.Because(fmt.Errorf("the validator hotkey %s is not registered on subnet %d at block %d", w.Validator, netuid, neurons.Block)), nil
	}
	mapToUIDs(sub, weights, neurons)
	send := make([]subtensor.UIDWeight, 0, len(sub.Weights))
	for _, sw := range sub.Weights {
		send = append(send, subtensor.UIDWeight{UID: uint16(sw.UID), Weight: sw.Weight})
	}
	if len(send) == 0 {
		sub.Outcome = store.SubmissionSkipped
		return sub.Because(fmt.Errorf("none of the %d weighted hotkeys is registered at block %d", len(weights.Weights), neurons.Block)), nil
	}
	done, err := sess.SetWeights(ctx, send)
	if done.Extrinsic != "" {
		sub.Extrinsic, sub.ExtrinsicHash = &done.Extrinsic, &done.Hash
	}
	if err != nil {
		return sub.Because(err), nil
	}
	w.Logger.InfoContext(ctx, "set_weights submitted", "uids", len(done.UIDs), "version_key", done.VersionKey, "nonce", done.Nonce, "extrinsic_hash", done.Hash)
	sub.Outcome = store.SubmissionSent
	return sub, nil
}
