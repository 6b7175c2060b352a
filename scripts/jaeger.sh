#!/usr/bin/env bash
# jaeger.sh: build Jaeger all-in-one, which make run starts for the services' traces.
#
#   scripts/jaeger.sh path         print where the binary is (or will be)
#   scripts/jaeger.sh build        build it now unless it is built; prints its path
#   scripts/jaeger.sh background   start that build in the background at the lowest CPU and I/O
#                                  priority and return at once (make run: Jaeger must not slow the
#                                  fleet)
#
# Jaeger is a Go program, a tool dependency of the module tools/jaeger (outside go.work, so its
# many dependencies stay out of the services'): the Go module proxy is all it needs. The binary is
# kept under .data/tools with its version in its name. A build that fails leaves its log and a
# marker (<binary>.failed) that make run reads to say it runs untraced; the next build retries.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
module="$root/tools/jaeger"
version=$(sed -n 's#^\s*github.com/jaegertracing/jaeger \(v[^ ]*\).*#\1#p' "$module/go.mod")
bin="$root/.data/tools/jaeger-$version"
log="$root/.data/logs/jaeger-build.log"

build() {
	[ -x "$bin" ] && { echo "$bin"; return; }
	mkdir -p "$(dirname "$bin")" "$(dirname "$log")"
	# One build at a time: make run's background build and a test's may start together.
	exec 9>"$bin.lock"
	flock 9
	if [ ! -x "$bin" ]; then
		rm -f "$bin.failed"
		echo "jaeger: building $version into $bin (log: $log)" >&2
		if ! (cd "$module" && GOWORK=off go build -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger) >"$log" 2>&1; then
			touch "$bin.failed"
			echo "jaeger: build failed; see $log" >&2
			return 1
		fi
		mv "$bin.tmp" "$bin"
	fi
	echo "$bin"
}

case "${1:-}" in
path) echo "$bin" ;;
build) build ;;
background)
	[ -x "$bin" ] && exit 0
	mkdir -p "$(dirname "$log")"
	rm -f "$bin.failed" # a retry: make run, starting next, must not take the last failure for this one
	# setsid: the build outlives make run if it is interrupted, and is ready for the next one;
	# nice and ionice: the fleet and its demos come first.
	io=()
	command -v ionice >/dev/null 2>&1 && io=(ionice -c3)
	setsid "${io[@]}" nice -n 19 "$0" build >/dev/null 2>&1 </dev/null &
	;;
*)
	echo "usage: scripts/jaeger.sh path|build|background" >&2
	exit 2
	;;
esac
