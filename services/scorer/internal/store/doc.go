// Package store keeps scorer's rows: each batch's inputs, its per-class and per-miner scores and
// the weights they give. Functions take a postgres.DBTX so the worker runs them, and the River
// completion, in one transaction.
package store

import "drover.dev/services/scorer/internal/store/dbsqlc"

// queries are the statements of query.sql, compiled by sqlc; each takes the DBTX to run on.
var queries = dbsqlc.New()
