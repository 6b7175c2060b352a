-- The statements of the migrate command itself, compiled by sqlc into dbsqlc (make generate). The
-- migrations proper are the goose files under sql/.

-- name: MigrationLockAcquire :exec
-- MigrationLockAcquire waits for the session advisory lock every migration run holds.
SELECT pg_advisory_lock(@key::bigint);

-- name: MigrationLockRelease :exec
SELECT pg_advisory_unlock(@key::bigint);

-- name: TableExists :one
-- TableExists reports whether a table (schema-qualified or on the search path) exists.
SELECT (to_regclass(@name::text) IS NOT NULL)::bool AS exists;

-- name: SchemaExists :one
SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = @name::text)::bool AS exists;

-- name: RoleExists :one
SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = @name::text)::bool AS exists;

-- name: RoleCanLogin :one
-- RoleCanLogin reports whether a role may log in; no row when the role does not exist.
SELECT rolcanlogin::bool AS can_login FROM pg_catalog.pg_roles WHERE rolname = @name::text;

-- name: ServerVersionNum :one
SELECT current_setting('server_version_num')::int AS version;
