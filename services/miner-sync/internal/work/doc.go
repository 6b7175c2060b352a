// Package work holds miner-sync's River workers: one per job kind it consumes.
package work
