// Package store keeps scorer's rows: each batch's inputs, its per-class and per-miner scores and
// the weights they give. Functions take a postgres.DBTX so the worker runs them, and the River
// completion, in one transaction.
package store
