#!/usr/bin/env bash
# fail_closed_test.sh: objects that stop decoding fail closed on the real apiserver (issue 37,
# defects 9 and 10).
#   Node: an update that the apiserver accepts and that once did not decode
#   (status.capacity[example.com/huge]=100E) comes with a cordon and the GPUs cut from 8 to 1;
#   the scheduler reads it (the amount saturates) and binds nothing there.
#   Queue: a team queue of 1 GPU admits 1 of 4 pods; a schema-valid edit that does not decode
#   (borrowingLimit {cpu: "1e30"}) keeps the last valid version in force (still 1 of 4 bound)
#   and the status says what is wrong (Active=True, reason InvalidSpec, naming the field). A
#   Queue that never decoded holds the pods that name it: PodScheduled=False naming the field.
#   PodGroup (defect 11): the members of one that does not decode (minResources beyond int64)
#   get PodScheduled=False naming the PodGroup and the field, and its status says InvalidSpec.
source "$(dirname "$0")/lib.sh"
it_begin failclosed

for crd in queues podgroups; do kubectl apply -f "$TESSEL_ROOT/manifests/crds/$crd.yaml" >/dev/null; done
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io crd/podgroups.scheduling.x-k8s.io >/dev/null \
  || fail "CRDs not established"
QREV="$NS-rev" QHELD="$NS-held"
cleanup_queues() { kubectl delete queues.tessel.io "$QREV" "$QHELD" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queues
it_on_exit cleanup_queues

it_nodes fc-node:8 fc-queue:8:fc-pool=queue
it_start_scheduler main --leader-elect=false --queue-status-interval 1s
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

bound_count() {  # bound_count PREFIX: pods named PREFIX* that are bound
  kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' |
    grep -c "^$1.*=." || true
}
cond() {
  kubectl get pod -n "$NS" "$1" \
    -o 'jsonpath={range .status.conditions[?(@.type=="PodScheduled")]}{.status}|{.reason}|{.message}{end}'
}

# --- Node (defect 9): cordoned and shrunk in the same update as a resource beyond int64.
# The resource first: every later version of the node carries it (a scheduler that drops
# undecodable updates never sees the cordon nor the shrink).
kubectl patch node fc-node --subresource=status --type=merge -p \
  '{"status":{"capacity":{"example.com/huge":"100E","nvidia.com/gpu":"1"},"allocatable":{"example.com/huge":"100E","nvidia.com/gpu":"1"}}}' >/dev/null
kubectl cordon fc-node >/dev/null
[[ $(kubectl get node fc-node -o 'jsonpath={.status.capacity.example\.com/huge}') == 100E ]] \
  || fail "the apiserver did not keep the capacity"
# The scheduler has seen the update once a pod that only fc-node could take waits as unschedulable.
it_pod node-probe --gpus 1 --select kubernetes.io/hostname=fc-node
node_refused() { [[ $(cond node-probe) == "False|Unschedulable|0/"*"node(s) were unschedulable"* ]]; }
it_wait 30 "node-probe refused: fc-node is cordoned" node_refused
for i in 0 1 2 3; do it_pod node-$i --gpus 1 --select kubernetes.io/hostname=fc-node; done
for i in 0 1 2 3; do it_wait 30 "node-$i PodScheduled=False" eval '[[ $(cond node-'$i') == False* ]]'; done
(( $(bound_count node-) == 0 )) || fail "$(bound_count node-) pods bound to the cordoned, shrunk node"
if grep -q "skipping an object that does not decode: Node fc-node" "$(scheduler_log main)"; then
  fail "the node update was dropped: $(grep 'Node fc-node' "$(scheduler_log main)" | head -1)"
fi
say "node: $(cond node-0)"
kubectl delete pod -n "$NS" node-probe node-0 node-1 node-2 node-3 --wait=false >/dev/null

# --- Queue (defect 10): the last valid version stays in force.
queue_yaml() {  # queue_yaml NAME EXTRA-SPEC
  cat <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec: {namespaces: [$NS], cohort: $NS-c, nominalQuota: {nvidia.com/gpu: "1"}$2}
YAML
}
queue_yaml "$QREV" "" | kubectl apply --validate=strict -f - >/dev/null
for i in 0 1 2 3; do it_pod rev-$i --gpus 1 --select fc-pool=queue; done
it_wait 60 "one rev pod bound" eval '(( $(bound_count rev-) == 1 ))'
quota_held() { [[ $(cond "$1") == "False|QuotaExceeded|"* ]]; }
for i in 0 1 2 3; do it_bound rev-$i || it_wait 30 "rev-$i QuotaExceeded" quota_held rev-$i; done

queue_yaml "$QREV" ', borrowingLimit: {cpu: "1e30"}' | kubectl apply --validate=strict -f - >/dev/null \
  || fail "the apiserver refused the schema-valid edit"
status() { kubectl get queues.tessel.io "$1" -o "jsonpath=$2"; }
active='{.status.conditions[?(@.type=="Active")].status}|{.status.conditions[?(@.type=="Active")].reason}|{.status.conditions[?(@.type=="Active")].message}'
want="True|InvalidSpec|Queue $QREV: spec.borrowingLimit.cpu: quantity \"1e30\" is not valid: out of range for a 64-bit integer; its last valid version stays in force"
is_active() { [[ $(status "$1" "$active") == "$2" ]]; }
it_wait 30 "$QREV Active=True, reason InvalidSpec" is_active "$QREV" "$want"
# The parked pods are retried on the Queue change; a new pod is tried at once. None may pass.
it_pod rev-4 --gpus 1 --select fc-pool=queue
it_wait 30 "rev-4 QuotaExceeded" quota_held rev-4
(( $(bound_count rev-) == 1 )) || fail "the undecodable Queue let $(bound_count rev-) of 5 pods through"
[[ $(status "$QREV" '{.status.admittedPods}') == 1 ]] || fail "$QREV admittedPods $(status "$QREV" '{.status.admittedPods}')"
say "queue: $(status "$QREV" "$active")"

# --- A Queue that never decoded holds the pods that name it.
queue_yaml "$QHELD" ', weight: "1e30"' | sed "s/namespaces: \[$NS\], //" | kubectl apply --validate=strict -f - >/dev/null \
  || fail "the apiserver refused the held queue"
held_why="Queue $QHELD: spec.weight: quantity \"1e30\" is not valid: out of range for a 64-bit integer"
it_wait 30 "$QHELD Active=False" is_active "$QHELD" "False|InvalidSpec|$held_why; its pods wait until it decodes"
it_pod held-0 --gpus 1 --select fc-pool=queue --label "tessel.io/queue=$QHELD"
held_pod() { [[ $(cond held-0) == "False|"*"$held_why; the Queue does not decode, so its pods wait until it does"* ]]; }
it_wait 30 "held-0 waits naming the field" held_pod
it_bound held-0 && fail "held-0 was bound"
say "held: $(cond held-0)"

# --- PodGroup (defect 11): its members are told, and so is its status.
kubectl apply --validate=strict -f - >/dev/null <<YAML || fail "the apiserver refused the PodGroup"
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg-bad, namespace: $NS}
spec: {minMember: 2, minResources: {cpu: "1e30"}}
YAML
for i in 0 1; do it_pod gang-$i --gpus 1 --select fc-pool=queue --label scheduling.x-k8s.io/pod-group=pg-bad; done
pg_why="PodGroup $NS/pg-bad: spec.minResources.cpu: quantity \"1e30\" is not valid: out of range for a 64-bit integer; the pod waits until PodGroup $NS/pg-bad decodes"
told() { [[ $(cond "$1") == "False|SchedulerError|$pg_why" ]]; }
for i in 0 1; do it_wait 30 "gang-$i told why" told gang-$i; done
pg_status() { kubectl get podgroups.scheduling.x-k8s.io -n "$NS" pg-bad -o 'jsonpath={.status.conditions[?(@.type=="Scheduled")].reason}|{.status.conditions[?(@.type=="Scheduled")].message}'; }
it_wait 30 "pg-bad status InvalidSpec" eval '[[ $(pg_status) == "InvalidSpec|$pg_why" ]]'
(( $(bound_count gang-) == 0 )) || fail "a member of the undecodable PodGroup was bound"
say "podgroup: $(cond gang-0)"

it_stop_scheduler main
exit 0
