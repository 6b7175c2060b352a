#!/usr/bin/env bash
# docs-check.sh: runs the commands the docs give, so that every one of them keeps working as
# written. make docs-check runs it, and CI after make test.
#
# First every module of a fresh checkout of HEAD must be tidy and build alone
# (scripts/check-modules.sh in a worktree of its own). Then every fenced sh, bash or shell block of
# every tracked Markdown file must carry one of these tags in its info string, and runs as it says,
# as one bash script (set -euo pipefail):
#
#   ```sh docs-check              against make run's fleet: every service, the simulated miners
#                                 and the build worker on their usual ports, with the demos done,
#                                 on a fresh database
#   ```sh docs-check-alone[=G]    before the fleet, on make run's free ports, with DATABASE_URL
#                                 naming a fresh database, in a session of its own that is stopped
#                                 when the block ends; consecutive blocks of one group G share the
#                                 session and the database (servers one starts, the next uses)
#   ```sh docs-check-skip=R       not run, for a reason R of docker, kubernetes, chain (a real
#                                 subtensor node), make-bench (minutes of both cores) or ci (make
#                                 run and make test themselves: CI runs make test, and this
#                                 script make run's fleet)
#
# A block runs from the repository's root (docs-check-in=DIR: from DIR), seen through a scratch
# folder of links so that the files it writes stay out of the tree, in an environment with none
# of the caller's Drover settings (no DROVER_*, no config file, no DATABASE_URL but the one it is
# given). It fails when a block exits non-zero or an untagged block is found, naming the file and
# line, with what the block printed. What it started goes when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=scripts/pg-lib.sh
source "$root/scripts/pg-lib.sh"

work=$(mktemp -d)
fleet_pid=""
session=""
fleet_db=""
server=""
psql_bin=""

cleanup() {
	if [ -n "$session" ]; then
		pkill -KILL -s "$session" 2>/dev/null || true
	fi
	if [ -n "$fleet_pid" ] && kill -0 "$fleet_pid" 2>/dev/null; then
		kill -INT "$fleet_pid" 2>/dev/null || true
		wait "$fleet_pid" 2>/dev/null || true
	fi
	if [ -n "$fleet_db" ]; then
		"$psql_bin" "$server" -qXc "DROP DATABASE IF EXISTS $fleet_db WITH (FORCE)" >/dev/null 2>&1 || true
	fi
	git -C "$root" worktree remove --force "$work/clone" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# preflight names every tool the blocks and this script need that is missing.
preflight() {
	local missing=()
	psql_bin=$(pg_bin psql 2>/dev/null || command -v psql || true)
	[ -n "$psql_bin" ] || missing+=("psql (Debian: postgresql-client)")
	for tool in curl jq dot pkill setsid timeout git; do
		command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "docs-check: missing ${missing[*]} (.ci/run installs them)"
		exit 1
	fi
}

# fresh_modules checks the modules of a fresh checkout of HEAD: a file left untracked or edited in
# the working tree cannot hide a go.mod that lacks a requirement.
fresh_modules() {
	git worktree add --detach --quiet "$work/clone" HEAD
	(cd "$work/clone" && scripts/check-modules.sh)
}

# ports_free fails naming make run's fixed ports that something already holds: a block would talk
# to that process instead of its own.
ports_free() {
	local held=()
	for port in 8081 8082 8083 8084 8085 8086 8089 8090 8094 4318 16685 16686; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			held+=("$port")
		fi
	done
	if [ ${#held[@]} -gt 0 ]; then
		echo "docs-check: ports ${held[*]} are taken (make run? ss -ltnp shows by whom); stop it and run again"
		exit 1
	fi
}

# blocks writes each fenced shell block of the tracked Markdown files to $work/blocks/N and a line
# "N<TAB>file:line<TAB>mode<TAB>arg<TAB>dir" to $work/index: mode is fleet, alone, skip or untagged,
# arg the group or the reason ("-" when none: read splits on runs of tabs, so no field is empty).
blocks() {
	mkdir -p "$work/blocks"
	git ls-files -z '*.md' | xargs -0 awk -v dir="$work/blocks" '
		FNR == 1 { inblock = 0 }
		!inblock && /^```(sh|bash|shell)( |$)/ {
			n++; inblock = 1; mode = "untagged"; arg = "-"; in_dir = "."
			if ($0 ~ / docs-check( |$)/) mode = "fleet"
			if (match($0, /docs-check-alone(=[^ ]+)?/)) {
				mode = "alone"; arg = substr($0, RSTART + 16, RLENGTH - 16); sub(/^=/, "", arg)
				if (arg == "") arg = "block" n
			}
			if (match($0, /docs-check-skip=[^ ]+/)) { mode = "skip"; arg = substr($0, RSTART + 16, RLENGTH - 16) }
			if (match($0, /docs-check-in=[^ ]+/)) in_dir = substr($0, RSTART + 14, RLENGTH - 14)
			printf "%d\t%s:%d\t%s\t%s\t%s\n", n, FILENAME, FNR, mode, arg, in_dir
			out = dir "/" n
			printf "" > out
			next
		}
		!inblock && /^```/ { inblock = 2; next }
		inblock == 2 && /^```/ { inblock = 0; next }
		inblock == 1 && /^```/ { inblock = 0; close(out); next }
		inblock == 1 { print > out }
	' >"$work/index"
}

# scratch is the repository seen through links, where the blocks run.
scratch() {
	mkdir -p "$work/root" "$work/xdg"
	# A block may run a program as another user (run-limited-db.sh's Postgres) that must reach
	# the tree through these links.
	chmod 755 "$work" "$work/root"
	for entry in "$root"/* "$root/.data"; do
		ln -s "$entry" "$work/root/"
	done
}

# db_url is server's URL with database name $1.
db_url() { printf '%s' "$server" | sed -E "s#^([a-z]+://[^/?]*)(/[^?]*)?#\\1/$1#"; }

# block_env is the environment a block runs in: the machine's basics and Go's settings, none of
# the caller's Drover settings, and no config file for drover.
block_env=()
make_block_env() {
	block_env=(env -i "PATH=$PATH" "HOME=$HOME" "TMPDIR=${TMPDIR:-/tmp}" "LANG=${LANG:-C.UTF-8}" "XDG_CONFIG_HOME=$work/xdg")
	for v in GOPATH GOCACHE GOMODCACHE GOFLAGS GOPROXY GOTOOLCHAIN; do
		if [ -n "${!v:-}" ]; then block_env+=("$v=${!v}"); fi
	done
}

passed=0 failed=0 skipped=0

# run_block runs block n (found at where) from dir with the extra environment in $@ and counts it.
run_block() {
	local n=$1 where=$2 dir=$3
	shift 3
	# stdin is not the caller's: the loops over $work/index read it.
	if (cd "$work/root/$dir" && timeout 300 "${block_env[@]}" "$@" bash -euo pipefail "$work/blocks/$n") </dev/null >"$work/out.$n" 2>&1; then
		echo "ok    $where"
		passed=$((passed + 1))
		return 0
	fi
	echo "FAIL  $where:"
	sed 's/^/      /' "$work/blocks/$n"
	echo "    printed:"
	sed 's/^/      /' "$work/out.$n" | tail -n 30
	failed=$((failed + 1))
	return 1
}

# run_group runs the alone blocks of one group, listed in $work/group, in a session of their own
# on a fresh database, then stops what they left running and drops the database.
run_group() {
	local name=$1 db="drover_docs_alone_$$_$1"
	"$psql_bin" "$server" -qXc "CREATE DATABASE $db" >/dev/null
	local url
	url=$(db_url "$db")
	(
		# The session's leader runs the blocks, so every process they start is in it.
		exec setsid bash -c '
			set -u
			while IFS=$'"'"'\t'"'"' read -r n where dir; do
				if ! (cd "'"$work"'/root/$dir" && timeout 300 "$@" bash -euo pipefail "'"$work"'/blocks/$n") </dev/null >"'"$work"'/out.$n" 2>&1; then
					echo "$n" >"'"$work"'/failed.'"$name"'"
					exit 1
				fi
				echo "$n" >>"'"$work"'/passed.'"$name"'"
			done <"'"$work"'/group"
		' group "${block_env[@]}" "DATABASE_URL=$url"
	) </dev/null &
	session=$!
	wait "$session" || true
	pkill -TERM -s "$session" 2>/dev/null || true
	sleep 1
	pkill -KILL -s "$session" 2>/dev/null || true
	session=""
	"$psql_bin" "$server" -qXc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	local n where rest # not the caller's: bash's locals are dynamically scoped
	while IFS=$'\t' read -r n where rest; do
		if grep -qx "$n" "$work/passed.$name" 2>/dev/null; then
			echo "ok    $where"
			passed=$((passed + 1))
		elif grep -qx "$n" "$work/failed.$name" 2>/dev/null; then
			echo "FAIL  $where:"
			sed 's/^/      /' "$work/blocks/$n"
			echo "    printed:"
			sed 's/^/      /' "$work/out.$n" | tail -n 30
			failed=$((failed + 1))
		else
			echo "FAIL  $where: not run, an earlier block of its group failed"
			failed=$((failed + 1))
		fi
	done <"$work/group"
}

# alone_phase runs the alone blocks, a group at a time, in the order they stand in the docs.
alone_phase() {
	local current="" n where mode arg dir
	: >"$work/group"
	while IFS=$'\t' read -r n where mode arg dir; do
		[ "$mode" = alone ] || continue
		if [ -n "$current" ] && [ "$arg" != "$current" ]; then
			run_group "$current"
			: >"$work/group"
		fi
		current=$arg
		printf '%s\t%s\t%s\n' "$n" "$where" "$dir" >>"$work/group"
	done <"$work/index"
	if [ -n "$current" ]; then run_group "$current"; fi
}

# start_fleet runs make run's fleet (devrun) on a fresh database until the demos are done, and
# fails when a demo did.
start_fleet() {
	fleet_db="drover_docs_check_$$"
	"$psql_bin" "$server" -qXc "CREATE DATABASE $fleet_db" >/dev/null
	echo "docs-check: make run's fleet on database $fleet_db (output in $work/fleet.log)"
	: >"$work/fleet.log"
	"${block_env[@]}" .data/bin/devrun -bin .data/bin -logs "$work/logs" -database-url "$(db_url "$fleet_db")" \
		-jaeger "$(scripts/jaeger.sh build)" >"$work/fleet.log" 2>&1 &
	fleet_pid=$!
	for _ in $(seq 1 600); do
		if grep -q "serving until Ctrl-C" "$work/fleet.log"; then
			if grep -q " ERR " "$work/fleet.log"; then
				echo "docs-check: make run's demos failed:"
				grep " ERR " "$work/fleet.log"
				return 1
			fi
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

preflight
fresh_modules
make --no-print-directory build
scratch
blocks
make_block_env
server=$(scripts/devdb.sh url)

untagged=0
while IFS=$'\t' read -r n where mode arg _; do
	case "$mode" in
	untagged)
		echo "FAIL  $where: a shell block with no docs-check tag (docs-check, docs-check-alone or docs-check-skip=docker|kubernetes|chain|make-bench|ci)"
		untagged=$((untagged + 1))
		;;
	skip)
		case "$arg" in
		docker | kubernetes | chain | make-bench | ci) ;;
		*)
			echo "FAIL  $where: docs-check-skip=$arg: a block may be skipped only for docker, kubernetes, chain, make-bench or ci"
			untagged=$((untagged + 1))
			;;
		esac
		;;
	esac
done <"$work/index"
failed=$untagged

ports_free
alone_phase
start_fleet
while IFS=$'\t' read -r n where mode arg dir; do
	case "$mode" in
	fleet) run_block "$n" "$where" "$dir" || true ;;
	skip)
		echo "skip  $where (needs $arg)"
		skipped=$((skipped + 1))
		;;
	esac
done <"$work/index"

echo "docs-check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
