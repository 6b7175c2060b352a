-- What this store reads beyond populate-worker's own migrations, as sqlc must see it (never
-- applied to a database): the columns of River's job table of this schema that query.sql reads,
-- which River's own migrations create.
CREATE TABLE river_job (
    id    bigint PRIMARY KEY,
    kind  text   NOT NULL,
    args  jsonb  NOT NULL,
    state text   NOT NULL,
    queue text   NOT NULL,
    max_attempts smallint NOT NULL,
    priority smallint NOT NULL,
    attempted_at timestamptz,
    errors jsonb[]
);
