#!/usr/bin/env bash
# devdb.sh: find or start the Postgres that make run and make test use.
#
#   scripts/devdb.sh url       print a server URL that answers (tests create databases there)
#   scripts/devdb.sh app-url   print the URL of the database make run uses: DATABASE_URL when it
#                              answers, else database "drover" in the private cluster (created)
#   scripts/devdb.sh stop      stop the private cluster under .data/ if it runs
#
# DATABASE_URL wins when it answers. Otherwise a private cluster lives in .data/postgres, made
# with the machine's own initdb/pg_ctl (on PATH or under /usr/lib/postgresql/*/bin), listening on
# 127.0.0.1 on a free port that is remembered and reused. Progress goes to stderr; stdout carries
# only the URL.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data="$root/.data"
cluster="$data/postgres"
migrate="$data/bin/migrate"

say() { printf 'devdb: %s\n' "$*" >&2; }

answers() { "$migrate" ping >/dev/null 2>&1; }

# shellcheck source=scripts/pg-lib.sh
source "$root/scripts/pg-lib.sh"

no_postgres() {
	cat >&2 <<-'MSG'
	devdb: no Postgres answers and none can be started here: initdb and pg_ctl were not found
	(on PATH or under /usr/lib/postgresql/*/bin). Any one of these works:
	  - install the distribution's package, e.g. sudo apt-get install postgresql
	  - run one in Docker: docker compose up -d db, then
	    export DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/postgres
	  - point DATABASE_URL at a Postgres you have (a user allowed to CREATE DATABASE)
	MSG
	exit 1
}

build_migrate() {
	mkdir -p "$data/bin"
	(cd "$root" && go build -o "$migrate" ./migrations/cmd/migrate)
}

free_port() {
	local port
	for port in $(seq 54329 54429); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
	done
	say "no free port in 54329-54429"; exit 1
}

ensure_owner() {
	[ "$(id -u)" -ne 0 ] && return
	if ! id postgres >/dev/null 2>&1; then
		say "running as root: creating system user postgres to own the private cluster"
		useradd --system --home-dir "$cluster" --shell /usr/sbin/nologin postgres
	fi
	chown -R postgres: "$cluster" "$data/run"
}

start_cluster() {
	local initdb pg_ctl port
	initdb=$(pg_bin initdb) || true
	pg_ctl=$(pg_bin pg_ctl) || true
	[ -n "$initdb" ] && [ -n "$pg_ctl" ] || no_postgres
	mkdir -p "$cluster" "$data/run"
	ensure_owner
	if [ ! -f "$cluster/PG_VERSION" ]; then
		say "creating a private Postgres cluster in .data/postgres"
		as_owner "$initdb" -D "$cluster" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$data/initdb.log" 2>&1 \
			|| { cat "$data/initdb.log" >&2; exit 1; }
	fi
	port=$(cat "$data/postgres.port" 2>/dev/null || free_port)
	echo "$port" >"$data/postgres.port"
	if ! as_owner "$pg_ctl" -D "$cluster" status >/dev/null 2>&1; then
		say "starting it on 127.0.0.1:$port (make stop-db stops it)"
		as_owner "$pg_ctl" -D "$cluster" -l "$cluster/server.log" -w -t 60 start \
			-o "-p $port -k $data/run -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=on" >&2 \
			|| { tail -n 20 "$cluster/server.log" >&2; exit 1; }
	fi
	echo "postgres://postgres@127.0.0.1:$port/postgres"
}

stop_cluster() {
	local pg_ctl
	pg_ctl=$(pg_bin pg_ctl) || true
	if [ -n "$pg_ctl" ] && [ -f "$cluster/PG_VERSION" ] && as_owner "$pg_ctl" -D "$cluster" status >/dev/null 2>&1; then
		as_owner "$pg_ctl" -D "$cluster" -m fast -w stop >&2
	else
		say "the private cluster is not running"
	fi
}

# server_url prints DATABASE_URL when it answers, else the private cluster's URL.
server_url() {
	build_migrate
	if [ -n "${DATABASE_URL:-}" ]; then
		if DATABASE_URL=$DATABASE_URL answers; then echo "$DATABASE_URL"; return; fi
		say "DATABASE_URL does not answer; using the private cluster instead"
	fi
	local url
	url=$(start_cluster)
	DATABASE_URL=$url answers || { say "the private cluster does not answer at $url"; exit 1; }
	echo "$url"
}

case "${1:-url}" in
url) server_url ;;
app-url)
	url=$(server_url)
	if [ "$url" = "${DATABASE_URL:-}" ]; then echo "$url"; exit 0; fi
	psql=$(pg_bin psql)
	as_owner "$psql" -q -h "$data/run" -p "$(cat "$data/postgres.port")" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "SELECT 'CREATE DATABASE drover' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'drover')" -o /dev/null \
		-c '\gexec' >&2 2>/dev/null || true
	as_owner "$psql" -q -h "$data/run" -p "$(cat "$data/postgres.port")" -U postgres -d postgres -Atc \
		"SELECT 1 FROM pg_database WHERE datname = 'drover'" | grep -q 1 \
		|| as_owner "$psql" -q -h "$data/run" -p "$(cat "$data/postgres.port")" -U postgres -d postgres -c "CREATE DATABASE drover" >&2
	echo "${url%/postgres}/drover"
	;;
stop) stop_cluster ;;
*) say "usage: $0 url|stop"; exit 2 ;;
esac
