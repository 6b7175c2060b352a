// Package scoring turns one synthetic batch's results into per-miner scores and weights, the way
// ComputeHorde's validators scored synthetic batches in their last synthetic era (Feb–Jul 2025):
// per executor class a raw score (Σ job scores, or horde_score for the horde class), normalised
// within the class and weighted by the class weight, summed over classes, then the dancing bonus
// and the non-peak penalty, and finally weights that sum to one (and to 65535 as u16).
//
// It does no I/O: the caller brings the batch and the executor counts of the two last peak
// batches, so every rule can be checked by hand-computed tables.
package scoring
