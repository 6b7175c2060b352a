#!/usr/bin/env bash
# docs-check.sh: runs the commands the docs mark as runnable, so that every one of them keeps
# working as written. make docs-check runs it, and CI after make test.
#
# First every module of a fresh clone must be tidy and build alone (scripts/check-modules.sh).
# Then a fenced block whose info string carries the word docs-check is run as written, as one
# bash script (set -euo pipefail), against a fresh make run fleet: every service, the simulated
# miners and the build worker on their usual ports, with the demos done, on a database of its
# own, and with .data/bin built. A block runs from the repository root (docs-check-in=DIR: from
# DIR), seen through a scratch folder of links, so the files it writes stay out of the tree. A
# block that needs what this machine does not give (Docker, a Kubernetes cluster, a real chain)
# is marked docs-check-skip=<what> and is listed as skipped, by name. A block that starts services
# of its own on make run's ports (docs-check-alone) runs first, before the fleet, on a fresh
# migrated-or-not database of its own named by DATABASE_URL, in a session of its own whose
# processes are stopped when the block ends:
#
#   ```sh docs-check              ```sh docs-check-skip=docker      ```sh docs-check-alone
#   .data/bin/drover status       docker compose up -d              .data/bin/scorer &
#   ```                           ```                               ```
#
# It fails when a block exits non-zero, naming the file and line where the block starts, with
# what the block printed. The fleet and the database go when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

files=(README.md services/*/README.md clients/*/README.md infra/README.md docs/*.md CONTRIBUTING.md)
work=$(mktemp -d)
fleet_pid=""
db=""
server=""

cleanup() {
	if [ -n "$fleet_pid" ] && kill -0 "$fleet_pid" 2>/dev/null; then
		kill -INT "$fleet_pid" 2>/dev/null || true
		wait "$fleet_pid" 2>/dev/null || true
	fi
	if [ -n "$db" ]; then
		psql "$server" -qXc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# blocks writes each marked block of the docs to $work/blocks/N and a line "N<TAB>file:line<TAB>
# skip<TAB>dir<TAB>fleet|alone" to $work/index, skip being "-" for a block to run (read splits on
# runs of tabs, so no field may be empty).
blocks() {
	mkdir -p "$work/blocks"
	awk -v dir="$work/blocks" '
		FNR == 1 { inblock = 0 }
		!inblock && /^```[a-z]* .*docs-check/ {
			n++; inblock = 1; skip = "-"; in_dir = "."; alone = "fleet"
			if ($0 ~ /docs-check-alone/) alone = "alone"
			if (match($0, /docs-check-skip=[^ ]+/)) skip = substr($0, RSTART + 16, RLENGTH - 16)
			if (match($0, /docs-check-in=[^ ]+/)) in_dir = substr($0, RSTART + 14, RLENGTH - 14)
			printf "%d\t%s:%d\t%s\t%s\t%s\n", n, FILENAME, FNR, skip, in_dir, alone
			out = dir "/" n
			printf "" > out
			next
		}
		inblock && /^```/ { inblock = 0; close(out); next }
		inblock { print > out }
	' "${files[@]}" >"$work/index"
}

# start_fleet runs make run's fleet (devrun) on a fresh database until the demos are done.
start_fleet() {
	db="drover_docs_check_$$"
	psql "$server" -qXc "CREATE DATABASE $db" >/dev/null
	local url
	url=$(db_url "$db")
	echo "docs-check: make run's fleet on database $db (log $work/fleet.log)"
	.data/bin/devrun -bin .data/bin -database-url "$url" >"$work/fleet.log" 2>&1 &
	fleet_pid=$!
	for _ in $(seq 1 600); do
		if grep -q "serving until Ctrl-C" "$work/fleet.log"; then
			return 0
		fi
		if ! kill -0 "$fleet_pid" 2>/dev/null; then
			break
		fi
		sleep 0.5
	done
	echo "docs-check: make run's fleet did not come up; its output:"
	cat "$work/fleet.log"
	return 1
}

# scratch is the repository seen through links, where the blocks run.
scratch() {
	mkdir -p "$work/root"
	for entry in "$root"/* "$root/.data"; do
		ln -s "$entry" "$work/root/"
	done
}

scripts/check-modules.sh
make --no-print-directory build
scratch
blocks
if [ ! -s "$work/index" ]; then
	echo "docs-check: no block of ${files[*]} is marked docs-check"
	exit 1
fi
server=$(scripts/devdb.sh url)

passed=0 failed=0 skipped=0

# run_block runs block n (from where, in dir) and counts it.
run_block() {
	local n=$1 where=$2 dir=$3
	if (cd "$work/root/$dir" && timeout 300 bash -euo pipefail "$work/blocks/$n") >"$work/out.$n" 2>&1; then
		echo "ok    $where"
		passed=$((passed + 1))
		return
	fi
	echo "FAIL  $where:"
	sed 's/^/      /' "$work/blocks/$n"
	echo "    printed:"
	sed 's/^/      /' "$work/out.$n" | tail -n 30
	failed=$((failed + 1))
}

# run_alone runs block n in a session of its own on a fresh database, then stops what it left
# running (the services it started in the background) and drops the database.
run_alone() {
	local n=$1 where=$2 dir=$3 alone_db="drover_docs_alone_$$_$1"
	psql "$server" -qXc "CREATE DATABASE $alone_db" >/dev/null
	DATABASE_URL=$(db_url "$alone_db") setsid bash -c "$(declare -f run_block); work=$work; passed=0; failed=0; run_block $n $where $dir; exit \$failed" &
	local pid=$!
	local status=0
	wait "$pid" || status=$?
	# By session: timeout gives the block a process group of its own, but not a session.
	pkill -TERM -s "$pid" 2>/dev/null || true
	sleep 1
	pkill -KILL -s "$pid" 2>/dev/null || true
	psql "$server" -qXc "DROP DATABASE IF EXISTS $alone_db WITH (FORCE)" >/dev/null 2>&1 || true
	if [ "$status" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# db_url is server's URL with database name $1.
db_url() { printf '%s' "$server" | sed -E "s#^([a-z]+://[^/]*)/[^?]*#\\1/$1#"; }

for phase in alone fleet; do
	[ "$phase" = fleet ] && start_fleet
	while IFS=$'\t' read -r n where skip in_dir mode; do
		[ "$mode" = "$phase" ] || continue
		if [ "$skip" != "-" ]; then
			echo "skip  $where (needs $skip)"
			skipped=$((skipped + 1))
		elif [ "$mode" = alone ]; then
			run_alone "$n" "$where" "$in_dir"
		else
			run_block "$n" "$where" "$in_dir"
		fi
	done <"$work/index"
done

echo "docs-check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
