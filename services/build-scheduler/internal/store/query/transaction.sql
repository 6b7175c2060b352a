-- name: TransactionDurable :exec
-- TransactionDurable makes the rest of the transaction commit with synchronous_commit on, after a
-- statement that set it off (JobClaim) in a transaction whose commit must be durable.
SELECT set_config('synchronous_commit', 'on', true);
