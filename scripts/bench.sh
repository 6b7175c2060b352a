#!/usr/bin/env bash
# bench.sh: the benchmarks make bench runs. Each measures our figure and its floor in the same run
# and prints the ratio: these machines are shared and noisy, so only ratios compare across runs.
# DATABASE_URL names a server where the benchmarks may create and drop scratch databases.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

section() { printf '\n== %s\n' "$*"; }

# BENCH picks the benchmarks to run, comma separated: batch, build, build-list, populate (default:
# all). For example BENCH=build make bench runs only the build-scheduler's three, and
# BENCH=build-list only its group list.
selected() { [ -z "${BENCH:-}" ] || [[ ",$BENCH," == *",$1,"* ]]; }

# The hot-phase benchmark compares Drover with ComputeHorde's asyncio method, a Python script
# using the websockets client: Debian's python3 (BENCH_PYTHON) with Debian's package, installed
# when missing.
export BENCH_PYTHON=${BENCH_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
need_websockets() {
	"$BENCH_PYTHON" -c 'import websockets' 2>/dev/null && return
	echo "installing python3-websockets (apt-get) for the asyncio comparison"
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get install -y -q python3-websockets >/dev/null ||
		echo "could not install python3-websockets: the hot phase runs without the asyncio comparison"
}

if selected batch; then
section "batch-runner hot phase vs a bare prepared-frame write loop and the asyncio method, median of ${BENCH_ROUNDS:-5} rounds (BENCH_EXECUTORS=${BENCH_EXECUTORS:-1000,5000}; sharded: BENCH_SHARDED_EXECUTORS=${BENCH_SHARDED_EXECUTORS:-10000})"
need_websockets
(cd "$root/services/batch-runner" && go test -run '^$' -bench HotPhase -benchtime 1x -timeout 30m ./internal/batch/)
fi

if selected build; then
section "build-scheduler: the report (River's fetch left out), 10,000-job graph, 8 worker slots, vs single-row UPDATE+COMMIT, median of 5 rounds"
(cd "$root/services/build-scheduler" && go run ./cmd/build-bench -db "$DATABASE_URL")

section "build-scheduler end to end: a 10,000-job group over HTTP on 4 build-worker processes × 2 slots, 3 pairs alternated with River's floor (fork/exec and bare); one pair on 1 × 2 slots (spare cores); per-stage trace; the same group on 8 × 8 slots; verdicts"
(cd "$root/services/build-scheduler" && go run ./cmd/build-e2e-bench -db "$DATABASE_URL")
fi

if selected build || selected build-list; then
section "build-scheduler group list: GET /v1/groups?limit=50 over 10,000 groups, 16 connections, vs miner-sync's GET /v1/sync/events?limit=50 over as many rows, 3 rounds alternated"
(cd "$root/services/build-scheduler" && go test -run '^$' -bench GroupList -benchtime 1x -timeout 10m .)
fi

if selected populate; then
section "populate-worker: schedule_jobs over ${POPULATE_BENCH_KEYS:-1000000} keys; the engine's make loop vs a SKIP LOCKED loop; end to end through the service's River workers vs River's bare floor, 3 rounds alternated; one populate run vs two"
(cd "$root/services/populate-worker" && go run ./cmd/populate-bench -keys "${POPULATE_BENCH_KEYS:-1000000}")
fi
