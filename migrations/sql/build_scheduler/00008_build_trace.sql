-- A build remembers the span it ran as (W3C traceparent), written by its report when the worker
-- traces, so that a build with several dependencies links to the spans of those that did not
-- release it (the one that did is its parent). NULL when the worker was not traced.

-- +goose Up
ALTER TABLE job_graph ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE job_graph DROP COLUMN trace_parent;
