# pg-lib.sh: what the scripts that run a private Postgres share; sourced, not run.

# pg_bin prints the path of a Postgres program: on PATH, else the newest under /usr/lib/postgresql.
pg_bin() {
	local name=$1 found
	if found=$(command -v "$name" 2>/dev/null); then echo "$found"; return; fi
	found=$(ls -d /usr/lib/postgresql/*/bin/"$name" 2>/dev/null | sort -V | tail -n 1)
	[ -n "$found" ] && echo "$found"
}

# as_owner runs a command as the cluster's owner: Postgres refuses to run as root.
as_owner() {
	if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
	runuser -u postgres -- "$@"
}
