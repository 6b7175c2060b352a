// Package shared is the foundation every Drover service stands on. Its packages are small and do
// one thing each: config (environment variables), logging, postgres (the pool), problem (errors a
// client may see), web (the HTTP server), service (the lifecycle that wires them with River),
// probe (the cross-service round trip every service serves), procattr (child processes that die
// with their parent), batchwatch (a synthetic batch's progress printed stage by stage, for the
// batch demo and drover) and testdb (isolated real databases for tests).
package shared
