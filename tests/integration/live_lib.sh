# shellcheck shell=bash
# live_lib.sh: helpers for the churn and failure-mode integration tests (sourced after lib.sh).
#
# A test that must see every request the scheduler sends, or must cut the scheduler off from
# the control plane, runs its own kube-apiserver ("side apiserver") on the shared etcd: the
# scheduler talks only to it, and it writes an audit log of the scheduler's pod and lease
# requests (binds with their target node). The shared apiserver keeps serving kubectl and the
# simulated kubelet, and other tests are not touched.
#
#   source "$(dirname "$0")/lib.sh"; source "$(dirname "$0")/live_lib.sh"
#   it_begin churn
#   side_apiserver_start            # sets SIDE_URL, SIDE_KUBECONFIG (scheduler), SIDE_ADMIN, SIDE_AUDIT
#   it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false
#   live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" --settle 60
#   side_apiserver_stop; side_apiserver_start   # same port, same audit log: a restart

LIVE_CHECK="$TESSEL_ROOT/tests/integration/live_check.py"
SIDE_PID=
SIDE_PORT=

live_check() { python3 "$LIVE_CHECK" --kubeconfig "$KUBECONFIG" "$@"; }
live_check_as() { local kc=$1; shift; python3 "$LIVE_CHECK" --kubeconfig "$kc" "$@"; }

# The shared cluster's settings (BIN_DIR, ETCD_CLIENT_PORT, ...).
if [[ -f $TESSEL_CLUSTER_DIR/cluster.env ]]; then
  # shellcheck disable=SC1091
  source "$TESSEL_CLUSTER_DIR/cluster.env"
fi

side_ready() {
  curl -fsS --cacert "$TESSEL_CLUSTER_DIR/pki/ca.crt" \
    -H "Authorization: Bearer $(cat "$TESSEL_CLUSTER_DIR/admin.token")" "$SIDE_URL/readyz"
}

# side_apiserver_start [EXTRA FLAGS...]: starts (or restarts on the same port) the side apiserver.
side_apiserver_start() {
  local dir="$IT_WORK/side"
  mkdir -p "$dir"
  if [[ -z $SIDE_PORT ]]; then
    SIDE_PORT=$(free_port)
    SIDE_URL="https://127.0.0.1:$SIDE_PORT"
    SIDE_AUDIT="$dir/audit.log"
    SIDE_KUBECONFIG="$dir/scheduler.kubeconfig"
    SIDE_ADMIN="$dir/admin.kubeconfig"
    sed "s#server: .*#server: $SIDE_URL#" "$TESSEL_CLUSTER_DIR/scheduler.kubeconfig" >"$SIDE_KUBECONFIG"
    sed "s#server: .*#server: $SIDE_URL#" "$TESSEL_CLUSTER_DIR/admin.kubeconfig" >"$SIDE_ADMIN"
    chmod 600 "$SIDE_KUBECONFIG" "$SIDE_ADMIN"
    # Binds at RequestResponse level (the Binding names the target node; only the response
    # object carries a refusal's message: below that level the audit keeps the code and reason);
    # the scheduler's other pod and lease requests, and node deletions, at Metadata level.
    cat >"$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  users: ["system:serviceaccount:kube-system:tessel-scheduler"]
  verbs: [create]
  resources: [{group: "", resources: [pods/binding]}]
- level: Metadata
  users: ["system:serviceaccount:kube-system:tessel-scheduler"]
  resources: [{group: "", resources: [pods, pods/status, pods/binding]}, {group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  verbs: [delete]
  resources: [{group: "", resources: [nodes]}]
- level: None
EOF
  fi
  local pki="$TESSEL_CLUSTER_DIR/pki"
  "$BIN_DIR/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$SIDE_PORT" \
    --cert-dir="$dir" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --token-auth-file="$TESSEL_CLUSTER_DIR/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --disable-admission-plugins=ServiceAccount \
    --audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$SIDE_AUDIT" \
    --audit-log-maxsize=0 \
    "$@" >>"$IT_WORK/side-apiserver.log" 2>&1 &
  SIDE_PID=$!
  IT_PIDS+=("$SIDE_PID")
  local deadline=$((SECONDS + 90))
  until side_ready >/dev/null 2>&1; do
    kill -0 "$SIDE_PID" 2>/dev/null || fail "side apiserver exited: $(tail -n 20 "$IT_WORK/side-apiserver.log")"
    ((SECONDS < deadline)) || fail "side apiserver not ready after 90 s"
    sleep 0.2
  done
  say "side apiserver ready on $SIDE_URL"
}

# side_apiserver_stop: SIGTERM, then SIGKILL after 10 s; the scheduler's connections drop.
side_apiserver_stop() {
  [[ -n $SIDE_PID ]] || return 0
  kill -TERM "$SIDE_PID" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do kill -0 "$SIDE_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SIDE_PID" 2>/dev/null || true
  wait "$SIDE_PID" 2>/dev/null || true
  SIDE_PID=
}

# it_nodes_n PREFIX COUNT GPUS: COUNT nodes PREFIX-00.. with GPUS GPUs each.
it_nodes_n() {
  local specs=() i
  for ((i = 0; i < $2; i++)); do specs+=("$(printf '%s-%02d:%s' "$1" "$i" "$3")"); done
  it_nodes "${specs[@]}"
}

# The test's pod names PREFIX-000 .. for the given indexes.
pod_names() { local prefix=$1; shift; local i; for i in "$@"; do printf '%s-%03d\n' "$prefix" "$i"; done; }

# Epoch seconds with microseconds (comparable with the audit log's times).
now_epoch() { date +%s.%6N; }
