#!/usr/bin/env bash
# check-docs.sh: fails when a comment, README or other text outside docs/ cites a document that is
# not in this repository (a design brief, a notes folder beside the checkout, an absolute path on
# someone's machine). The repository must stand on its own: name the idea ("the dependency
# counter", "the readiness query") and, where it needs explaining, explain it under docs/.
# make lint runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each pattern is an extended regular expression, matched case-insensitively.
patterns=(
	# the notes folder beside a checkout, and absolute paths on a development machine
	'\.\./(\.\./)*shared/(seeds|reference|DESIGN|STYLE)'
	'(^|[^[:alnum:]_.])/wor[k]/'
	# the brief a feature started from, its numbered alternatives and its files
	"\\bthe seed's\\b|\\b(per|as) the seed\\b|\\bthe seed (asks|says|lays|wants|requires)"
	'\bseed option\b|\(seed:|\boption [0-9]\b'
	'\b(seeds|reference)/[a-z0-9_-]+\.md\b|\b(DESIGN|STYLE)\.md\b|river-notes|-lessons\.md'
	'\bdesign notes\b|\bthe reference implementation\b|\bthe reference'"'"'s\b|\bour river notes\b'
)
regex=$(
	IFS='|'
	echo "${patterns[*]}"
)

# Text files people read: Go (comments and strings alike), SQL, Markdown, shell, YAML, JSON,
# Makefile, Dockerfile. docs/ may quote history; this script names the patterns it forbids.
pathspecs=(
	'*.go' '*.sql' '*.md' '*.sh' '*.yml' '*.yaml' '*.json' 'Makefile' '*Dockerfile*'
	':!docs/' ':!scripts/check-docs.sh'
)

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	found=$(git grep --untracked -n -I -i -E "$regex" -- "${pathspecs[@]}" || true)
else
	found=$(grep -rnIiE "$regex" --include='*.go' --include='*.sql' --include='*.md' --include='*.sh' \
		--include='*.yml' --include='*.yaml' --include='*.json' --include=Makefile --include='*Dockerfile*' \
		--exclude-dir=docs --exclude-dir=.git --exclude-dir=.data --exclude=check-docs.sh . || true)
fi

if [ -n "$found" ]; then
	echo "$found"
	echo "check-docs: the lines above cite documents outside this repository; name the idea instead (see docs/)"
	exit 1
fi
