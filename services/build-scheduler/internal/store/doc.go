// Package store holds the statements on the build_scheduler schema, one sqlc package for the
// whole schema as River's own dbsqlc is: query/ has one file per table (group.sql,
// group_stripe.sql, job_graph.sql, job_log.sql, target_worker.sql, system_event.sql) and
// transaction.sql; job_graph.sql also reads River's river_job table (declared in
// sqlc_schema.sql), never writing it; sqlc compiles them into package dbsqlc (make generate).
// The job graph (package jobgraph), the log store (logstore) and the gauges (work) run them.
package store
