package populate

import "drover.dev/services/populate-worker/internal/populate/dbsqlc"

// queries runs the static statements of query.sql, compiled by sqlc; each takes the pool,
// connection or transaction to run on. Statements over users' tables, and those whose shape a
// restriction or an order decides, are built in Go with every identifier quoted.
var queries = dbsqlc.New()
