#!/usr/bin/env bash
# quota_test.sh: team Queues on the real apiserver. With the Queue CRD and two queues applied
# with kubectl, the greedy team's pods stop at its nominal quota: the rest get PodScheduled=False
# with reason QuotaExceeded (not Unschedulable, which autoscalers act on) and the quota message,
# while the cluster has room; the other queue (pods labelled tessel.io/queue, which its
# spec.namespaceSelector lets this namespace use) is unaffected. A bad Queue is logged naming its
# field and changes nothing; a newer Queue that lists the greedy team's namespace does not take
# it (a Warning Event NamespaceConflict on the newer Queue, the team still limited); raising the
# quota admits the rest; /metrics shows each queue's nominal quota, usage and pending pods.
source "$(dirname "$0")/lib.sh"
it_begin quota

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null \
  || fail "Queue CRD not established"
# Queues are cluster-scoped: name them after the test so that reruns and other tests never clash.
# QNEW sorts before QA by name: a newer queue must not take QA's namespace whatever its name.
QA="$NS-a" QB="$NS-b" QNEW="$NS-0-newer"
cleanup_queues() { kubectl delete queues.tessel.io "$QA" "$QB" "$QNEW" "$NS-bad" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queues
it_on_exit cleanup_queues

# queue NAME GPUS [NAMESPACES] [NAMESPACE-THE-SELECTOR-ADMITS]
queue() {
  local ns_line="" selector_line=""
  [[ -n ${3:-} ]] && ns_line="  namespaces: [$3]"
  [[ -n ${4:-} ]] && selector_line="  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $4}}"
  # --validate=strict: a field the CRD schema does not know (pruned silently) is an error.
  kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec:
$ns_line
$selector_line
  nominalQuota: {nvidia.com/gpu: "$2"}
YAML
}
queue "$QA" 2 "$NS"
queue "$QB" 3 "" "$NS"

it_nodes quota-0:8 quota-1:8
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# gpu_pod NAME [QUEUE-LABEL]
gpu_pod() { it_pod "$1" --gpus 1 ${2:+--label "tessel.io/queue=$2"}; }

for i in 0 1 2 3; do gpu_pod greedy-$i; done
for i in 0 1; do gpu_pod other-$i "$QB"; done
for i in 0 1; do it_wait 60 "other-$i bound" it_bound other-$i; done

REASON=QuotaExceeded
cond() {
  kubectl get pod -n "$NS" "$1" \
    -o 'jsonpath={range .status.conditions[?(@.type=="PodScheduled")]}{.status}|{.reason}|{.message}{end}'
}
quota_blocked() { [[ $(cond "$1") == "False|$REASON|"* ]]; }
bound_greedy() { kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' | grep -c '^greedy-.*=.' || true; }
it_wait 60 "two greedy pods bound" eval '(( $(bound_greedy) == 2 ))'
blocked=()
for i in 0 1 2 3; do it_bound greedy-$i || blocked+=(greedy-$i); done
((${#blocked[@]} == 2)) || fail "${#blocked[@]} greedy pods pending, want 2"
for p in "${blocked[@]}"; do
  it_wait 30 "$p PodScheduled=False $REASON" quota_blocked "$p"
  msg=$(cond "$p")
  msg=${msg#"False|$REASON|"}
  # Every node (other tests' leftovers included) is refused by the quota alone.
  want="queue $QA: nvidia.com/gpu 3 of nominal 2; it is in no cohort, so it cannot borrow."
  [[ $msg == "0/"*" nodes are available: "[0-9]*" $want" ]] || fail "$p: message \"$msg\", want \"0/N nodes are available: N $want\""
done
say "quota message: $msg"
sleep 2
(( $(bound_greedy) == 2 )) || fail "a greedy pod was bound past the quota"

# Metrics: the greedy queue's nominal, usage and pending pods.
series() { metric "$SCHED_PORT_main" "$1"; }
is_series() { [[ $(series "$1") == "$2" ]]; }
it_wait 10 "usage metric" is_series "tessel_queue_usage{queue=\"$QA\",cohort=\"\",resource=\"nvidia.com/gpu\"}" 2
is_series "tessel_queue_nominal_quota{queue=\"$QA\",cohort=\"\",resource=\"nvidia.com/gpu\"}" 2 || fail "nominal metric: $(series "tessel_queue_nominal_quota{queue=\"$QA\",cohort=\"\",resource=\"nvidia.com/gpu\"}")"
is_series "tessel_queue_pending_pods{queue=\"$QA\",cohort=\"\"}" 2 || fail "pending metric: $(series "tessel_queue_pending_pods{queue=\"$QA\",cohort=\"\"}")"
is_series "tessel_queue_usage{queue=\"$QB\",cohort=\"\",resource=\"nvidia.com/gpu\"}" 2 || fail "usage of $QB"

# A bad Queue is rejected by the scheduler with its field named (the CRD schema lets a limit
# beyond int64 through); the good queues stay in force.
kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $NS-bad}
spec: {cohort: $NS-c, borrowingLimit: {cpu: "1e30"}}
YAML
logged_bad() { grep -qF "Queue $NS-bad: spec.borrowingLimit.cpu: quantity \"1e30\" is not valid: out of range for a 64-bit integer; its pods wait until it decodes" "$(scheduler_log main)"; }
it_wait 30 "bad Queue logged" logged_bad
sleep 1
(( $(bound_greedy) == 2 )) || fail "the bad Queue changed the greedy team's quota"

# A newer Queue that lists the greedy team's namespace (and one of its own) does not get it: the
# scheduler logs the conflict, records a Warning Event on the newer Queue, and the greedy team
# stays limited by QA (the parked pods are retried on the Queue change, and stay parked).
sleep 1  # a later creationTimestamp (seconds) than QA's
queue "$QNEW" 8 "$NS, $NS-other"
conflict="Queue $QNEW: spec.namespaces: namespace \"$NS\" already belongs to the older Queue $QA; this queue does not get it (its other namespaces stay)"
logged_conflict() { grep -qF "$conflict" "$(scheduler_log main)"; }
it_wait 30 "namespace conflict logged" logged_conflict
conflict_event() {
  kubectl get events -A --field-selector "involvedObject.kind=Queue,involvedObject.name=$QNEW,reason=NamespaceConflict" \
    -o 'jsonpath={range .items[*]}{.metadata.namespace}|{.type}|{.involvedObject.apiVersion}|{.message}{"\n"}{end}'
}
has_conflict_event() { [[ $(conflict_event) == *"default|Warning|tessel.io/v1alpha1|$conflict"* ]]; }
it_wait 30 "Warning Event NamespaceConflict on Queue $QNEW" has_conflict_event
say "event: $(conflict_event | head -1)"
sleep 3
(( $(bound_greedy) == 2 )) || fail "the newer Queue $QNEW took the greedy team's namespace: $(bound_greedy) bound"
for p in "${blocked[@]}"; do quota_blocked "$p" || fail "$p: $(cond "$p")"; done
is_series "tessel_queue_usage{queue=\"$QA\",cohort=\"\",resource=\"nvidia.com/gpu\"}" 2 || fail "usage of $QA after $QNEW"

# Raising the quota wakes the parked pods.
queue "$QA" 4 "$NS"
for p in "${blocked[@]}"; do it_wait 60 "$p bound after the quota grew" it_bound "$p"; done

it_stop_scheduler main
exit 0
