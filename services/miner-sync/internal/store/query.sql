-- The statements of miner-sync, compiled by sqlc into dbsqlc (make generate).

-- name: MinerUpsert :execrows
-- MinerUpsert writes every miner of a good metagraph, active, its updated_at moved only when
-- something about it changed. The arrays are one miner per position.
INSERT INTO miners AS m (hotkey, uid, coldkey, ip, port, stake, is_validator, serving)
SELECT unnest(@hotkeys::text[]), unnest(@uids::int[]), unnest(@coldkeys::text[]), unnest(@ips::text[]),
       unnest(@ports::int[]), unnest(@stakes::float8[]), unnest(@validators::bool[]), unnest(@serving::bool[])
ON CONFLICT (hotkey) DO UPDATE SET
    uid = excluded.uid, coldkey = excluded.coldkey, ip = excluded.ip, port = excluded.port,
    stake = excluded.stake, is_validator = excluded.is_validator, serving = excluded.serving,
    active = true, last_seen = now(),
    updated_at = CASE WHEN (m.uid, m.coldkey, m.ip, m.port, m.stake, m.is_validator, m.serving, m.active)
        IS DISTINCT FROM (excluded.uid, excluded.coldkey, excluded.ip, excluded.port, excluded.stake, excluded.is_validator, excluded.serving, true)
        THEN now() ELSE m.updated_at END;

-- name: MinerDeactivateMissing :execrows
-- MinerDeactivateMissing deactivates every active miner whose hotkey is not in hotkeys.
UPDATE miners SET active = false, updated_at = now()
WHERE active AND hotkey <> ALL(@hotkeys::text[]);

-- name: MinerListPage :many
-- MinerListPage returns a page of miners in (uid, hotkey) order. A null filter matches every
-- miner, an empty hotkey too; has_after false starts at the first miner.
SELECT hotkey, uid, coldkey, ip, port, stake, is_validator, serving, active, first_seen, last_seen, updated_at
FROM miners
WHERE (sqlc.narg(active)::bool IS NULL OR active = sqlc.narg(active)::bool)
  AND (sqlc.narg(is_validator)::bool IS NULL OR is_validator = sqlc.narg(is_validator)::bool)
  AND (@hotkey::text = '' OR hotkey = @hotkey::text)
  AND (NOT @has_after::bool OR (uid, hotkey) > (@after_uid::int, sqlc.arg(after_hotkey)::text COLLATE "C"))
  AND (sqlc.narg(serving)::bool IS NULL OR serving = sqlc.narg(serving)::bool)
ORDER BY uid, hotkey COLLATE "C"
LIMIT @max;

-- name: SyncEventInsert :one
INSERT INTO sync_events (reason, outcome, source, netuid, block, block_hash, entries, upserted, deactivated, skipped, error, skipped_entries)
VALUES (@reason, @outcome, @source, @netuid, @block, @block_hash, @entries, @upserted, @deactivated, @skipped, @error, @skipped_entries)
RETURNING id;

-- name: SyncEventList :many
-- SyncEventList returns events newest first, older than before (every event when 0).
SELECT id, at, reason, outcome, source, netuid, block, block_hash, entries, upserted, deactivated, skipped, error, skipped_entries
FROM sync_events
WHERE (@before::bigint = 0 OR id < @before::bigint)
ORDER BY id DESC
LIMIT @max;

-- name: MinerStateCountList :many
-- The miners in each of the states (serving, not_serving, validator, inactive), 0 for a state
-- none is in (a gauge read at scrape time).
SELECT s::text AS state, count(m.hotkey)::float8 AS miners FROM unnest(sqlc.arg(states)::text[]) s
    LEFT JOIN miners m ON s = CASE WHEN NOT m.active THEN sqlc.arg(inactive)::text WHEN m.is_validator THEN sqlc.arg(validator)::text
        WHEN m.serving THEN sqlc.arg(serving)::text ELSE sqlc.arg(not_serving)::text END
    GROUP BY s;

-- name: SyncEventGoodAgeGet :one
-- Seconds since the last sync whose outcome was not failed (a gauge).
SELECT extract(epoch FROM now() - at)::float8 FROM (
    SELECT at FROM sync_events WHERE outcome <> sqlc.arg(failed)::text ORDER BY at DESC LIMIT 1) s;

-- name: SyncEventBlockGet :one
-- The block the last sync that reached the source read (a gauge).
SELECT block::float8 FROM (SELECT block FROM sync_events WHERE block IS NOT NULL ORDER BY at DESC LIMIT 1) s;
