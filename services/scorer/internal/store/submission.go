package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"drover.dev/services/scorer/internal/store/dbsqlc"
	"drover.dev/shared/postgres"
)

// Outcomes of a weight submission.
const (
	SubmissionSent    = "sent"    // Pylon accepted the weights, or the node took the extrinsic into its pool
	SubmissionFailed  = "failed"  // Pylon or the node was unreachable, refused them or answered garbage
	SubmissionSkipped = "skipped" // nothing sent: rate limited, or no weighted hotkey registered
	// SubmissionRefused: nothing sent because the subnet has commit-reveal on, which a direct
	// set_weights cannot serve (only Pylon's timelocked commit can).
	SubmissionRefused = "refused"
)

// SubmissionOutcomes lists every outcome.
var SubmissionOutcomes = []string{SubmissionSent, SubmissionFailed, SubmissionSkipped, SubmissionRefused}

// Ways the weights go to the chain.
const (
	ViaPylon     = "pylon"     // PUT to Pylon, which signs and submits
	ViaSubtensor = "subtensor" // signed here, submitted to a subtensor node (author_submitExtrinsic)
)

// signerLockKey names the advisory lock one weight signer holds at a time, across replicas.
const signerLockKey = 0x64726f7665725357 // "droverSW"

// Submission is one attempt to send the weights to the chain.
type Submission struct {
	ID           int64        `json:"id"`
	At           time.Time    `json:"at"`
	Reason       string       `json:"reason"`
	BatchID      *int64       `json:"batch_id"`
	Block        *int64       `json:"block"`
	BlockHash    *string      `json:"block_hash"`
	Via          string       `json:"via"`
	Outcome      string       `json:"outcome"`
	Weights      []SentWeight `json:"weights"`
	Unregistered int          `json:"unregistered"`
	PylonStatus  *int         `json:"pylon_status"`
	PylonAnswer  *string      `json:"pylon_answer"`
	Error        *string      `json:"error"`
	// ExtrinsicHash and Extrinsic (0x-hex) are the signed set_weights submitted to the node.
	ExtrinsicHash *string `json:"extrinsic_hash"`
	Extrinsic     *string `json:"extrinsic"`
	// ConfirmedBlock is the validator's last_update that showed these weights on chain.
	ConfirmedBlock *int64 `json:"confirmed_block"`
}

// SentWeight is one weight as sent: the hotkey, its uid at the submission's block, its share.
type SentWeight struct {
	UID    int     `json:"uid"`
	Hotkey string  `json:"hotkey"`
	Weight float64 `json:"weight"`
}

// SignerTryLock takes the weight signer's lock for the rest of tx; false when another
// transaction (another replica's signer) holds it.
func SignerTryLock(ctx context.Context, tx postgres.DBTX) (bool, error) {
	ok, err := queries.SignerTryLock(ctx, tx, signerLockKey)
	if err != nil {
		return false, fmt.Errorf("take the weight signer lock: %w", err)
	}
	return ok, nil
}

// SubmissionInsert records s and returns its id.
func SubmissionInsert(ctx context.Context, db postgres.DBTX, s Submission) (int64, error) {
	if s.Weights == nil {
		s.Weights = []SentWeight{}
	}
	if s.Via == "" {
		s.Via = ViaPylon
	}
	weights, err := json.Marshal(s.Weights)
	if err != nil {
		return 0, fmt.Errorf("encode weights of a %s submission: %w", s.Outcome, err)
	}
	var status *int32
	if s.PylonStatus != nil {
		status = new(int32(*s.PylonStatus))
	}
	id, err := queries.SubmissionInsert(ctx, db, dbsqlc.SubmissionInsertParams{
		Reason: s.Reason, BatchID: s.BatchID, Block: s.Block, BlockHash: s.BlockHash, Outcome: s.Outcome,
		Weights: weights, Unregistered: int32(s.Unregistered), PylonStatus: status, PylonAnswer: s.PylonAnswer, Error: s.Error,
		Via: s.Via, ExtrinsicHash: s.ExtrinsicHash, Extrinsic: s.Extrinsic,
	})
	if err != nil {
		return 0, fmt.Errorf("insert %s weight submission: %w", s.Outcome, err)
	}
	return id, nil
}

// SubmissionLastSentBlock returns the block of the latest weights sent; 0 when none was.
func SubmissionLastSentBlock(ctx context.Context, db postgres.DBTX) (int64, error) {
	block, err := queries.SubmissionLastSentBlock(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("get the block of the last weights sent: %w", err)
	}
	return block, nil
}

// SubmissionList returns up to limit attempts, newest first, older than id before (all when 0).
func SubmissionList(ctx context.Context, db postgres.DBTX, before int64, limit int) ([]Submission, error) {
	rows, err := queries.SubmissionList(ctx, db, dbsqlc.SubmissionListParams{Before: before, Max: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list weight submissions: %w", err)
	}
	out := make([]Submission, len(rows))
	for i, r := range rows {
		out[i] = Submission{
			ID: r.ID, At: r.At, Reason: r.Reason, BatchID: r.BatchID, Block: r.Block, BlockHash: r.BlockHash,
			Outcome: r.Outcome, Unregistered: int(r.Unregistered), PylonAnswer: r.PylonAnswer, Error: r.Error,
			ConfirmedBlock: r.ConfirmedBlock, Via: r.Via, ExtrinsicHash: r.ExtrinsicHash, Extrinsic: r.Extrinsic,
		}
		if r.PylonStatus != nil {
			out[i].PylonStatus = new(int(*r.PylonStatus))
		}
		if err := json.Unmarshal(r.Weights, &out[i].Weights); err != nil {
			return nil, fmt.Errorf("read weights of submission %d: %w", r.ID, err)
		}
	}
	return out, nil
}

// Because records err as the reason for s's outcome and returns s.
func (s *Submission) Because(err error) *Submission {
	msg := err.Error()
	s.Error = &msg
	return s
}

// SubmissionConfirm marks every sent submission not yet confirmed whose block is at most
// lastUpdate (the validator's, from a later metagraph) as on chain; it returns how many.
func SubmissionConfirm(ctx context.Context, db postgres.DBTX, lastUpdate int64) (int64, error) {
	n, err := queries.SubmissionConfirm(ctx, db, lastUpdate)
	if err != nil {
		return 0, fmt.Errorf("confirm weights sent up to block %d: %w", lastUpdate, err)
	}
	return n, nil
}
