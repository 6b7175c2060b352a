// Package store holds populate-worker's static statements (query.sql, compiled by sqlc into
// dbsqlc) over its own tables: the jobs table, populate runs and their keys, and the River jobs
// they read. Statements over users' tables, and those whose shape a restriction or an order
// decides, are built in Go by package populate with every identifier quoted.
package store

import "drover.dev/services/populate-worker/internal/store/dbsqlc"

// Queries runs the statements of query.sql; each takes the pool, connection or transaction to
// run on.
var Queries = dbsqlc.New()
