package queue

import (
	"time"

	"github.com/riverqueue/river"
)

// Queues of the synthetic-batch flow, each in its consumer's schema.
const (
	QueueMetagraph = "metagraph" // miner-sync
	QueueBatches   = "batches"   // batch-runner
	QueueScoring   = "scoring"   // scorer

	// QueueBatchShards is batch-runner's queue of the shards of a sharded batch. It needs more
	// than one worker slot per process: the shards of a batch wait for each other before sending.
	QueueBatchShards = "batch_shards"
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
		UniqueOpts:  river.UniqueOpts{ByState: UnfinishedStates()},
	}
}

// RunBatchArgs asks batch-runner to run one synthetic batch.
type RunBatchArgs struct {
	// Reason says who asked: "periodic" or "api".
	Reason string `json:"reason"`

	// RequestedAt is when the batch was asked for.
	RequestedAt time.Time `json:"requested_at"`

	// TakeOver, when set, makes the job take over a running batch whose lease ran out (its
	// process died) instead of running a new one. It is the only field that makes run_batch jobs
	// unique apart: one new batch waits or runs at a time, and one takeover per batch and attempt.
	TakeOver *BatchTakeOver `json:"take_over,omitempty" river:"unique"`
}

// BatchTakeOver names the batch a run_batch job takes over and the attempt whose lease ran out.
type BatchTakeOver struct {
	BatchID int64 `json:"batch_id"`
	Attempt int   `json:"attempt"`
}

// Kind is the job kind of RunBatchArgs.
func (RunBatchArgs) Kind() string { return "run_batch" }

// InsertOpts pins RunBatchArgs to QueueBatches; at most one batch waits or runs at a time, so a
// request while one is pending gets the existing job instead of queueing another batch. A
// takeover is unique by its TakeOver alone, so it is inserted while the dead attempt's job still
// counts as running.
func (RunBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBatches, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: UnfinishedStates()}}
}

// RunBatchShardArgs asks a batch-runner replica to run one shard of a sharded batch: the
// manifests, availability, hot phase and receipts of its miners, with the send instant agreed
// with the batch's other shards through Postgres. The coordinator (run_batch) inserts every shard
// of a batch in the transaction that creates the batch.
type RunBatchShardArgs struct {
	// BatchID is the batch the shard belongs to.
	BatchID int64 `json:"batch_id"`

	// Shard numbers the shard within its batch, from 0.
	Shard int `json:"shard"`

	// Miners are the shard's miners as the coordinator read them from the metagraph.
	Miners []ShardMiner `json:"miners"`
}

// ShardMiner is one miner of a shard: its hotkey and axon.
type ShardMiner struct {
	Hotkey string `json:"hotkey"`
	IP     string `json:"ip"`
	Port   int    `json:"port"`
}

// Kind is the job kind of RunBatchShardArgs.
func (RunBatchShardArgs) Kind() string { return "run_batch_shard" }

// InsertOpts pins RunBatchShardArgs to QueueBatchShards.
func (RunBatchShardArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueBatchShards, MaxAttempts: 3}
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
