-- name: JobLogInsert :exec
INSERT INTO job_logs (job_id, attempt, stream, data) VALUES (sqlc.arg(job_id), sqlc.arg(attempt), sqlc.arg(stream), sqlc.arg(data));

-- name: JobLogList :many
SELECT seq, attempt, stream, data, created_at FROM job_logs
WHERE job_id = sqlc.arg(job_id) AND seq > sqlc.arg(after) ORDER BY seq LIMIT sqlc.arg(max_rows);
