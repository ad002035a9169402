#!/usr/bin/env bash
# End-to-end check of the Kubernetes path on a throwaway kind cluster:
#   kind cluster -> toolsearch image -> agentgateway (Gateway API CRDs, its CRDs and controller)
#   -> the toolsearch chart (operator + webhook) -> an MCP server and a Gateway whose pods opt in
#   -> an MCP SDK client through the injected sidecar -> `helm test` of the chart.
#
# Needs a machine with a container engine: docker (running), kind, kubectl, helm (v3.8+ or v4, for
# OCI charts), python3, curl, and network access to the registries and release pages it pulls from.
# It cannot run where there is no container engine.
#
#   e2e/kind/run.sh                   # creates the cluster, runs, deletes the cluster
#   KEEP_CLUSTER=true e2e/kind/run.sh # leaves the cluster up to look around
#
# Settings (environment): CLUSTER, KIND_NODE_IMAGE, AGENTGATEWAY_VERSION, GATEWAY_API_VERSION,
# IMAGE, LOCAL_PORT, KEEP_CLUSTER, PYTHON (an interpreter that has the `mcp` package; by default a
# virtual environment is made for the client).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CLUSTER="${CLUSTER:-toolsearch-e2e}"
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-}"
AGENTGATEWAY_VERSION="${AGENTGATEWAY_VERSION:-v1.4.1}"
GATEWAY_API_VERSION="${GATEWAY_API_VERSION:-v1.6.0}"
IMAGE="${IMAGE:-toolsearch:e2e}"
LOCAL_PORT="${LOCAL_PORT:-18090}"
KEEP_CLUSTER="${KEEP_CLUSTER:-false}"
RELEASE=toolsearch
NAMESPACE=toolsearch-system
WORK="$(mktemp -d)"
PORT_FORWARD_PID=""

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'e2e: %s\n' "$*" >&2; exit 1; }

for tool in docker kind kubectl helm python3 curl; do
  command -v "$tool" >/dev/null || fail "needs '$tool' on PATH"
done
docker info >/dev/null 2>&1 || fail "no running container engine ('docker info' failed)"

cleanup() {
  if [[ -n "$PORT_FORWARD_PID" ]]; then
    kill "$PORT_FORWARD_PID" 2>/dev/null || true
  fi
  if [[ "$KEEP_CLUSTER" != "true" ]]; then
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Waits (up to ~3 minutes) until "$@" prints something non-empty.
wait_for_output() {
  local what="$1"; shift
  for _ in $(seq 1 90); do
    [[ -n "$("$@" 2>/dev/null || true)" ]] && return 0
    sleep 2
  done
  fail "timed out waiting for $what"
}

step "1/7 kind cluster '$CLUSTER'"
kind create cluster --name "$CLUSTER" --wait 120s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
kubectl config use-context "kind-$CLUSTER"

step "2/7 toolsearch image '$IMAGE' (Dockerfile, with the embedding model)"
docker build -t "$IMAGE" "$REPO"
kind load docker-image "$IMAGE" --name "$CLUSTER"

step "3/7 agentgateway $AGENTGATEWAY_VERSION with Gateway API $GATEWAY_API_VERSION"
kubectl apply --server-side --force-conflicts \
  -f "https://github.com/kubernetes-sigs/gateway-api/releases/download/$GATEWAY_API_VERSION/standard-install.yaml"
helm upgrade -i agentgateway-crds oci://cr.agentgateway.dev/charts/agentgateway-crds \
  --version "$AGENTGATEWAY_VERSION" --namespace agentgateway-system --create-namespace --wait
helm upgrade -i agentgateway oci://cr.agentgateway.dev/charts/agentgateway \
  --version "$AGENTGATEWAY_VERSION" --namespace agentgateway-system --wait

step "4/7 toolsearch chart (operator and webhook), before any gateway pod exists"
CHART_IMAGE=(--set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}" --set image.pullPolicy=Never)
helm upgrade -i "$RELEASE" "$REPO/charts/toolsearch" --namespace "$NAMESPACE" --create-namespace \
  "${CHART_IMAGE[@]}" --wait
# The operator makes its certificate at start-up and writes the CA bundle into the webhook
# configuration; until then the API server cannot call it (and admits pods unchanged).
wait_for_output "the webhook CA bundle" kubectl get mutatingwebhookconfiguration "$RELEASE-$NAMESPACE" \
  -o jsonpath='{.webhooks[0].clientConfig.caBundle}'

step "5/7 MCP server and an agentgateway Gateway whose pods opt in"
kubectl apply -f "$HERE/manifests/namespace.yaml"
kubectl -n demo create configmap mcp-server --from-file=mcp_server.py="$HERE/mcp_server.py" \
  --dry-run=client -o yaml | kubectl apply -f -
kubectl apply -f "$HERE/manifests/mcp-server.yaml"
kubectl -n demo rollout status deployment/mcp-server --timeout=180s
kubectl apply -f "$HERE/manifests/gateway.yaml"
wait_for_output "agentgateway's controller to create the gateway Deployment" \
  kubectl -n demo get deployment agentgateway-proxy -o name
kubectl -n demo rollout status deployment/agentgateway-proxy --timeout=300s
POD="$(kubectl -n demo get pod -l gateway.networking.k8s.io/gateway-name=agentgateway-proxy \
  -o jsonpath='{.items[0].metadata.name}')"
CONTAINERS="$(kubectl -n demo get pod "$POD" -o jsonpath='{.spec.containers[*].name}')"
STATUS="$(kubectl -n demo get pod "$POD" -o jsonpath='{.metadata.annotations.toolsearch\.dev/status}')"
echo "gateway pod $POD: containers [$CONTAINERS], toolsearch.dev/status=$STATUS"
[[ " $CONTAINERS " == *" toolsearch "* && "$STATUS" == "injected" ]] \
  || fail "the gateway pod has no injected toolsearch container"

step "6/7 MCP SDK client through the sidecar"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install --quiet "mcp>=2.3,<3"
  PYTHON="$WORK/venv/bin/python"
fi
kubectl -n demo port-forward service/agentgateway-toolsearch "$LOCAL_PORT:8090" >"$WORK/port-forward.log" 2>&1 &
PORT_FORWARD_PID=$!
wait_for_output "the port-forward to the sidecar" \
  curl -fsS "http://127.0.0.1:$LOCAL_PORT/readyz"
"$PYTHON" "$HERE/client.py" "http://127.0.0.1:$LOCAL_PORT/mcp"

step "7/7 helm test (the standalone proxy's /readyz through the gateway, and the operator's /healthz)"
helm upgrade "$RELEASE" "$REPO/charts/toolsearch" --namespace "$NAMESPACE" --reuse-values \
  --set standalone.enabled=true --set standalone.replicas=1 \
  --set standalone.upstream=http://agentgateway-proxy.demo.svc.cluster.local/mcp --wait
helm test "$RELEASE" --namespace "$NAMESPACE" --logs

step "passed"
