-- The GIN index on job_graph.dependencies answered "which jobs depend on this one" until 00002
-- gave each job its dependents: since then every query reads dependencies the other way round
-- (d.id = ANY(j.dependencies), the dependency by primary key) and none uses the index
-- (pg_stat_user_indexes counted no scan of it in a 10,000-job build group). Postgres still
-- maintained it on every job_graph UPDATE that could not be HOT, which is every claim, report and
-- release (state is indexed): entries appended to its pending list, and the list merged into the
-- index by whichever statement found it full, in the middle of a report.

-- +goose Up
DROP INDEX job_graph_dependencies;

-- +goose Down
CREATE INDEX job_graph_dependencies ON job_graph USING gin (dependencies);
