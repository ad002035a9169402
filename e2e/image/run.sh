#!/usr/bin/env bash
# End to end: build the image from the Dockerfile with podman and start it for real.
#
# Where the Dockerfile's base (python:3.11-slim-bookworm) cannot be pulled, a stand-in is made from
# Debian packages (mmdebstrap: bookworm minbase with python3.11 and python3.11-venv, /usr/local/bin/
# python* linked to it) and tagged as that base. Then the image is built, run read-only next to the
# demo upstream (1,500 recorded tools), and checked: /healthz, /readyz, its user, its HEALTHCHECK,
# a search and a call through the MCP SDK client, a SIGTERM while a catalog embeds (under tini, and
# with the proxy itself as PID 1), the operator's entrypoint; it prints the image size.
#
#   e2e/image/run.sh                       # needs root, podman (installed with apt-get if missing)
#   KEEP_IMAGE=false e2e/image/run.sh      # remove the image afterwards
#   PYTHON_IMAGE=registry.example/python:3.11-slim-bookworm e2e/image/run.sh
#
# Everything listens on 127.0.0.1: the containers share the host's network, so the proxy reaches
# the upstream on loopback. Uses the project's virtualenv (.venv, from `make test`) for the
# upstream and the client.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PYTHON=$ROOT/.venv/bin/python
IMAGE=${IMAGE:-localhost/toolsearch:e2e}
LEXICAL_IMAGE=$IMAGE-without-model
PYTHON_IMAGE=${PYTHON_IMAGE:-docker.io/library/python:3.11-slim-bookworm}
KEEP_IMAGE=${KEEP_IMAGE:-true}
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
WORK=$(mktemp -d /tmp/toolsearch-image.XXXXXX)
CONTAINERS=()
UPSTREAM_PID=

step() { printf '\n== %s [%d s]\n' "$*" "$SECONDS"; }
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
apt_install() { # PACKAGES...: from Debian, quietly
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # URL SECONDS: until URL answers 200
  local deadline=$((SECONDS + $2))
  until curl -sf -o /dev/null "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
logged() { # NAME PATTERN: print the container's first log line matching PATTERN; fail if there is none
  podman logs "$1" >"$WORK/$1.log" 2>&1
  grep -m1 -- "$2" "$WORK/$1.log"
}
cleanup() {
  local code=$?
  for name in "${CONTAINERS[@]}"; do podman rm -f "$name" >/dev/null 2>&1 || true; done
  if [ -n "$UPSTREAM_PID" ]; then kill "$UPSTREAM_PID" 2>/dev/null && wait "$UPSTREAM_PID" 2>/dev/null || true; fi
  [ "$KEEP_IMAGE" = true ] || podman rmi -f "$IMAGE" "$LEXICAL_IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$code"
}
trap cleanup EXIT

[ -x "$PYTHON" ] || fail "no .venv: run 'make test' (or make demo) first"
[ "$(id -u)" = 0 ] || fail "run as root (rootful podman)"

step "podman"
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  apt_install podman runc
fi
# A configuration of our own (CONTAINERS_CONF replaces the system's): runc, as crun refuses hybrid
# cgroups; cgroupfs and file events, for machines without systemd; default ulimits no higher than
# this shell's hard limits, which a container cannot exceed (nor, for processes, conmon's pid_max).
nproc=$(ulimit -Hu)
pid_max=$(cat /proc/sys/kernel/pid_max)
if [ "$nproc" = unlimited ] || ((nproc > pid_max)); then nproc=$pid_max; fi
cat >"$WORK/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$WORK/containers.conf
podman --version

step "base image $PYTHON_IMAGE"
if podman image exists "$PYTHON_IMAGE"; then
  echo "present: $(podman image inspect --format '{{index .Labels "toolsearch.stand-in"}}' "$PYTHON_IMAGE" | sed 's/^true$/a stand-in made earlier/;s/^$/pulled earlier/')"
elif timeout 60 podman pull -q "$PYTHON_IMAGE" >/dev/null 2>&1; then
  echo "pulled"
else
  echo "no registry answers: a stand-in from Debian packages (mmdebstrap)"
  command -v mmdebstrap >/dev/null || apt_install mmdebstrap
  links='for v in python3.11 python3 python; do ln -sf /usr/bin/python3.11 "$1/usr/local/bin/$v"; done'
  mmdebstrap --quiet --variant=minbase --include=python3.11,python3.11-venv,ca-certificates \
    --customize-hook="$links" bookworm "$WORK/base.tar" http://deb.debian.org/debian
  podman import --quiet --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
    --change 'LABEL toolsearch.stand-in=true' "$WORK/base.tar" "$PYTHON_IMAGE" >/dev/null
  rm -f "$WORK/base.tar"
fi

step "build $IMAGE"
options=()
# pip in the build trusts what the host trusts (Debian's pip reads this bundle); nothing stays in
# the image.
[ -f "$CA_BUNDLE" ] && options=(--volume "$CA_BUNDLE:$CA_BUNDLE:ro")
started=$SECONDS
# --format docker: the OCI format has no HEALTHCHECK. Buildah up to 1.28 at least picks the stages
# to build before it expands the ARG in `FROM runtime-with-model-${WITH_MODEL}`: build them all.
podman build --help | grep -q -- --skip-unused-stages && options+=(--skip-unused-stages=false)
build() { # TAG [options...]
  local tag=$1
  shift
  podman build --quiet --pull=never --format docker --network host "${options[@]}" \
    --build-arg PYTHON_IMAGE="$PYTHON_IMAGE" "$@" -t "$tag" . >/dev/null
}
build "$IMAGE"
echo "built in $((SECONDS - started)) s"

step "demo upstream"
UPSTREAM_PORT=$(free_port)
(cd "$ROOT" && exec "$PYTHON" -m bench.upstream_server --port "$UPSTREAM_PORT" --tools 1500) \
  >"$WORK/upstream.log" 2>&1 &
UPSTREAM_PID=$!
UPSTREAM=http://127.0.0.1:$UPSTREAM_PORT/mcp
wait_for "http://127.0.0.1:$UPSTREAM_PORT/.well-known/oauth-protected-resource" 60 ||
  fail "the upstream did not start: $(cat "$WORK/upstream.log")"
echo "$UPSTREAM (1,500 recorded tools)"

run_proxy() { # NAME PORT IMAGE [podman run options...]: the image as README runs it, on loopback
  local name=$1 port=$2 image=$3
  shift 3
  CONTAINERS+=("$name")
  # Its stderr says when it cannot schedule the HEALTHCHECK with systemd (none here): shown on failure.
  podman run -d --name "$name" --read-only --tmpfs /tmp --network host \
    -e TOOLSEARCH_UPSTREAM="$UPSTREAM" -e TOOLSEARCH_HOST=127.0.0.1 -e TOOLSEARCH_PORT="$port" \
    "$@" "$image" >/dev/null 2>"$WORK/$name.err" || fail "podman run $name: $(cat "$WORK/$name.err")"
  wait_for "http://127.0.0.1:$port/healthz" 120 || fail "$name did not start: $(podman logs "$name" 2>&1)"
}

step "serve, read-only"
PORT=$(free_port)
run_proxy toolsearch-e2e "$PORT" "$IMAGE"
echo "/healthz $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")"
wait_for "http://127.0.0.1:$PORT/readyz" 30 || fail "/readyz is not 200: $(curl -s "http://127.0.0.1:$PORT/readyz")"
echo "/readyz 200 $(curl -s "http://127.0.0.1:$PORT/readyz")"
user=$(podman exec toolsearch-e2e id -u):$(podman exec toolsearch-e2e id -g)
[ "$user" = 10001:10001 ] || fail "the proxy runs as $user, not 10001:10001"
echo "user $user; PID 1: $(podman exec toolsearch-e2e cat /proc/1/comm)"
podman exec toolsearch-e2e touch /opt/probe 2>/dev/null && fail "the root filesystem is writable"
echo "root filesystem read-only"
echo "HEALTHCHECK $(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE")"
podman healthcheck run toolsearch-e2e >/dev/null || fail "the HEALTHCHECK command failed"
echo "HEALTHCHECK passes"
logged toolsearch-e2e 'ranking: learned' || fail "the proxy does not serve hybrid search with the learned ranking"
"$PYTHON" e2e/image/client.py "http://127.0.0.1:$PORT/mcp" "list all Airtable bases"

search() { # PORT QUERY: one search_tools request, which lists the caller's catalog and starts embedding it
  curl -sf "http://127.0.0.1:$1/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search_tools\",\"arguments\":{\"query\":\"$2\"}}}"
}

stop_while_embedding() { # NAME [podman run options...]: SIGTERM with a catalog half embedded
  local name=$1 port code
  shift
  port=$(free_port)
  run_proxy "$name" "$port" "$IMAGE" "$@"
  search "$port" "list open pull requests" >/dev/null
  sleep 1
  logged "$name" 'a catalog was embedded' && fail "$name: the catalog was embedded before SIGTERM"
  started=$SECONDS
  podman kill --signal TERM "$name" >/dev/null
  code=$(podman wait "$name")
  logged "$name" 'terminate called' && fail "$name aborted: $(tail -5 "$WORK/$name.log")"
  [ "$code" = 0 ] || [ "$code" = 143 ] || fail "$name exited $code after SIGTERM: $(tail -5 "$WORK/$name.log")"
  echo "$name: SIGTERM while embedding -> exit $code in $((SECONDS - started)) s"
  logged "$name" "did not stop" || true
}

step "SIGTERM while a catalog embeds"
stop_while_embedding toolsearch-e2e-tini
stop_while_embedding toolsearch-e2e-pid1 --entrypoint '["toolsearch", "serve"]'

step "built with --build-arg WITH_MODEL=false"
build "$LEXICAL_IMAGE" --build-arg WITH_MODEL=false
port=$(free_port)
run_proxy toolsearch-e2e-lexical "$port" "$LEXICAL_IMAGE"
logged toolsearch-e2e-lexical 'lexical (BM25) only' || fail "the image without models does not say it serves lexical search"
search "$port" "list all Airtable bases" | grep -q airtable_list_bases || fail "the image without models does not search"
echo "no model, no mount: serves lexical search"
if [ -f models/default/toolsearch-profile.json ]; then
  port=$(free_port)
  run_proxy toolsearch-e2e-mounted "$port" "$LEXICAL_IMAGE" --volume "$ROOT/models:/models:ro" \
    -e TOOLSEARCH_MODEL_DIR=/models/default
  logged toolsearch-e2e-mounted 'hybrid search' || fail "the mounted models are not served"
fi

step "the operator's entrypoint"
podman run --rm --read-only --tmpfs /tmp --network none --no-healthcheck --entrypoint kopf "$IMAGE" run --help | head -1
podman run --rm --read-only --tmpfs /tmp --network none --no-healthcheck --entrypoint python "$IMAGE" \
  -c 'import toolsearch_operator.handlers; print("toolsearch_operator.handlers imports")'

step "image"
for tag in "$IMAGE" "$LEXICAL_IMAGE"; do
  echo "$tag: $(($(podman image inspect --format '{{.Size}}' "$tag") / 1000000)) MB uncompressed"
done
podman run --rm --read-only --network none --no-healthcheck --entrypoint du "$IMAGE" -sm /opt/toolsearch /models |
  awk '{printf "  %s: %s MB\n", $2, $1}'
echo
echo "image end-to-end: all checks passed in $SECONDS s"
