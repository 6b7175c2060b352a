package queue

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Queues of the synthetic-batch flow, each in its consumer's schema.
const (
	QueueMetagraph = "metagraph" // miner-sync
	QueueBatches   = "batches"   // batch-runner
	QueueScoring   = "scoring"   // scorer
)

// SyncMetagraphArgs asks miner-sync to refresh the miners table from the metagraph source.
type SyncMetagraphArgs struct {
	// Reason says who asked: "periodic" or "api".
	Reason string `json:"reason"`
}

// Kind is the job kind of SyncMetagraphArgs.
func (SyncMetagraphArgs) Kind() string { return "sync_metagraph" }

// InsertOpts pins SyncMetagraphArgs to QueueMetagraph; at most one sync waits or runs at a time.
func (SyncMetagraphArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueMetagraph,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

// RunBatchArgs asks batch-runner to run one synthetic batch.
type RunBatchArgs struct {
	// Reason says who asked: "periodic" or "api".
	Reason string `json:"reason"`

	// RequestedAt is when the batch was asked for.
	RequestedAt time.Time `json:"requested_at"`
}

// Kind is the job kind of RunBatchArgs.
func (RunBatchArgs) Kind() string { return "run_batch" }

// InsertOpts pins RunBatchArgs to QueueBatches.
func (RunBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBatches, MaxAttempts: 3}
}

// ScoreBatchArgs hands a finished batch's results to scorer. It carries everything scoring
// needs, so scorer never reads batch-runner's tables: per miner and executor class, the
// executors the manifest declared and how their jobs ended.
type ScoreBatchArgs struct {
	// BatchID is the batch's id in batch-runner; scorer keys its rows on it (idempotency).
	BatchID int64 `json:"batch_id"`

	// StartedAt is when the batch began; the latest batch wins for weights.
	StartedAt time.Time `json:"started_at"`

	// Peak marks a batch run in a peak cycle (the dancing and non-peak rules compare peaks).
	Peak bool `json:"peak"`

	// Miners holds one entry per miner and executor class tested.
	Miners []MinerClassResult `json:"miners"`
}

// MinerClassResult is how one miner's executors of one class fared in a batch.
type MinerClassResult struct {
	Hotkey        string `json:"hotkey"`
	ExecutorClass string `json:"executor_class"`

	// Executors is the count the miner's manifest declared (after per-class caps).
	Executors int `json:"executors"`

	// Completed jobs answered correctly in time; Excused were busy declines with valid
	// receipts; Failed is every other outcome (declined, timed out, wrong, failed, ...).
	Completed int `json:"completed"`
	Excused   int `json:"excused"`
	Failed    int `json:"failed"`
}

// Kind is the job kind of ScoreBatchArgs.
func (ScoreBatchArgs) Kind() string { return "score_batch" }

// InsertOpts pins ScoreBatchArgs to QueueScoring.
func (ScoreBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueScoring, MaxAttempts: 10}
}
