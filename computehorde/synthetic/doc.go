// Package synthetic generates the synthetic jobs a validator sends to miners and checks their
// answers.
//
// Each generator produces, for one executor of one miner, the pieces of the initial request and
// of the job request, the expected answer and the time limit; the batch-runner maps those pieces
// onto protocol messages. Two generators exist: [HashcatGenerator] builds the real ComputeHorde
// hashcat v2 job that a live miner's executor can run, and [PoWGenerator] builds a cheap
// proof-of-work job that a simulated miner solves in milliseconds with [Solve].
//
// All randomness comes from a caller-supplied [io.Reader]: crypto/rand in production, a seeded
// stream in tests, so a batch can be pregenerated and reproduced.
package synthetic
