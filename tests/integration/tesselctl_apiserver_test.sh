#!/usr/bin/env bash
# tesselctl_apiserver_test.sh: tesselctl through the API server, as a user of a managed cluster
# meets it: a kubeconfig whose user runs an exec credential plugin, no pod IP, no port-forward,
# no --insecure flag anywhere.
#   - manifests/admin-api.yaml installed for real (APIService, selector-less Service, its
#     EndpointSlice, RBAC); the leading scheduler writes its address into the slice and its
#     certificate into the APIService's caBundle, and the API server reports it Available;
#   - the exec plugin (a script, by a path relative to the kubeconfig) prints an ExecCredential
#     with a real ServiceAccount token; tesselctl queues / pending answer with the live figures;
#   - refusals: by the API server without tessel-admin-api-reader, by the scheduler's own
#     SubjectAccessReview of the forwarded user without tessel-admin-reader; a user bound only in
#     one namespace sees that namespace's pending pods and is refused the cluster-wide list;
#   - a client-certificate user (which the gRPC path refuses) is served;
#   - the aggregated port itself believes no one but the front proxy: no client certificate, or
#     one from another CA, gets 401 whatever X-Remote-User says.
# The local control plane has neither a pod network nor kube-proxy, and endpoint addresses may not
# be loopback ones: so here the Service is an ExternalName (localhost, on the scheduler's port),
# which the API server routes to by itself, and the slice the leader writes holds an FQDN that
# routes nowhere (its content and the right to write it are checked, not its routing).
source "$(dirname "$0")/lib.sh"
: "${TESSEL_CTL_BIN:?}"
it_begin ctlapi

QA="$NS-a"
ADMIN_API="$TESSEL_ROOT/manifests/admin-api.yaml"
cleanup_ctlapi() {
  sed 's/^addressType: IPv4$/addressType: FQDN/' "$ADMIN_API" | kubectl delete -f - --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete queues.tessel.io "$QA" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete clusterrolebinding "$NS-api" "$NS-reader" --ignore-not-found >/dev/null 2>&1 || true
}
cleanup_ctlapi
it_on_exit cleanup_ctlapi

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null
api_port=$(free_port)
sed 's/^addressType: IPv4$/addressType: FQDN/' "$ADMIN_API" | kubectl apply -f - >/dev/null
kubectl delete service -n kube-system tessel-admin-api >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: tessel-admin-api, namespace: kube-system}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{name: https, port: $api_port, protocol: TCP}]
YAML
kubectl patch apiservice v1alpha1.admin.tessel.io --type=merge -p "{\"spec\":{\"service\":{\"port\":$api_port}}}" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QA}
spec: {namespaces: [$NS], nominalQuota: {nvidia.com/gpu: "1"}}
YAML
it_wait 30 "the scheduler may read the front proxy's CA" eval \
  "[[ \$(kubectl --kubeconfig $SCHED_KUBECONFIG auth can-i get configmaps/extension-apiserver-authentication -n kube-system) == yes ]]"

it_nodes ctlapi-0:4
it_start_scheduler main --leader-elect=true --lock-namespace kube-system --admin-port 0 \
  --admin-api-port "$api_port" --admin-api-advertise-address tessel-it.localhost --cert-dir "$IT_WORK/certs"
it_wait 60 "scheduler ready (leading)" scheduler_ready "$SCHED_PORT_main"
available() {
  [[ $(kubectl get apiservice v1alpha1.admin.tessel.io \
    -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}') == True ]]
}
it_wait 60 "APIService v1alpha1.admin.tessel.io Available" available
[[ -n $(kubectl get apiservice v1alpha1.admin.tessel.io -o 'jsonpath={.spec.caBundle}') ]] || fail "no caBundle"
[[ -z $(kubectl get apiservice v1alpha1.admin.tessel.io -o 'jsonpath={.spec.insecureSkipTLSVerify}') ]] \
  || fail "the APIService skips TLS verification"
[[ $(kubectl get endpointslice -n kube-system tessel-admin-api -o 'jsonpath={.endpoints[0].addresses[0]}:{.ports[0].port}') \
  == "tessel-it.localhost:$api_port" ]] || fail "EndpointSlice: $(kubectl get endpointslice -n kube-system tessel-admin-api -o yaml)"

# Team A: one pod admitted (its 1 GPU quota), one waiting.
it_pod a-0 --gpus 1
it_wait 60 "a-0 bound" it_bound a-0
sleep 1
it_pod a-1 --gpus 1

# The user: a ServiceAccount whose token the exec plugin hands over, by a path relative to
# the kubeconfig, with args and env, as aws/gcloud/kubelogin plugins do.
kubectl create serviceaccount -n "$NS" ctl-user >/dev/null
kubectl create token -n "$NS" ctl-user --duration 1h >"$IT_WORK/ctl-user.token"
mkdir -p "$IT_WORK/kube/bin"
cat >"$IT_WORK/kube/bin/token-plugin" <<'SH'
#!/bin/sh
# An exec credential plugin: the token of the account named by --account, from $TOKEN_DIR.
echo run >>"$TOKEN_DIR/plugin-runs"
case "$KUBERNETES_EXEC_INFO" in *'"kind":"ExecCredential"'*) ;; *) echo "no KUBERNETES_EXEC_INFO" >&2; exit 1;; esac
[ "$1" = --account ] || { echo "usage: token-plugin --account NAME" >&2; exit 1; }
[ -f "$TOKEN_DIR/$2.token" ] || { echo "no token for $2: log in first" >&2; exit 1; }
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "$(cat "$TOKEN_DIR/$2.token")" "$(date -u -d '+50 min' +%Y-%m-%dT%H:%M:%SZ)"
SH
chmod +x "$IT_WORK/kube/bin/token-plugin"
server=$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.server}')
ca_data=$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
exec_kubeconfig() {  # ACCOUNT FILE
  cat >"$2" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: managed
  cluster: {server: "$server", certificate-authority-data: $ca_data}
users:
- name: $1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: bin/token-plugin
      args: [--account, $1]
      env: [{name: TOKEN_DIR, value: "$IT_WORK"}]
      interactiveMode: Never
contexts:
- name: managed
  context: {cluster: managed, user: $1}
current-context: managed
YAML
}
exec_kubeconfig ctl-user "$IT_WORK/kube/config"
ctl() { "$TESSEL_CTL_BIN" --kubeconfig "$IT_WORK/kube/config" "$@"; }
user="system:serviceaccount:$NS:ctl-user"

# No rights: the API server refuses before the scheduler is asked.
if out=$(ctl queues 2>&1); then fail "a user without rights got: $out"; fi
[[ $out == *"cannot list resource \"queues\" in API group \"admin.tessel.io\""* ]] || fail "API server refusal: $out"
say "refused by the API server: $out"
[[ -s $IT_WORK/plugin-runs ]] || fail "the exec plugin never ran"

# The API server's gate only: the scheduler's own check of the forwarded user refuses.
kubectl create clusterrolebinding "$NS-api" --clusterrole=tessel-admin-api-reader --user="$user" >/dev/null
forwarded_refusal() { ! out=$(ctl queues 2>&1) && [[ $out == *"user \"$user\" may not get tessel.io/scheduler/queues"* ]]; }
it_wait 30 "the scheduler refuses $user itself" forwarded_refusal
say "refused by the scheduler: $(ctl queues 2>&1 || true)"

# Both: the live figures.
kubectl create clusterrolebinding "$NS-reader" --clusterrole=tessel-admin-reader --user="$user" >/dev/null
queues_row() { ctl queues | awk -v q="$QA" '$1 == q'; }
a_counts() { [[ $(queues_row | awk '{print $3, $4, $6}') == "1 1 1" ]]; }
it_wait 30 "tesselctl queues: $QA 1 pending, 1 admitted, 1 GPU used" a_counts
say "tesselctl queues (exec plugin, through the API server):"$'\n'"$(ctl queues)"
ctl -o json pending | python3 -c "
import json, sys
pods = [p for p in json.load(sys.stdin).get('pods', []) if p['pod'].startswith('$NS/')]
assert [(p['pod'], p['queue']) for p in pods] == [('$NS/a-1', '$QA')], pods
" || fail "pending: $(ctl -o json pending)"
[[ $(ctl pending -n "$NS" --queue "$QA" | tail -n +2 | awk '{print $3, $4}') == "$NS/a-1 $QA" ]] \
  || fail "pending -n $NS: $(ctl pending -n "$NS" --queue "$QA")"

# One namespace only: a second account bound in $NS.
kubectl create serviceaccount -n "$NS" ns-user >/dev/null
kubectl create token -n "$NS" ns-user --duration 1h >"$IT_WORK/ns-user.token"
exec_kubeconfig ns-user "$IT_WORK/kube/ns-config"
for role in tessel-admin-api-reader tessel-admin-reader; do
  kubectl create rolebinding -n "$NS" "ns-user-$role" --clusterrole="$role" --user="system:serviceaccount:$NS:ns-user" >/dev/null
done
ns_ctl() { "$TESSEL_CTL_BIN" --kubeconfig "$IT_WORK/kube/ns-config" "$@"; }
it_wait 30 "$NS's pending pods for ns-user" eval "ns_ctl pending -n $NS | matches $NS/a-1"
if out=$(ns_ctl pending 2>&1); then fail "ns-user listed every namespace: $out"; fi
[[ $out == *"cannot list resource \"pending\" in API group \"admin.tessel.io\" at the cluster scope"* ]] || fail "ns-user cluster-wide: $out"

# A client-certificate user (system:masters), which the gRPC path refuses: served.
"$TESSEL_CTL_BIN" --kubeconfig "$TESSEL_CLUSTER_DIR/admin-cert.kubeconfig" queues | matches "^$QA " \
  || fail "client certificate user: $("$TESSEL_CTL_BIN" --kubeconfig "$TESSEL_CLUSTER_DIR/admin-cert.kubeconfig" queues 2>&1)"

# The port itself: only the front proxy is believed.
api_ca="$IT_WORK/certs/admin-api/tessel-scheduler.crt"
direct() {
  curl -sS --cacert "$api_ca" --resolve "tessel-admin-api.kube-system.svc:$api_port:127.0.0.1" \
    -H "X-Remote-User: admin" -H "X-Remote-Group: system:masters" "$@" \
    "https://tessel-admin-api.kube-system.svc:$api_port/apis/admin.tessel.io/v1alpha1/queues"
}
out=$(direct -w ' %{http_code}')
[[ $out == *'no client certificate'*' 401' ]] || fail "without a client certificate: $out"
out=$(direct -w ' %{http_code}' --cert "$TESSEL_CLUSTER_DIR/pki/admin.crt" --key "$TESSEL_CLUSTER_DIR/pki/admin.key")
[[ $out == *'not signed by the requestheader CA'*' 401' ]] || fail "a certificate of another CA: $out"

it_stop_scheduler main
exit 0
