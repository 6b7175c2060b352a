#!/usr/bin/env bash
# run-limited-db.sh: make run ONCE=1 against a Postgres limited to 100 connections while another
# 40 are held open, as a crowded production database would be; shows the connection budget holds.
#
#   scripts/run-limited-db.sh          start the cluster, hold 40 connections, run make run ONCE=1
#
# The cluster is a private one in .data/limited-postgres (made with the machine's initdb/pg_ctl,
# like scripts/devdb.sh's), with max_connections=100 (Postgres's default) on a free port from
# 54430; it is stopped at the end and reused next time, with its database "drover" made afresh. It prints the peak number of connections
# it saw during the run. Exits with make run's status.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data="$root/.data"
cluster="$data/limited-postgres"
run="$data/limited-run"
max_connections=100
held=40

say() { printf 'run-limited-db: %s\n' "$*" >&2; }

# shellcheck source=scripts/pg-lib.sh
source "$root/scripts/pg-lib.sh"

initdb=$(pg_bin initdb) || true
pg_ctl=$(pg_bin pg_ctl) || true
psql=$(pg_bin psql) || true
if [ -z "$initdb" ] || [ -z "$pg_ctl" ] || [ -z "$psql" ]; then
	say "needs initdb, pg_ctl and psql (the distribution's postgresql package)"
	exit 1
fi

mkdir -p "$cluster" "$run"
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --home-dir "$cluster" --shell /usr/sbin/nologin postgres
	chown -R postgres: "$cluster" "$run"
fi
if [ ! -f "$cluster/PG_VERSION" ]; then
	say "creating a private cluster in .data/limited-postgres"
	as_owner "$initdb" -D "$cluster" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$data/limited-initdb.log" 2>&1 \
		|| { cat "$data/limited-initdb.log" >&2; exit 1; }
fi

holders=()
sampler=
cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null
	for pid in "${holders[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	as_owner "$pg_ctl" -D "$cluster" -m fast -w stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The first port in 54430-54529 that nothing listens on and Postgres can bind: a port nothing
# listens on may still be the local end of another program's connection (the kernel hands out
# such ephemeral ports from this range too), and then the bind fails, so the next one is tried.
port=
for p in $(seq 54430 54529); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
	say "starting it on 127.0.0.1:$p with max_connections=$max_connections"
	logged=$(wc -l <"$cluster/server.log" 2>/dev/null || echo 0)
	if as_owner "$pg_ctl" -D "$cluster" -l "$cluster/server.log" -w -t 60 start \
		-o "-p $p -k $run -c listen_addresses=127.0.0.1 -c max_connections=$max_connections" >/dev/null; then
		port=$p
		break
	fi
	this_start=$(tail -n +"$((logged + 1))" "$cluster/server.log")
	grep -q "Address already in use" <<<"$this_start" || { printf '%s\n' "$this_start" | tail -n 20 >&2; exit 1; }
	say "127.0.0.1:$p is taken; trying the next port"
done
[ -n "$port" ] || { say "no port in 54430-54529 could be bound"; exit 1; }
admin="postgres://postgres@127.0.0.1:$port/postgres"
q() { "$psql" "$admin" -XAtqc "$1"; }
# A fresh database each time: make run's demos expect one (the weights demo is rate limited
# against the chain blocks a previous run recorded).
q "DROP DATABASE IF EXISTS drover"
q "CREATE DATABASE drover"
q "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'other_app') THEN CREATE ROLE other_app LOGIN; END IF; END \$\$"

say "holding $held connections open as role other_app"
for _ in $(seq "$held"); do
	"$psql" "postgres://other_app@127.0.0.1:$port/postgres" -XAtqc "SELECT pg_sleep(86400)" >/dev/null 2>&1 &
	holders+=($!)
done
for _ in $(seq 100); do
	[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE usename = 'other_app'")" -ge "$held" ] && break
	sleep 0.1
done
say "$(q "SELECT count(*) FROM pg_stat_activity WHERE usename = 'other_app'") connections held; max_connections $(q 'SHOW max_connections')"

# The peak of client connections (every backend with a user) during the run.
(
	peak=0
	while true; do
		n=$(q "SELECT count(*) FROM pg_stat_activity WHERE usename IS NOT NULL" 2>/dev/null || echo 0)
		[ "$n" -gt "$peak" ] && peak=$n && echo "$peak" >"$run/peak"
		sleep 0.2
	done
) &
sampler=$!

status=0
DATABASE_URL="postgres://postgres@127.0.0.1:$port/drover" make -C "$root" run ONCE=1 || status=$?
kill "$sampler" 2>/dev/null || true
sampler=
say "make run ONCE=1 exited $status; peak client connections $(cat "$run/peak" 2>/dev/null || echo '?') of $max_connections (including the $held held and this script's sampler)"
exit "$status"
