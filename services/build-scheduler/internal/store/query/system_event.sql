-- name: SystemEventInsert :exec
INSERT INTO system_events (group_id, job_id, kind, message) VALUES (@group_id, @job_id, @kind, @message);

-- name: SystemEventList :many
SELECT id, group_id, job_id, kind, message, created_at FROM system_events
WHERE (@group_id::bigint = 0 OR group_id = @group_id::bigint) ORDER BY id DESC LIMIT @max_rows;
