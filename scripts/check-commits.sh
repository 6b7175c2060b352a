#!/usr/bin/env bash
# check-commits.sh: commit messages read as River's do. The subject (first line) says what changed
# in at most 72 characters; the why, the figures and the dates go in the body, after a blank line.
#
#   scripts/check-commits.sh                every commit after the baseline up to HEAD (make lint)
#   scripts/check-commits.sh --message FILE one message, as the commit-msg hook gets it
#
# The history before the baseline commit predates the rule and is left as it is. A clone without
# the baseline (a shallow one) or a branch that does not contain it is skipped with a notice.
set -euo pipefail
cd "$(dirname "$0")/.."

max=72
baseline=5f9435efc17b06c321681e373e835ec4a4b765d5
export LC_ALL=C.UTF-8 # count characters, not bytes

# problems MESSAGE: prints what is wrong with one commit message, nothing when it is fine.
problems() {
	local subject second len
	subject=$(sed -n 1p <<<"$1")
	second=$(sed -n 2p <<<"$1")
	len=${#subject}
	if [ -z "${subject//[[:space:]]/}" ]; then
		echo "an empty subject"
	elif [ "$len" -gt "$max" ]; then
		echo "a subject of $len characters (at most $max): say what changed, put the why and the figures in the body"
	fi
	if [ -n "$second" ]; then
		echo "no blank line between the subject and the body"
	fi
}

if [ "${1:-}" = --message ]; then
	# Git's comment lines (#) never reach the commit; trailing blank lines neither.
	msg=$(grep -v '^#' "$2" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}')
	out=$(problems "$msg")
	if [ -n "$out" ]; then
		echo "commit-msg: $out" >&2
		echo "commit-msg: subject: $(sed -n 1p <<<"$msg")" >&2
		echo "commit-msg: the message is kept in .git/COMMIT_EDITMSG; edit it and commit again (CONTRIBUTING.md)" >&2
		exit 1
	fi
	exit 0
fi

if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
	echo "check-commits: baseline ${baseline:0:7} not in this clone (shallow?): skipped"
	exit 0
fi
if ! git merge-base --is-ancestor "$baseline" HEAD; then
	echo "check-commits: HEAD does not contain baseline ${baseline:0:7}: skipped"
	exit 0
fi
bad=0
for c in $(git rev-list "$baseline..HEAD"); do
	out=$(problems "$(git log -1 --format=%B "$c")")
	if [ -n "$out" ]; then
		while read -r line; do
			echo "check-commits: $(git log -1 --format='%h' "$c"): $line" >&2
		done <<<"$out"
		echo "  $(git log -1 --format='%s' "$c")" >&2
		bad=$((bad + 1))
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "check-commits: $bad commit(s) after ${baseline:0:7} break the message rule (CONTRIBUTING.md);" >&2
	echo "  reword them before merging: git rebase -i ${baseline:0:7} (reword), or git commit --amend for the last" >&2
	exit 1
fi
echo "check-commits: $(git rev-list --count "$baseline..HEAD") commit(s) after ${baseline:0:7}: subjects at most $max characters"
