// Package store keeps miner-sync's rows: the miners table batch-runner reads, and the sync events
// that say how each sync went. Functions take a postgres.DBTX so the worker runs a sync's writes,
// its event and the River completion in one transaction.
package store

import "drover.dev/services/miner-sync/internal/store/dbsqlc"

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()
