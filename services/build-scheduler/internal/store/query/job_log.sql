-- name: JobLogInsert :exec
INSERT INTO job_logs (job_id, attempt, stream, data) VALUES (@job_id, @attempt, @stream, @data);

-- name: JobLogList :many
SELECT seq, attempt, stream, data, created_at FROM job_logs
WHERE job_id = @job_id AND seq > @after ORDER BY seq LIMIT @max_rows;
