-- A run's key whose make found it being made by another make (another run's, the background's)
-- waits for that make's end without holding one of the run's processes: the run hands its next
-- key to River meanwhile, as DataJoint's callers move on from a key reserved by another. The
-- waiting entry is open, like pending and queued ones: the other make's end counts it
-- (made_elsewhere, or skipped when that make failed).

-- +goose Up
ALTER TABLE populate_run_keys DROP CONSTRAINT populate_run_keys_state_check;
ALTER TABLE populate_run_keys ADD CONSTRAINT populate_run_keys_state_check
    CHECK (state IN ('pending', 'queued', 'waiting', 'made', 'made_elsewhere', 'error', 'skipped', 'dropped'));
DROP INDEX populate_run_keys_open;
CREATE INDEX populate_run_keys_open ON populate_run_keys (table_name, key_hash) WHERE state IN ('pending', 'queued', 'waiting');

-- +goose Down
DROP INDEX populate_run_keys_open;
CREATE INDEX populate_run_keys_open ON populate_run_keys (table_name, key_hash) WHERE state IN ('pending', 'queued');
UPDATE populate_runs r SET skipped = r.skipped + w.n
FROM (SELECT run_id, count(*) AS n FROM populate_run_keys WHERE state = 'waiting' GROUP BY run_id) w WHERE r.id = w.run_id;
UPDATE populate_run_keys SET state = 'skipped' WHERE state = 'waiting';
ALTER TABLE populate_run_keys DROP CONSTRAINT populate_run_keys_state_check;
ALTER TABLE populate_run_keys ADD CONSTRAINT populate_run_keys_state_check
    CHECK (state IN ('pending', 'queued', 'made', 'made_elsewhere', 'error', 'skipped', 'dropped'));
