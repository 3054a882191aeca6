#!/usr/bin/env bash
# consolidation_test.sh: consolidation of movable pods on the real control plane
# (kube-apiserver, kube-controller-manager's job and disruption controllers, the simulated
# kubelet), issue 22. Four pools of two 8-GPU nodes, each laid out the same fragmented way on
# purpose: one-pod Jobs of 2 and 2 GPUs on node X, one of 4 GPUs on node Y, so that 8 GPUs are
# free in the pool but no node has 8. An 8-GPU pod then arrives in each pool. Every pod has the
# same priority, so preemption finds no victim; the scheduler runs the Consolidation plugin with
# minRunSeconds: 0.
#  1. move: the Jobs' pods are annotated tessel.io/movable: "true". Tessel moves the smallest set
#     (the one 4-GPU pod, not the two 2-GPU pods) through the Eviction API: the moved pod gets
#     DisruptionTarget=True, reason ConsolidationByScheduler, naming the waiting pod, and a Moved
#     event; the waiting pod is nominated to its node. The Job controller recreates the moved pod
#     and Tessel binds the new pod on the other node (the nominated room is not its to take);
#     once the moved pod is gone, the waiting pod is bound to its node.
#     scheduler_preemption_victims{reason="Consolidation"} counts that one move.
#  2. fixed: the same layout without the annotation: nothing moves, the 8-GPU pod stays pending
#     (PodScheduled=False, Unschedulable, for want of GPUs).
#  3. pdb: the movable layout under a PodDisruptionBudget that allows no disruption: nothing
#     moves, no eviction is even asked (the plan is checked against the budget before its first
#     eviction) and the 8-GPU pod is not nominated.
#  4. queue: the Jobs' pods are not annotated but belong (label tessel.io/queue) to a Queue with
#     spec.disruption.movable: true: the 4-GPU pod is moved as in 1, without a hold.
# The Jobs' pods in pool move carry a finalizer of the test's, so that a moved pod lingers
# terminating (and shows its condition) until the test lets it go. First, the apiserver checks
# the Queue CRD's spec.disruption: valid settings pass, a negative minRunSeconds does not.
source "$(dirname "$0")/lib.sh"
it_begin consol

HOLD=tessel.io/test-hold
release() {  # release POD...: lets the pods go
  local pod
  for pod in "$@"; do
    kubectl patch -n "$NS" pod "$pod" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
}
release_all() { release $(kubectl get pods -n "$NS" -l pool=move -o 'jsonpath={.items[*].metadata.name}' 2>/dev/null); }
QMOVE="$NS-movable"
trap 'rc=$?; release_all; set +e; kubectl delete queues.tessel.io "$QMOVE" --ignore-not-found >/dev/null 2>&1; (exit $rc); it_cleanup' EXIT

# --- 0. The Queue CRD's opt-in settings ------------------------------------------------------
kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null \
  || fail "Queue CRD not established"
queue_with() {  # queue_with NAME DISRUPTION: server-side dry run, strict about unknown fields
  kubectl apply --dry-run=server --validate=strict -f - 2>&1 <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec:
  namespaces: [$NS]
  disruption: $2
YAML
}
out=$(queue_with "$NS-ok" '{movable: true, minRunSeconds: 600}') \
  || fail "a Queue with spec.disruption {movable: true, minRunSeconds: 600} was refused: $out"
if out=$(queue_with "$NS-bad" '{movable: true, minRunSeconds: -1}'); then
  fail "a Queue with spec.disruption.minRunSeconds: -1 was accepted: $out"
fi
[[ $out == *spec.disruption.minRunSeconds* ]] || fail "the refusal does not name spec.disruption.minRunSeconds: $out"
if out=$(queue_with "$NS-bad" '{movable: "yes"}'); then
  fail "a Queue with spec.disruption.movable: \"yes\" was accepted: $out"
fi
[[ $out == *spec.disruption.movable* ]] || fail "the refusal does not name spec.disruption.movable: $out"
# Pool queue's Queue: the pods of this namespace that choose it (label tessel.io/queue) are movable.
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QMOVE}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  nominalQuota: {nvidia.com/gpu: "16"}
  disruption: {movable: true}
YAML

# --- The fragmented layout -----------------------------------------------------------------------
# Pool P has nodes P-x and P-y (labels pool=P, slot=x|y). Pinned filler pods steer the Jobs: the
# 2-GPU Jobs are placed while a filler holds all of P-y, the 4-GPU Job while one holds the rest
# of P-x; then the fillers go. (Fillers, not cordons: a placement made before the scheduler saw a
# cordon would spoil the layout, while a filler it has not seen yet only delays a placement.)
POOLS=(move fixed pdb queue)
nodes=()
for pool in "${POOLS[@]}"; do nodes+=("$pool-x:8:pool=$pool,slot=x" "$pool-y:8:pool=$pool,slot=y"); done
it_nodes "${nodes[@]}"

it_start_scheduler main --leader-elect=false --config "$(it_plugin_config Consolidation '{minRunSeconds: 0}')"
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# job NAME POOL GPUS: a Job of one pod in POOL, labelled pool=POOL, annotated movable in pools move
# and pdb, in Queue $QMOVE in pool queue; in pool move, its pods are held by the test's finalizer
# once deleted.
job() {
  local annotations="{}" finalizers="[]" queue=""
  case $2 in
    move) annotations='{tessel.io/movable: "true"}'; finalizers="[$HOLD]" ;;
    pdb) annotations='{tessel.io/movable: "true"}' ;;
    queue) queue=", tessel.io/queue: $QMOVE" ;;
  esac
  kubectl apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  backoffLimit: 6
  template:
    metadata:
      labels: {pool: $2$queue}
      annotations: $annotations
      finalizers: $finalizers
    spec:
      schedulerName: tessel
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      nodeSelector: {tessel-it: $IT_NAME, pool: $2}
      containers:
      - name: main
        image: busybox
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {nvidia.com/gpu: "$3"}
YAML
}
# pods_of JOB: name|uid|node|deletionTimestamp of each of its pods
pods_of() {
  kubectl get pods -n "$NS" -l "job-name=$1" \
    -o 'jsonpath={range .items[*]}{.metadata.name}|{.metadata.uid}|{.spec.nodeName}|{.metadata.deletionTimestamp}{"\n"}{end}'
}
job_bound_to() { [[ $(pods_of "$1" | wc -l) == 1 ]] && pods_of "$1" | matches "|$2|$"; }
gone() { ! kubectl get pod -n "$NS" "$1" >/dev/null 2>&1; }
filler() {  # filler NAME NODE-POOL SLOT GPUS
  it_pod "$1" --gpus "$4" --select "pool=$2" --select "slot=$3"
}

for pool in "${POOLS[@]}"; do filler "fill-$pool-y" "$pool" y 8; done
for pool in "${POOLS[@]}"; do it_wait 60 "fill-$pool-y bound" it_bound "fill-$pool-y"; done
for pool in "${POOLS[@]}"; do job "$pool-2a" "$pool" 2; job "$pool-2b" "$pool" 2; done
for pool in "${POOLS[@]}"; do
  for j in 2a 2b; do it_wait 60 "$pool-$j's pod bound to $pool-x" job_bound_to "$pool-$j" "$pool-x"; done
done
for pool in "${POOLS[@]}"; do filler "fill-$pool-x" "$pool" x 4; done
for pool in "${POOLS[@]}"; do kubectl delete pod -n "$NS" "fill-$pool-y" --wait=false >/dev/null; done
for pool in "${POOLS[@]}"; do it_wait 60 "fill-$pool-x bound" it_bound "fill-$pool-x"; done
for pool in "${POOLS[@]}"; do job "$pool-4" "$pool" 4; done
for pool in "${POOLS[@]}"; do it_wait 60 "$pool-4's pod bound to $pool-y" job_bound_to "$pool-4" "$pool-y"; done
for pool in "${POOLS[@]}"; do kubectl delete pod -n "$NS" "fill-$pool-x" --wait=false >/dev/null; done
for pool in "${POOLS[@]}"; do
  for node in x y; do it_wait 60 "fill-$pool-$node gone" gone "fill-$pool-$node"; done
done
# What each pool's Jobs run now (name|uid|node|), to compare with at the end.
layout() { local j; for j in "$@"; do pods_of "$j"; done; }
before_fixed=$(layout fixed-2a fixed-2b fixed-4)
before_pdb=$(layout pdb-2a pdb-2b pdb-4)

# The budget of pool pdb: all three of its pods must stay (0 disruptions allowed).
kubectl apply -f - >/dev/null <<YAML
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: $NS}
spec:
  minAvailable: 3
  selector: {matchLabels: {pool: pdb}}
YAML
pdb_holds() {
  [[ $(kubectl get pdb -n "$NS" pdb -o 'jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}') == 3/0 ]]
}
it_wait 60 "the budget's status: 3 healthy, 0 disruptions allowed" pdb_holds

cond() {
  kubectl get pod -n "$NS" "$1" \
    -o 'jsonpath={range .status.conditions[?(@.type=="PodScheduled")]}{.status}|{.reason}|{.message}{end}'
}
unschedulable() { [[ $(cond "$1") == "False|Unschedulable|"* ]]; }
nominated_node() { kubectl get pod -n "$NS" "$1" -o 'jsonpath={.status.nominatedNodeName}'; }

# --- 2, 3. Nothing to move: not movable, or the budget says no ----------------------------------
it_pod big-fixed --gpus 8 --select pool=fixed
it_pod big-pdb --gpus 8 --select pool=pdb
it_wait 60 "big-fixed reported Unschedulable" unschedulable big-fixed
it_wait 60 "big-pdb reported Unschedulable" unschedulable big-pdb
say "big-fixed: $(cond big-fixed)"
say "big-pdb: $(cond big-pdb)"
[[ $(cond big-fixed) == *"Insufficient nvidia.com/gpu"* ]] \
  || fail "big-fixed's condition does not say it lacks GPUs: $(cond big-fixed)"

# --- 1. The move ----------------------------------------------------------------------------------
mover=$(pods_of move-4)
mover_name=${mover%%|*}
mover_uid=$(cut -d'|' -f2 <<<"$mover")
stayers=$(layout move-2a move-2b)
say "to be moved: $mover_name ($mover_uid) on move-y; staying on move-x: $(cut -d'|' -f1 <<<"$stayers" | xargs)"

it_pod big-move --gpus 8 --select pool=move
terminating() { [[ -n $(kubectl get pod -n "$NS" "$1" -o 'jsonpath={.metadata.deletionTimestamp}') ]]; }
it_wait 60 "$mover_name evicted" terminating "$mover_name"
disruption() {
  kubectl get pod -n "$NS" "$1" \
    -o 'jsonpath={range .status.conditions[?(@.type=="DisruptionTarget")]}{.status}|{.reason}|{.message}{end}'
}
want_disruption="True|ConsolidationByScheduler|tessel: moved to make room for $NS/big-move on node move-y (its 1st move in 24h)"
told() { [[ $(disruption "$mover_name") == "$want_disruption" ]]; }
it_wait 30 "DisruptionTarget=ConsolidationByScheduler naming big-move" told
moved_events() {
  kubectl get events -n "$NS" --field-selector reason=Moved \
    -o 'jsonpath={range .items[*]}{.involvedObject.name}|{.type}|{.message}{"\n"}{end}'
}
moved_event() { moved_events | matches -xF "$mover_name|Normal|moved to make room for $NS/big-move on node move-y (its 1st move in 24h)"; }
it_wait 30 "a Moved event on $mover_name naming big-move" moved_event
say "moved: $(moved_events)"
nominated_y() { [[ $(nominated_node big-move) == move-y ]]; }
it_wait 30 "big-move nominated to move-y" nominated_y
[[ $(layout move-2a move-2b) == "$stayers" ]] \
  || fail "the 2-GPU pods were disturbed (one move is the smallest set): $(layout move-2a move-2b)"

# The Job controller recreates the moved pod; its room on move-y is big-move's, so it goes to move-x.
replacement() { pods_of move-4 | grep -v "^$mover_name|" | matches '|move-x|$'; }
it_wait 120 "move-4's new pod bound to move-x" replacement
say "move-4 now: $(pods_of move-4 | xargs)"
[[ -z $(node_of big-move) ]] || fail "big-move was bound to $(node_of big-move) while the moved pod still holds its GPUs"

release "$mover_name"
it_wait 60 "big-move bound once the moved pod is gone" it_bound big-move
[[ $(node_of big-move) == move-y ]] || fail "big-move went to $(node_of big-move), want move-y"
say "big-move bound to move-y"

victims=$(metric "$SCHED_PORT_main" 'scheduler_preemption_victims_sum{reason="Consolidation"}')
[[ $victims == 1 ]] || fail "scheduler_preemption_victims_sum{reason=Consolidation} = '$victims', want 1"

# --- 4. Movable through the Queue -----------------------------------------------------------------
queue_mover=$(pods_of queue-4)
queue_mover_name=${queue_mover%%|*}
queue_stayers=$(layout queue-2a queue-2b)
it_pod big-queue --gpus 8 --select pool=queue
queue_moved() {
  moved_events | matches -xF "$queue_mover_name|Normal|moved to make room for $NS/big-queue on node queue-y (its 1st move in 24h)"
}
it_wait 60 "a Moved event on $queue_mover_name (movable through Queue $QMOVE) naming big-queue" queue_moved
it_wait 60 "big-queue bound" it_bound big-queue
[[ $(node_of big-queue) == queue-y ]] || fail "big-queue went to $(node_of big-queue), want queue-y"
queue_replacement() { pods_of queue-4 | grep -v "^$queue_mover_name|" | matches '|queue-x|$'; }
it_wait 120 "queue-4's new pod bound to queue-x" queue_replacement
[[ $(layout queue-2a queue-2b) == "$queue_stayers" ]] \
  || fail "pool queue's 2-GPU pods were disturbed: $(layout queue-2a queue-2b)"
say "queue-4 now: $(pods_of queue-4 | xargs)"

# --- 2, 3 at the end: many retries later, still nothing moved ------------------------------------
[[ $(layout fixed-2a fixed-2b fixed-4) == "$before_fixed" ]] \
  || fail "pool fixed changed although none of its pods is movable: $(layout fixed-2a fixed-2b fixed-4)"
[[ $(layout pdb-2a pdb-2b pdb-4) == "$before_pdb" ]] \
  || fail "pool pdb changed although its budget allows no disruption: $(layout pdb-2a pdb-2b pdb-4)"
for p in big-fixed big-pdb; do
  [[ -z $(node_of $p) ]] || fail "$p was bound to $(node_of $p)"
  [[ -z $(nominated_node $p) ]] || fail "$p nominated to $(nominated_node $p) although nothing was moved for it"
  unschedulable $p || fail "$p is not reported Unschedulable: $(cond $p)"
done
# The budget, checked before a plan's first eviction, kept pool pdb in place (its layout is pool
# move's, which gets a plan): no eviction in it was even asked, so none was refused (429) half
# way through a plan.
! grep -q "evict pod $NS/pdb-" "$(scheduler_log main)" \
  || fail "an eviction in pool pdb was asked although its budget allows none: $(grep "evict pod $NS/pdb-" "$(scheduler_log main)" | tail -n1)"
n=$(moved_events | grep -c . || true)
[[ $n == 2 ]] || fail "$n Moved events, want 2 (pools move and queue): $(moved_events)"
victims=$(metric "$SCHED_PORT_main" 'scheduler_preemption_victims_sum{reason="Consolidation"}')
[[ $victims == 2 ]] || fail "in the end scheduler_preemption_victims_sum{reason=Consolidation} = '$victims', want 2"
it_stop_scheduler main
exit 0
