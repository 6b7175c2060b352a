// Package computehorde holds what a ComputeHorde validator needs to talk to real miners: the wire
// protocol, hotkey identity and signing, receipts, synthetic job generators and a simulated miner
// fleet for tests and benchmarks.
package computehorde
