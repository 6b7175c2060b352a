package queue

import "github.com/riverqueue/river"

// QueueWeights is scorer's queue of set_weights jobs, apart from scoring so that a slow chain
// never delays a score.
const QueueWeights = "weights"

// SetWeightsArgs asks scorer to send the latest weights to the chain (through Pylon). Scorer
// enqueues it periodically and in the transaction of every scoring.
type SetWeightsArgs struct {
	// Reason says who asked: "periodic" or "scored".
	Reason string `json:"reason"`
}

// Kind is the job kind of SetWeightsArgs.
func (SetWeightsArgs) Kind() string { return "set_weights" }

// InsertOpts pins SetWeightsArgs to QueueWeights; at most one waits or runs at a time, so a
// burst of scorings sends the weights once.
func (SetWeightsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue: QueueWeights, MaxAttempts: 5,
		UniqueOpts: river.UniqueOpts{ByState: UnfinishedStates()},
	}
}
