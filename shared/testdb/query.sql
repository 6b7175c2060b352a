-- The statements of the test database helpers, compiled by sqlc into dbsqlc (make generate).
-- Statements that name a database (CREATE, DROP, ALTER, COMMENT ON DATABASE) cannot take it as a
-- parameter and stay in testdb.go, with names testdb makes itself.

-- name: TemplateLockAcquire :exec
-- TemplateLockAcquire waits for the session advisory lock under which a template is built.
SELECT pg_advisory_lock(@key::bigint);

-- name: TemplateLockRelease :exec
SELECT pg_advisory_unlock(@key::bigint);

-- name: DatabaseExists :one
SELECT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = @name::text) AS exists;

-- name: DatabaseListStale :many
-- DatabaseListStale lists the test templates and shared databases, other than the two named, that
-- no test binary marked used in the last day (see markUsed).
SELECT datname::text AS name FROM pg_catalog.pg_database
WHERE (datname LIKE 'drover\_tpl\_%' OR datname LIKE 'drover\_shared\_%')
  AND datname NOT IN (@template::text, @shared::text)
  AND coalesce(substring(shobj_description(oid, 'pg_database') FROM 'used ([0-9]+)')::bigint, 0)
      < extract(epoch FROM now()) - 86400;
