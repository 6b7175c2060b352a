#!/usr/bin/env bash
# check-modules.sh: fails when a module's go.mod or go.sum is not tidy, or when a module does not
# build on its own. The workspace (go.work) hides both: go build and go test at the root resolve
# every module's dependencies together, so a go.mod that lacks a requirement still builds there,
# while `cd devrun && GOWORK=off go build ./...` (how a module is built outside the workspace, and
# what README promises works in any module) stops with "updates to go.mod needed". Every module
# of go.work is checked, and infra and tools/jaeger, which stay outside the workspace. make lint
# runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\.\/\(.*\)".*/\1/p')
modules+=(infra tools/jaeger)

failed=()
for m in "${modules[@]}"; do
	echo "modules $m"
	if ! (cd "$m" && GOWORK=off go mod tidy -diff); then
		echo "check-modules: $m: go.mod or go.sum is not tidy; run: cd $m && GOWORK=off go mod tidy"
		failed+=("$m")
		continue
	fi
	if ! (cd "$m" && GOWORK=off go build ./...); then
		echo "check-modules: $m does not build outside the workspace (GOWORK=off go build ./...)"
		failed+=("$m")
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "check-modules: ${failed[*]}"
	exit 1
fi
