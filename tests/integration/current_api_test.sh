#!/usr/bin/env bash
# current_api_test.sh: the pod API of current Kubernetes, on a server that serves it.
#   - spec.schedulingGates: a gated pod is not scheduled (no bind, no FailedScheduling event);
#     once its last gate is removed, it is bound.
#   - sidecar containers (init containers with restartPolicy: Always, Kubernetes 1.29+): they run
#     beside the main containers, so their requests add to the pod's (kube-scheduler's rule), while
#     an ordinary init container's only sets a floor. A node with 32 CPUs takes a pod whose sidecar
#     asks 20 and whose container asks 10 (30 in all, 2 left). Then a pod with a 2-CPU sidecar and
#     a 1-CPU container (3) does not fit (it would, read as an ordinary init container: 2), while
#     one with a 2-CPU ordinary init container and a 2-CPU container (2) does (it would not, read
#     as a sidecar: 4).
source "$(dirname "$0")/lib.sh"
it_begin currentapi

it_nodes currentapi-a:0
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

pod_json() {  # NAME INIT-CPU INIT-RESTART(Always|"") MAIN-CPU [GATE]
  python3 - "$NS" "$IT_NAME" "$@" <<'EOF'
import json, sys
ns, test, name, init_cpu, restart, main_cpu = sys.argv[1:7]
gate = sys.argv[7] if len(sys.argv) > 7 else ""
init = {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": init_cpu}}}
if restart:
    init["restartPolicy"] = restart
spec = {"schedulerName": "tessel", "terminationGracePeriodSeconds": 0,
        "nodeSelector": {"tessel-it": test}, "initContainers": [init],
        "containers": [{"name": "main", "image": "busybox",
                        "resources": {"requests": {"cpu": main_cpu}}}]}
if gate:
    spec["schedulingGates"] = [{"name": gate}]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": ns}, "spec": spec}))
EOF
}
failed_events() {
  kubectl get events -n "$NS" --field-selector "involvedObject.name=$1,reason=FailedScheduling" \
    -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}'
}

# ---- schedulingGates -----------------------------------------------------------------------------
pod_json gated 1 "" 1 example.com/quota-check | kubectl apply -f - >/dev/null
# The scheduler sees the pod (it is in its queue's view) but must leave it alone: wait until a
# later ungated pod has been bound, so the gated one had its chance to be (wrongly) scheduled.
pod_json marker 1 "" 1 | kubectl apply -f - >/dev/null
it_wait 30 "marker bound" it_bound marker
[[ -z $(node_of gated) ]] || fail "the gated pod was bound"
[[ -z $(failed_events gated) ]] || fail "the gated pod got FailedScheduling: $(failed_events gated)"
kubectl patch pod -n "$NS" gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
it_wait 30 "gated bound after its gate was removed" it_bound gated
kubectl delete pod -n "$NS" gated marker --wait=true >/dev/null

# ---- sidecar containers --------------------------------------------------------------------------
pod_json sidecar-big 20 Always 10 | kubectl apply -f - >/dev/null
it_wait 30 "sidecar-big bound" it_bound sidecar-big
pod_json sidecar-second 2 Always 1 | kubectl apply -f - >/dev/null
has_insufficient_cpu() { failed_events sidecar-second | matches "Insufficient cpu"; }
it_wait 30 "sidecar-second: Insufficient cpu" has_insufficient_cpu
[[ -z $(node_of sidecar-second) ]] || fail "sidecar-second bound although its sidecar does not fit"
pod_json init-only 2 "" 2 | kubectl apply -f - >/dev/null
it_wait 30 "init-only bound (an ordinary init container only sets a floor)" it_bound init-only

it_stop_scheduler main
exit 0
