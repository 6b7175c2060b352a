#!/usr/bin/env bash
# gotest.sh: go test with its arguments, its output as go prints it, and, when a test fails, the
# failures again at the end: each failing test's header and the last lines it logged (where its
# failure message is), and any panic. A long suite's failure then is the last thing it prints,
# not somewhere among hundreds of package lines. The whole output is kept in .data/logs/test.log.
#
#   scripts/gotest.sh -race -count=1 work
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
log="$root/.data/logs/test.log"
mkdir -p "$(dirname "$log")"

go test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && exit 0

echo
echo "==> failures (the whole output: $log)"
# A failing test's block runs from its "--- FAIL:" line to the next line go itself writes; its
# last lines hold the failure (testify's Error Trace … Messages, or a t.Fatal's line). mawk and
# gawk alike.
awk -v keep=30 '
	function flush(   i, from) {
		if (head == "") return
		print head
		from = n > keep ? n - keep : 0
		if (from > 0) print "        [… " from " earlier lines]"
		for (i = from; i < n; i++) print lines[i % keep]
		head = ""; n = 0
	}
	/^ *--- FAIL: / {
		# A parent whose subtest failed: its header says which, the lines of the subtest say why.
		if (head != "" && match($0, /^ */) && RLENGTH > indent) { print head; head = ""; n = 0 }
		flush(); head = $0; match($0, /^ */); indent = RLENGTH; next
	}
	/^(=== |ok  |FAIL|PASS|\?   )|^ *--- (PASS|SKIP): / { flush(); next }
	/^panic: / { flush(); panicking = 15 }
	panicking > 0 { print; panicking--; next }
	head != "" { lines[n % keep] = $0; n++ }
	END { flush() }
' "$log"
exit "$status"
