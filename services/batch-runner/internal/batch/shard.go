package batch

import (
	"io"
	"slices"
)

// SplitMiners deals miners into shards of at most perShard miners, in a random order of this
// batch, so that no miner is always in the first shard or always with the same neighbours. The
// shards are as even as the count allows: ceil(n/perShard) shards, sizes differing by one at
// most. perShard ≤ 0 or n ≤ perShard gives one shard with every miner.
func SplitMiners(miners []Miner, perShard int, rnd io.Reader) [][]Miner {
	order := slices.Clone(miners)
	shuffle(rnd, order)
	if perShard <= 0 || len(order) <= perShard {
		return [][]Miner{order}
	}
	out := make([][]Miner, (len(order)+perShard-1)/perShard)
	for i, m := range order {
		out[i%len(out)] = append(out[i%len(out)], m)
	}
	return out
}

// MergeStages turns the stages of a batch's shards into the batch's: per stage name, in the
// order the names first appear, the earliest start, the latest end and the counts summed. So a
// sharded batch reads like one run in one process: "hot" spans from the first shard's start to
// the last shard's end.
func MergeStages(shards [][]Stage) []Stage {
	var out []Stage
	index := map[string]int{}
	for _, stages := range shards {
		for _, s := range stages {
			i, seen := index[s.Name]
			if !seen {
				index[s.Name] = len(out)
				out = append(out, Stage{Name: s.Name, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt})
				i = len(out) - 1
			}
			merged := &out[i]
			if s.StartedAt.Before(merged.StartedAt) {
				merged.StartedAt = s.StartedAt
			}
			if s.FinishedAt.After(merged.FinishedAt) {
				merged.FinishedAt = s.FinishedAt
			}
			for k, v := range s.Counts {
				if merged.Counts == nil {
					merged.Counts = map[string]int64{}
				}
				merged.Counts[k] += v
			}
		}
	}
	return out
}
