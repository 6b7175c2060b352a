#!/usr/bin/env bash
# check-test-clock.sh: fails when a test bounds elapsed wall-clock time from above. Such a bound
# fails on a loaded machine and gets retuned rather than fixed. A test asserts order and events
# instead: inject a clock where time matters (a Now func() time.Time field, nil meaning
# time.Now, stubbed in the test), read the error or event that proves a timeout fired, compare
# instants with each other (the database's clock before and after a statement, a stamp against
# the moment a read began). Lower bounds ("waited at least the wait") are fine, and so is a
# generous deadline on a wait (require.Eventually, a select on time.After) that only guards
# against a hang. A line that must stay can end with "// test-clock: <why>". make lint runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Upper bounds on elapsed time, in the forms the repository has used:
#   require.Less(t, time.Since(start), d)           require.Greater(t, d, time.Since(start))
#   if time.Since(start) > d { t.Fatal(...) }        time.Until(deadline) < d
#   require.Less(t, elapsed, d)                      require.Less(t, last.Sub(first), d)
#   require.WithinDuration(t, time.Now(), at, d)     require.Less(t, age_seconds gauge, 60.0)
#   require.Less(t, rtt, 500*time.Millisecond)      require.Less(t, sent, first+(2*at).Nanoseconds())
patterns=(
	'(Less|LessOrEqual)f?\([^,]+, *time\.(Since|Until)\('
	'(Greater|GreaterOrEqual)f?\([^,]+, *[^,]+, *time\.(Since|Until)\('
	'time\.(Since|Until)\([^()]*\)(\.[A-Za-z]+\(\))? *[<>]'
	'(Less|LessOrEqual)f?\([^,]+, *[*A-Za-z_.]*([Ee]lapsed|[Tt]ook|[Ll]atency|[Ss]pread|[Ll]ag|[Ww]aited)[A-Za-z_]*(\.[A-Za-z]+\(\))?, '
	'(Less|LessOrEqual)f?\([^,]+, *[^,]+, *[^,]*(time\.(Nanosecond|Microsecond|Millisecond|Second|Minute|Hour)\b|\.(Nanoseconds|Microseconds|Milliseconds|Seconds)\(\))'
	'([Ee]lapsed|[Tt]ook|[Ll]atency)[A-Za-z_]*(\.[A-Za-z]+\(\))? *<'
	'(Less|LessOrEqual)f?\([^,]+, *[A-Za-z_.]+\.Sub\('
	'WithinDuration\([^,]+, *([^,]*time\.Now\(\)|[A-Za-z_]+\.Add\()'
	'(Less|LessOrEqual)f?\(.*_age_seconds'
)
args=()
for p in "${patterns[@]}"; do
	args+=(-e "$p")
done

if git grep -nE "${args[@]}" -- '*_test.go' ':(glob)**/*test/*.go' | grep -v '// test-clock: '; then
	echo "check-test-clock: the lines above bound elapsed wall-clock time in a test; assert order and events instead (see scripts/check-test-clock.sh)"
	exit 1
fi
