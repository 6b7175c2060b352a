#!/usr/bin/env bash
# check-river-writes.sh: fails when SQL of Drover's own writes River's tables. River is used
# through its client API (InsertTx, InsertManyTx, JobCompleteTx, JobCancelTx, JobRetry ...), and
# tests put jobs into the states they need with drover.dev/queue/queuetest. The exceptions, a
# discard or cancel inside the caller's transaction (queue/job_end_tx.go) and the liveness sweep's
# rescue of a dead process's jobs (queue/sweep.go), are the one adapter in queue/, and it calls
# River's driver rather than writing SQL. make lint runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

if git grep -nE -i '(insert +into|update|delete +from|truncate( +table)?) +("?[a-z_]+"?\.)?"?river_(job|leader|queue|migration|client|client_queue)\b' \
	-- '*.go' '*.sql' ':!scripts/'; then
	echo "check-river-writes: the lines above write River's tables; use River's client API (or queue/queuetest in tests)"
	exit 1
fi
