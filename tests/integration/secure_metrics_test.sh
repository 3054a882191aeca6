#!/usr/bin/env bash
# secure_metrics_test.sh: the secure port, as kube-scheduler's (issue 12 §5). tessel-scheduler
# serves HTTPS with a self-signed certificate that names 127.0.0.1 (curl verifies it);
# /healthz and /readyz are open; /metrics asks the real API server (TokenReview, then
# SubjectAccessReview, with the manifests' system:auth-delegator binding): 401 without a token
# or with a wrong one, 403 for a user without the right, 200 for system:masters, and 200 for
# the first user once it is bound to tessel-metrics-reader. A given certificate is served too.
source "$(dirname "$0")/lib.sh"
it_begin secure

binding=it-secure-metrics-reader
kubectl delete clusterrolebinding "$binding" >/dev/null 2>&1 || true
trap 'kubectl delete clusterrolebinding "$binding" >/dev/null 2>&1 || true; it_cleanup' EXIT

port=$(free_port)
it_start_scheduler main --leader-elect=false --secure-port "$port" --cert-dir "$IT_WORK/certs"
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
url="https://127.0.0.1:$port"
ca="$IT_WORK/certs/tessel-scheduler.crt"
# code URL [TOKEN]: the HTTP status, the server's certificate verified against $ca.
code() {
  local auth=()
  [[ -n ${2:-} ]] && auth=(-H "Authorization: Bearer $2")
  curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" "${auth[@]}" "$1"
}
expect() { local got; got=$(code "$2" "${3:-}"); [[ $got == "$1" ]] || fail "$2 ${4:-}: HTTP $got, want $1"; }

expect 200 "$url/healthz" "" "(no token)"
expect 200 "$url/readyz" "" "(no token)"
expect 401 "$url/metrics" "" "(no token)"
expect 401 "$url/metrics" "not-a-token" "(a token the API server does not know)"
user_token=$(cat "$TESSEL_CLUSTER_DIR/scheduler.token")  # the scheduler's own user: no /metrics right
expect 403 "$url/metrics" "$user_token" "(a user without the right)"
admin_token=$(cat "$TESSEL_CLUSTER_DIR/admin.token")     # system:masters
expect 200 "$url/metrics" "$admin_token" "(system:masters)"
# Read whole before matching: grep -q stopping early would fail curl's write under pipefail.
metrics=$(curl -fsS --cacert "$ca" -H "Authorization: Bearer $admin_token" "$url/metrics")
grep -q '^scheduler_pending_pods' <<<"$metrics" || fail "/metrics does not list scheduler_pending_pods"

# The same user, once bound to tessel-metrics-reader: allowed after the denial's cache (10 s).
kubectl create clusterrolebinding "$binding" --clusterrole=tessel-metrics-reader \
  --user=system:serviceaccount:kube-system:tessel-scheduler >/dev/null
allowed() { [[ $(code "$url/metrics" "$user_token") == 200 ]]; }
it_wait 30 "the bound user allowed" allowed
say "401 without a token or with a wrong one, 403 before the grant, 200 after it and for system:masters"

# A certificate given with --tls-cert-file / --tls-private-key-file: the cluster's own.
port2=$(free_port)
it_start_scheduler given --leader-elect=false --secure-port "$port2" \
  --tls-cert-file "$TESSEL_CLUSTER_DIR/pki/apiserver.crt" \
  --tls-private-key-file "$TESSEL_CLUSTER_DIR/pki/apiserver.key"
ca="$TESSEL_CLUSTER_DIR/pki/ca.crt"
expect 200 "https://127.0.0.1:$port2/healthz" "" "(given certificate)"
exit 0
