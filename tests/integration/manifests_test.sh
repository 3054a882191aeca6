#!/usr/bin/env bash
# manifests_test.sh: `kubectl apply --dry-run=server -k manifests/` (and the samples) is clean:
# the API server accepts every object, with no warnings; the API Priority and Fairness objects
# classify the scheduler's lease traffic apart from the rest.
source "$(dirname "$0")/lib.sh"
it_begin manifests
for dir in manifests manifests/samples; do
  out=$(kubectl apply --dry-run=server -k "$TESSEL_ROOT/$dir" 2>&1) || fail "$dir: $out"
  say "$dir:"$'\n'"$out"
  if grep -qiE "warning|error" <<<"$out"; then fail "$dir: warnings or errors: $out"; fi
done
# The Deployment asks for what the issue says.
rendered=$(kubectl kustomize "$TESSEL_ROOT/manifests")
grep -q "replicas: 2" <<<"$rendered" || fail "Deployment replicas != 2"
grep -q -- "--leader-elect=true" <<<"$rendered" || fail "leader election not on"
grep -q "runAsNonRoot: true" <<<"$rendered" || fail "not non-root"
grep -q -- "--admin-port=10260" <<<"$rendered" || fail "admin API port not set"

# The monitoring component, from a kustomization outside manifests/ as docs/metrics.md shows:
# a Service, a ServiceMonitor and the dashboard ConfigMap, all in kube-system; the Service
# applies (the ServiceMonitor needs the Prometheus Operator's CRD, absent here).
it_monitoring_kustomization "$IT_WORK/monitoring"
monitoring=$(kubectl kustomize "$IT_WORK/monitoring") || fail "the monitoring component does not render"
for want in "kind: ServiceMonitor" "name: tessel-scheduler-metrics" "name: tessel-grafana-dashboard" \
            "grafana_dashboard: \"1\"" "tessel-dashboard.json:"; do
  grep -qF "$want" <<<"$monitoring" || fail "monitoring component: no \"$want\""
done
out=$(kubectl apply --dry-run=server -n kube-system -f "$TESSEL_ROOT/manifests/monitoring/service.yaml" 2>&1) \
  || fail "service.yaml: $out"

# API Priority and Fairness: applied for real, the scheduler's lease requests are classified
# into the lease flow and its other requests into its own flow (the apiserver names the
# FlowSchema of every request in the X-Kubernetes-PF-FlowSchema-UID response header).
fc="$TESSEL_ROOT/manifests/flowcontrol.yaml"
kubectl apply -f "$fc" >/dev/null || fail "flowcontrol.yaml does not apply"
trap 'rc=$?; kubectl delete -f "$fc" --wait=false >/dev/null 2>&1; (exit $rc); it_cleanup' EXIT
uid_of() { kubectl get flowschema "$1" -o 'jsonpath={.metadata.uid}'; }
lease_uid=$(uid_of tessel-scheduler-leader-election)
rest_uid=$(uid_of tessel-scheduler)
[[ -n $lease_uid && -n $rest_uid ]] || fail "FlowSchemas not created"
flow_of() {  # the FlowSchema UID the apiserver reports for a request of the scheduler's
  kubectl --kubeconfig "$SCHED_KUBECONFIG" -v=8 "$@" 2>&1 >/dev/null \
    | sed -n 's/.*X-Kubernetes-Pf-Flowschema-Uid: *\([0-9a-f-]*\).*/\1/Ip' | head -n1
}
classified() { [[ $(flow_of "${@:2}") == "$1" ]]; }
# The FlowSchemas take effect within seconds of their creation.
it_wait 30 "lease requests in tessel-scheduler-leader-election" \
  classified "$lease_uid" get lease -n kube-system tessel-scheduler
it_wait 30 "other requests in tessel-scheduler" classified "$rest_uid" get pods -n "$NS"
exit 0
