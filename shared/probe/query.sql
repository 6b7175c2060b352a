-- name: ProbeInsert :one
INSERT INTO probes (target) VALUES (@target) RETURNING id, sent_at;

-- name: ProbeGet :one
SELECT target, sent_at, arrived_at, acked_at FROM probes WHERE id = @id;

-- name: ProbeAck :execrows
-- ProbeAck completes a probe row; a repeated acknowledgement changes nothing (no row).
UPDATE probes SET arrived_at = @arrived_at, acked_at = clock_timestamp()
WHERE id = @id AND acked_at IS NULL;

-- name: ProbeArrivalRecord :one
-- ProbeArrivalRecord stores the arrival of a probe once and returns its arrival time, and whether
-- this call stored it: a probe delivered again keeps its first.
WITH ins AS (
    INSERT INTO probe_arrivals (origin, probe_id, sent_at) VALUES (@origin, @probe_id, @sent_at)
    ON CONFLICT (origin, probe_id) DO NOTHING
    RETURNING arrived_at
)
SELECT arrived_at, true AS first FROM ins
UNION ALL
SELECT arrived_at, false AS first FROM probe_arrivals WHERE origin = @origin AND probe_id = @probe_id
LIMIT 1;
