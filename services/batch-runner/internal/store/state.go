package store

// BatchState is a batch row's state: running until the transaction that writes its results
// (done) or records its failure (failed).
type BatchState string

// The batch states.
const (
	BatchRunning BatchState = "running"
	BatchDone    BatchState = "done"
	BatchFailed  BatchState = "failed"
)

// BatchStates returns every batch state.
func BatchStates() []BatchState { return []BatchState{BatchRunning, BatchDone, BatchFailed} }

// ShardState is a shard row's state: pending until a replica takes its job, then running until
// it is done or failed.
type ShardState string

// The shard states.
const (
	ShardPending ShardState = "pending"
	ShardRunning ShardState = "running"
	ShardDone    ShardState = "done"
	ShardFailed  ShardState = "failed"
)

// ShardStates returns every shard state.
func ShardStates() []ShardState {
	return []ShardState{ShardPending, ShardRunning, ShardDone, ShardFailed}
}
