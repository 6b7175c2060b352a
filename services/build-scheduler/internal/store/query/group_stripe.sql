-- name: GroupStripeInsert :exec
INSERT INTO group_stripes (group_id, stripe, remaining)
SELECT @group_id::bigint, s.stripe, count(j.id)
FROM generate_series(0, group_stripe_count() - 1) AS s(stripe)
LEFT JOIN unnest(@job_ids::bigint[]) AS j(id) ON j.id % group_stripe_count() = s.stripe
GROUP BY s.stripe;

-- name: GroupStripeCountOff :many
-- GroupStripeCountOff locks the stripes of the jobs in ascending order (so two transactions never
-- wait on each other's stripes) and subtracts the jobs from them.
WITH finished AS (
    SELECT f.id % group_stripe_count() AS stripe, count(*) AS n
    FROM unnest(@job_ids::bigint[]) AS f(id) GROUP BY 1
), locked AS MATERIALIZED (
    SELECT s.stripe FROM group_stripes s
    WHERE s.group_id = @group_id AND s.stripe IN (SELECT stripe FROM finished)
    ORDER BY s.stripe FOR UPDATE
)
UPDATE group_stripes s SET remaining = s.remaining - f.n
FROM finished f, locked l
WHERE s.group_id = @group_id AND s.stripe = f.stripe AND l.stripe = s.stripe
RETURNING s.remaining = 0 AS emptied, (SELECT state::text FROM groups WHERE id = @group_id)::text AS group_state;

-- name: GroupStripeLockAll :exec
SELECT FROM group_stripes WHERE group_id = @group_id ORDER BY stripe FOR UPDATE;

-- name: GroupStripeRecount :exec
WITH c AS MATERIALIZED (
    SELECT id % group_stripe_count() AS stripe, count(*) AS n FROM job_graph
    WHERE group_id = @group_id AND state NOT IN ('complete', 'job_failed', 'dependency_failed', 'cancel_complete') GROUP BY 1
)
UPDATE group_stripes s SET remaining = coalesce((SELECT n FROM c WHERE c.stripe = s.stripe), 0)
WHERE s.group_id = @group_id;
