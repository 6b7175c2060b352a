package minersim

import (
	"sync"
	"time"
)

// answerRounds fixes the instants at which Behaviour.AnswerAt answers go out. The first
// V0JobRequest handled after the previous round's instant opens a round whose instant is its
// arrival plus its AnswerAt; every AnswerAt job handled before that instant joins the round.
// One timer closes the round's gate, so every waiting writer wakes from the same event.
type answerRounds struct {
	mu   sync.Mutex
	at   int64 // unix ns of the current round's instant
	open chan struct{}
}

// gate returns the gate of the round a job request that arrived at arrival (unix ns) joins.
func (r *answerRounds) gate(arrival int64, d time.Duration) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil || arrival >= r.at {
		r.at = arrival + d.Nanoseconds()
		open := make(chan struct{})
		r.open = open
		time.AfterFunc(time.Until(time.Unix(0, r.at)), func() { close(open) })
	}
	return r.open
}
