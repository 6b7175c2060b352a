#!/usr/bin/env bash
# bench.sh: the benchmarks make bench runs. Each measures our figure and its floor in the same run
# and prints the ratio: these machines are shared and noisy, so only ratios compare across runs.
# DATABASE_URL names a server where the benchmarks may create and drop scratch databases.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

section() { printf '\n== %s\n' "$*"; }

section "batch-runner hot phase vs a bare prepared-frame write loop, median of ${BENCH_ROUNDS:-3} rounds (BENCH_EXECUTORS=${BENCH_EXECUTORS:-1000,5000})"
(cd "$root/services/batch-runner" && go test -run '^$' -bench HotPhase -benchtime 1x -timeout 30m ./internal/batch/)

section "build-scheduler: 10,000-job graph, 8 worker slots, vs single-row UPDATE+COMMIT"
(cd "$root/services/build-scheduler" && go run ./cmd/build-bench -db "$DATABASE_URL")

section "populate-worker: schedule_jobs over ${POPULATE_BENCH_KEYS:-1000000} keys; reserve+make+complete vs a SKIP LOCKED loop"
(cd "$root/services/populate-worker" && go run ./cmd/populate-bench -keys "${POPULATE_BENCH_KEYS:-1000000}")
