-- Processes are the liveness records of every River client process working this schema (the
-- service's replicas, and build workers on build_scheduler's): each renews its row every few
-- seconds on the database clock, and a process whose row is older than its own timeout is dead.
-- Any replica's sweep then gives back the River jobs the dead process held and deletes its row
-- (queue.Process). A process that finds its row gone learns it was declared dead.

-- +goose Up
CREATE TABLE processes (
    id         text        PRIMARY KEY, -- the River client's ID: the last element of river_job.attempted_by
    name       text        NOT NULL,    -- what the process is: the service, or build-worker
    host       text        NOT NULL,
    pid        integer     NOT NULL,
    timeout    interval    NOT NULL,    -- its LIVENESS_TIMEOUT: dead once renewed_at + timeout has passed
    started_at timestamptz NOT NULL DEFAULT now(),
    renewed_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE processes;
