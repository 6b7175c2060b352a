package batch

import (
	"fmt"
	"time"
)

// shardedTarget is the sharded batch's arrival spread target against the floor, at 10,000
// executors.
const shardedTarget = 1.5

// shardedRound prints the key numbers of sharded round i of n as soon as it ends.
func (f figures) shardedRound(i, n int, r shardedRound) {
	f.line(fmt.Sprintf("sharded round %d of %d", i, n), "send spread ours %s  floor %s;  arrival spread ours %s  floor %s  ratio %.2f;  shards released within %s;  %d executors got their job, %d answers judged right (verdicts %v)",
		ms(r.send.ours), ms(r.send.floor), ms(r.arrival.ours), ms(r.arrival.floor), r.arrival.ratio(), ms(r.releases), r.executors, r.right, r.reasons)
}

// shardedSummary prints the sharded batch's figures over the rounds.
func (f figures) shardedSummary(rs []shardedRound, shards int) {
	as := make([]round, len(rs))
	for i, r := range rs {
		as[i] = round{send: r.send, arrival: r.arrival, wall: r.releases, peakRSS: r.peakRSS}
	}
	target := 0.0
	if f.executors == 10000 {
		target = shardedTarget
	}
	name := fmt.Sprintf("sharded x%d", shards)
	f.ratio(as, figure{name: name + " send", ref: "floor", of: func(r round) spread { return r.send }, note: "every job's before/after-send instants, as the shards recorded them"})
	f.ratio(as, figure{name: name + " arrival", ref: "floor", of: func(r round) spread { return r.arrival }, target: target,
		note: fmt.Sprintf("kernel-stamped by minersim; %d batch-runner processes agreeing the send instant through Postgres; target <= %.1f at 10,000 executors", shards, shardedTarget)})
	releases := func(r round) time.Duration { return r.wall }
	var peak float64
	for _, r := range rs {
		peak = max(peak, r.peakRSS)
	}
	f.line(name+" other", "median of %d rounds: shards released within %s %s (each on its own clock);  peak RSS of the largest process %.0f MiB (max of the rounds)",
		len(rs), ms(median(as, releases)), span(as, releases, msShort), peak)
}
