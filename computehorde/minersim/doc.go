// Package minersim serves a fleet of simulated ComputeHorde miners so the batch-runner can be
// tested and benchmarked against thousands of executors without a GPU or a chain.
//
// Each miner listens on its own loopback address and speaks the validator interface as a real
// miner does: it checks the validator's auth message, sends its manifest, verifies every receipt
// the validator signs, reports ready after a simulated spin-up and genuinely solves
// proof-of-work jobs. Scripted behaviours (see Behaviour) make chosen miners or executors
// misbehave in each of the ways a batch must survive, and every frame a miner receives is
// timestamped (see Arrival) so fairness can be measured from the miners' side.
//
// The fleet's control address serves the metagraph stub miner-sync reads, the arrival records
// and per-miner statistics; README.md documents the formats.
package minersim
