// Package migrations brings a Drover database to the schema every service expects: for each
// service, its Postgres schema, River's tables in that schema, the tables every service shares
// (probes), and the service's own tables.
//
// SQL files are embedded. Drover's own migrations run through goose in two tracks per schema:
// "common" (sql/common, the same files in every schema) and the service's own (sql/<schema>), each
// with its own version table in the schema. Files are written without schema names; they run with
// search_path set to the service's schema. A session advisory lock makes concurrent runs safe.
package migrations
