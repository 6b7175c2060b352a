-- A group's jobs by state, recorded when the group settles. GET /v1/groups counted every listed
-- group's jobs by state in a subquery of its own (fifty of them a page, through the (group_id,
-- name) index since 00006 dropped (group_id, state)), which held the list to a fraction of the
-- other services' lists with 10,000 groups in the table. A settled group's jobs do not change
-- until the group reopens, so the statements that settle a group (GroupSettle, GroupResettle,
-- GroupCancel with nothing running) record its counts as they count its jobs anyway, the ones
-- that reopen it (GroupReopen, GroupRetry, GroupResettle with work left) clear them, and the list
-- counts live only the open groups. No transition of a job writes them: a report stays as it was.
--
-- The check keeps the column true to the group's state: a statement that settled a group without
-- recording its counts, or reopened one without clearing them, fails instead of leaving the list
-- wrong. Groups settled before this migration get their counts here, in one pass over job_graph.

-- +goose Up
ALTER TABLE groups ADD COLUMN final_counts jsonb;

UPDATE groups g SET final_counts = c.counts
FROM (
    SELECT group_id, jsonb_object_agg(state, n) AS counts
    FROM (SELECT group_id, state::text AS state, count(*) AS n FROM job_graph GROUP BY group_id, state) s
    GROUP BY group_id
) c
WHERE g.id = c.group_id AND g.state IN ('complete', 'failed', 'canceled');

UPDATE groups SET final_counts = '{}' WHERE state IN ('complete', 'failed', 'canceled') AND final_counts IS NULL;

ALTER TABLE groups ADD CONSTRAINT groups_final_counts_when_settled
    CHECK ((final_counts IS NULL) = (state IN ('queued', 'dispatching')));

COMMENT ON COLUMN groups.final_counts IS
    'the group''s jobs by state ({"complete": n, ...}) when it settled; null while it is queued or dispatching';

-- +goose Down
ALTER TABLE groups DROP COLUMN final_counts;
