// Package receipts builds, signs and checks ComputeHorde receipts: the JobStarted, JobAccepted
// and JobFinished payloads a validator signs for a miner, and the receipts a busy miner shows
// to excuse a declined job.
//
// A receipt signature covers the bytes Python's json.dumps(payload, sort_keys=True) gives for
// the payload, because the miner and other validators rebuild exactly those bytes from their
// parsed copy. SignedBytes reproduces them; nothing else may be signed.
package receipts
