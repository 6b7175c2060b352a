package queue

import "github.com/riverqueue/river/rivertype"

// UnfinishedStates returns the River job states of a job that has not finished: waiting in any
// form, or running. As UniqueOpts.ByState it allows one such job at a time, and a new one as soon
// as the last has finished (completed, cancelled or discarded). River requires available,
// pending, running and scheduled among the unique states; retryable is waiting too.
func UnfinishedStates() []rivertype.JobState {
	return []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}
}
