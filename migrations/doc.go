// Package migrations brings a Drover database to the schema every service expects: for each
// service, its Postgres schema, River's tables in that schema, the tables every service shares
// (probes), and the service's own tables; and for each unit (the five services and build-worker),
// a login role with the rights it needs and no more.
//
// SQL files are embedded. Drover's own migrations run through goose in two tracks per schema:
// "common" (sql/common, the same files in every schema) and the service's own (sql/<schema>), each
// with its own version table in the schema. Files are written without schema names; they run with
// search_path set to the service's schema. A session advisory lock makes concurrent runs safe.
//
// Roles (roles.go) are drover_<unit>, e.g. drover_batch_runner. Each gets every right on its own
// schema (build-worker: reads and writes in build-scheduler's), what River's insert needs on every
// other schema's river_job (probes go to any service and come back; batch-runner enqueues
// score_batch for scorer), and SELECT on its documented cross-reads (batch-runner reads
// miner_sync.miners). Up creates them all; UpFor one unit's schema and role, and after either
// every existing role is granted its rights on whatever exists, so units migrate in any order.
package migrations
