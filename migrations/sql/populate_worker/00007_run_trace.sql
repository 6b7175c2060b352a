-- A populate run remembers the trace it was started in (W3C traceparent), so that every make
-- queued for it, by whichever make of it ended last, is a span of the run's trace rather than of
-- the make that queued it. NULL when the caller was not traced.

-- +goose Up
ALTER TABLE populate_runs ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE populate_runs DROP COLUMN trace_parent;
