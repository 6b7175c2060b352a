-- What this store reads beyond build-scheduler's own migrations, as sqlc must see it (never
-- applied to a database): the columns of River's job table of this schema that
-- query/dispatch_token.sql reads, which River's own migrations create.
CREATE TABLE river_job (
    id           bigint      PRIMARY KEY,
    kind         text        NOT NULL,
    queue        text        NOT NULL,
    state        text        NOT NULL,
    scheduled_at timestamptz NOT NULL
);
