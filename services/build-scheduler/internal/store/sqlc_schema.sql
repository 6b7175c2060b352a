-- What this store reads beyond build-scheduler's own migrations, as sqlc must see it (never
-- applied to a database): the columns of River's job table of this schema that
-- query/job_graph.sql reads, which River's own migrations create. The store never writes it.
CREATE TABLE river_job (
    id           bigint      PRIMARY KEY,
    kind         text        NOT NULL,
    queue        text        NOT NULL,
    state        text        NOT NULL,
    attempt      smallint    NOT NULL,
    args         jsonb       NOT NULL,
    scheduled_at timestamptz NOT NULL
);
