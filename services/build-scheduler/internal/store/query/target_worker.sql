-- name: TargetWorkerSee :exec
INSERT INTO target_workers (target, worker_id) SELECT t, @worker_id FROM unnest(@targets::text[]) t
ON CONFLICT (target, worker_id) DO UPDATE SET seen_at = clock_timestamp();

-- name: WorkerCountRecent :many
-- WorkerCountRecent counts the build workers that polled each target within the last two minutes.
SELECT target, count(*) FILTER (WHERE seen_at > now() - interval '2 minutes')::float8 AS workers
FROM target_workers GROUP BY target;
