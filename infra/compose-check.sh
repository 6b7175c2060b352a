#!/usr/bin/env bash
# Static checks of the deployment files; no Docker engine or cluster needed.
#
#   infra/compose-check.sh
#
# 1. docker-compose.yml is valid (`docker-compose config -q`) with the test values of
#    infra/env.example, and each variable env.example sets really is required.
# 2. No drift: every service module listed in go.work (./services/<name>) has a compose service
#    built from services/<name> (which serves River UI for its schema itself), and a Kubernetes
#    Deployment + Service
#    listed in infra/k8s/kustomization.yaml; every file kustomization lists exists and vice versa;
#    every compose build CMD is a directory (the placeholder build-worker may be missing: warning).
# 3. infra/k8s renders (`kubectl kustomize`, offline) when kubectl is installed, else every YAML
#    file parses when python3 has PyYAML; otherwise that step is skipped with a notice.
# 4. Every binary's check-config passes with the environment compose gives it and with the one
#    Kubernetes gives it (devrun/cmd/deploy-check: variables from env.example, ConfigMaps,
#    Secrets, mounted Secret files), twice: from the files read directly, and from
#    `docker-compose config`'s output and (with kubectl) `kubectl kustomize`'s rendering.
# 5. The connection budget fits a default Postgres (97 usable connections): every process opens
#    its pool and River's listener; compose's stack with a migration, and Kubernetes' rollout of
#    every Deployment with its maxSurge pods while the six migrate Jobs run (deploy-check prints
#    the sums).
#
# The compose versions it accepts: Compose v2 (the `docker compose` plugin, preferred when both
# are there, or a docker-compose 2.x binary). docker-compose.yml needs v2: its image tags use
# nested defaults (${DROVER_SCORER_TAG:-${DROVER_TAG:-latest}}), which docker-compose 1.x leaves
# unexpanded (an image `drover/scorer:$${DROVER_TAG:-latest}`), so that version cannot run the
# file. Under 1.x every check still runs, and the check fails naming the version; whatever the
# version, a variable left unexpanded in `config`'s output fails it too.
#
# Exits non-zero on any problem. Installs Debian's docker-compose (1.29, so the checks run but
# cannot pass) when no compose is there and run as root.
set -euo pipefail

cd "$(dirname "$0")/.."

problems=0
problem() { echo "compose-check: FAIL: $*" >&2; problems=$((problems + 1)); }
warn() { echo "compose-check: warning: $*" >&2; }
info() { echo "compose-check: $*"; }

k8s_dir=infra/k8s
# The test values: every variable infra/env.example sets (each one is required).
mapfile -t dummy_env < <(grep -E '^[A-Z_][A-Z0-9_]*=' infra/env.example)
required_vars=()
for kv in "${dummy_env[@]}"; do required_vars+=("${kv%%=*}"); done

# --- the compose tool ---------------------------------------------------------------------------
compose=()
if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose)
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	info "docker-compose missing: installing Debian's docker-compose package (1.29: the checks run, but only Compose v2 passes)"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
	compose=(docker-compose)
else
	echo "compose-check: no compose found. The check passes with Compose v2 only: the Docker Compose" >&2
	echo "  plugin ('docker compose', package docker-compose-plugin of Docker's apt repository) or a" >&2
	echo "  docker-compose 2.x binary. Debian's docker-compose package (1.29) runs the checks, and fails." >&2
	exit 2
fi
compose_version=$("${compose[@]}" version --short 2>/dev/null || echo unknown)
compose_version=${compose_version#v}
info "using: ${compose[*]} ($compose_version)"
if [[ $compose_version == 1.* ]]; then
	problem "${compose[*]} $compose_version cannot run docker-compose.yml: it leaves the nested defaults of the image tags" \
		"(\${DROVER_SCORER_TAG:-\${DROVER_TAG:-latest}}) unexpanded. compose-check accepts Compose v2 only" \
		"('docker compose', or docker-compose 2.x); the other checks run anyway"
fi

# An empty env file keeps a developer's .env out of the check; env -i keeps the caller's
# environment out, so results are the same on every machine.
empty_env=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$empty_env" "$work"' EXIT

run_compose() { # run_compose VAR=value... -- compose args...
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env -i PATH="$PATH" HOME="${HOME:-/tmp}" "${envs[@]}" \
		"${compose[@]}" --env-file "$empty_env" -f docker-compose.yml "$@"
}

# --- 1. compose file validity -------------------------------------------------------------------
if out=$(run_compose "${dummy_env[@]}" -- config -q 2>&1); then
	info "docker-compose.yml: valid"
else
	problem "docker-compose.yml does not validate:"$'\n'"$out"
fi

for var in "${required_vars[@]}"; do
	envs=()
	for kv in "${dummy_env[@]}"; do [ "${kv%%=*}" = "$var" ] || envs+=("$kv"); done
	if run_compose "${envs[@]}" -- config -q >/dev/null 2>&1; then
		problem "docker-compose.yml accepts an unset $var: it must stay required"
	fi
done
info "required variables enforced: ${required_vars[*]}"
# Debian's docker-compose 1.29 does not expand nested defaults (${DROVER_SCORER_TAG:-${DROVER_TAG:-latest}},
# Compose v2 does): deploy-check resolves them itself from the files, and step 4 fails on what
# config's output leaves unexpanded.

if ! compose_services=$(run_compose "${dummy_env[@]}" -- config --services 2>/dev/null); then
	# Invalid file: fall back to the keys under services: so the drift checks still say something.
	compose_services=$(awk '/^services:/ { in_s = 1; next } /^[^[:space:]#]/ { in_s = 0 }
		in_s && /^  [A-Za-z0-9_.-]+:/ { sub(/^  /, ""); sub(/:.*/, ""); print }' docker-compose.yml)
fi
has_compose_service() { grep -qx -- "$1" <<<"$compose_services"; }

for s in db migrate; do
	has_compose_service "$s" || problem "docker-compose.yml has no '$s' service"
done

# Every build CMD must be a directory of this repository.
while read -r cmd; do
	[ -n "$cmd" ] || continue
	[ -d "$cmd" ] || problem "docker-compose.yml builds CMD $cmd, which is not a directory"
done < <(sed -n 's/^[[:space:]]*CMD:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' docker-compose.yml)

# --- 2. drift between go.work, compose and Kubernetes --------------------------------------------
# ./services/<name> entries of go.work, in the block form or as single `use` lines.
services=$(sed -n 's#^[[:space:]]*\(use[[:space:]]\{1,\}\)\{0,1\}\./services/\([A-Za-z0-9_.-]\{1,\}\).*#\2#p' go.work | sort -u)
if [ -z "$services" ]; then
	problem "found no ./services/<name> module in go.work"
fi

kustomization="$k8s_dir/kustomization.yaml"
[ -f "$kustomization" ] || problem "$kustomization is missing"
listed=$(sed -n 's/^[[:space:]]*-[[:space:]]\{1,\}\([A-Za-z0-9_.-]\{1,\}\.yaml\)[[:space:]]*$/\1/p' "$kustomization" 2>/dev/null || true)

for name in $services; do
	schema=${name//-/_}
	has_compose_service "$name" || problem "go.work lists services/$name but docker-compose.yml has no '$name' service"
	grep -Eq "^[[:space:]]*CMD:[[:space:]]*\"?services/$name\"?[[:space:]]*$" docker-compose.yml ||
		problem "docker-compose.yml does not build services/$name"

	manifest="$k8s_dir/$name.yaml"
	if [ ! -f "$manifest" ]; then
		problem "go.work lists services/$name but $manifest is missing"
		continue
	fi
	for kind in Deployment Service; do
		awk -v kind="$kind" -v name="$name" '
			/^---/ { k = ""; next }
			$1 == "kind:" && $2 == kind { k = kind; next }
			k != "" && /^  name:/ && $2 == name { found = 1 }
			END { exit !found }' "$manifest" || problem "$manifest has no $kind named $name"
	done
	grep -qx "$name.yaml" <<<"$listed" || problem "$kustomization does not list $name.yaml"
done

for f in $listed; do
	[ -f "$k8s_dir/$f" ] || problem "$kustomization lists $f, which does not exist"
done
for f in "$k8s_dir"/*.yaml; do
	b=$(basename "$f")
	[ "$b" = kustomization.yaml ] && continue
	grep -qx "$b" <<<"$listed" || problem "$k8s_dir/$b is not listed in $kustomization"
done
for f in namespace.yaml secret.yaml configmap.yaml migrate-jobs.yaml build-worker.yaml; do
	grep -qx "$f" <<<"$listed" || problem "$kustomization does not list $f"
done
info "go.work services checked against compose and $k8s_dir: $(echo $services)"

# --- 3. Kubernetes manifests parse -------------------------------------------------------------
rendered=""
if command -v kubectl >/dev/null 2>&1; then
	if out=$(kubectl kustomize "$k8s_dir" 2>&1 >"$work/k8s.yaml"); then
		info "$k8s_dir: renders with kubectl kustomize"
		rendered="$work/k8s.yaml"
	else
		problem "kubectl kustomize $k8s_dir failed:"$'\n'"$out"
	fi
elif command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' >/dev/null 2>&1; then
	if out=$(python3 - "$k8s_dir"/*.yaml <<'PY' 2>&1
import sys, yaml
for path in sys.argv[1:]:
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
            raise SystemExit(f"{path}: a document without kind/apiVersion")
PY
	); then
		info "$k8s_dir: every YAML file parses (python3 yaml; kubectl not installed)"
	else
		problem "$k8s_dir YAML:"$'\n'"$out"
	fi
else
	warn "neither kubectl nor python3 PyYAML found: $k8s_dir not parsed (apt-get install python3-yaml)"
fi

# --- 4. every binary's check-config with compose's and Kubernetes' environment -------------------
mkdir -p "$work/bin"
if out=$(go build -o "$work/bin/" ./migrations/cmd/migrate ./services/miner-sync ./services/batch-runner \
	./services/scorer ./services/build-scheduler ./services/build-scheduler/cmd/build-worker \
	./services/populate-worker ./devrun/cmd/deploy-check 2>&1); then
	if "$work/bin/deploy-check" -bin "$work/bin"; then
		info "check-config passes for every workload of docker-compose.yml and $k8s_dir (files)"
	else
		problem "check-config failed with docker-compose.yml's or $k8s_dir's environment (above)"
	fi
	# The same with the tools' own resolution: docker-compose config's output (env.example's values,
	# the wallet folder a test wallet) and kubectl kustomize's rendering.
	"$work/bin/deploy-check" -test-wallet "$work/wallets"
	if run_compose "${dummy_env[@]}" DROVER_WALLET_DIR="$work/wallets" -- config >"$work/compose.yml" 2>"$work/compose.err"; then
		# config's output has every variable expanded (a literal $ would be written $$, and the
		# file has none); one left over is a value the stack would start with as written.
		if left=$(grep -n '\${' "$work/compose.yml"); then
			problem "docker-compose config's output leaves variables unexpanded (${compose[*]} $compose_version):"$'\n'"$left"
		fi
		args=(-compose-rendered "$work/compose.yml")
		[ -z "$rendered" ] || args+=(-k8s-rendered "$rendered")
		if "$work/bin/deploy-check" -bin "$work/bin" "${args[@]}"; then
			info "check-config passes for every workload of docker-compose config's output${rendered:+ and the kubectl kustomize rendering}"
		else
			problem "check-config failed with docker-compose config's or kubectl kustomize's environment (above)"
		fi
	else
		problem "docker-compose config failed:"$'\n'"$(cat "$work/compose.err")"
	fi
else
	problem "go build of the deployed binaries failed:"$'\n'"$out"
fi

if [ "$problems" -gt 0 ]; then
	echo "compose-check: $problems problem(s)" >&2
	exit 1
fi
info "all checks passed"
