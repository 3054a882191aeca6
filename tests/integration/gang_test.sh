#!/usr/bin/env bash
# gang_test.sh: a PodGroup applied with kubectl is placed whole: all of its pods bound, its
# status Scheduled. A second gang that cannot fit binds none of its pods, its members get
# FailedScheduling events and its PodGroup a condition that says what is short. Once placed, the
# PodGroup follows its members' pod phases (the local cluster's simulated kubelet runs them, and
# finishes those annotated tessel.io/sim-duration): Running, then Finished, with the counts. A
# pod whose PodGroup does not exist waits quietly and is bound once the group appears.
source "$(dirname "$0")/lib.sh"
it_begin gang

kubectl apply -f "$TESSEL_ROOT/manifests/crds/podgroups.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/podgroups.scheduling.x-k8s.io >/dev/null \
  || fail "PodGroup CRD not established"

it_nodes gang-a:8 gang-b:8
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# member GROUP NAME GPUS [RUN-FOR]
member() {
  it_pod "$2" --gpus "$3" --label "scheduling.x-k8s.io/pod-group=$1" \
    ${4:+--annotation "tessel.io/sim-duration=$4"}
}

# 4 x 4 GPUs on 2 x 8 GPUs: the whole gang fits, two members per node.
it_podgroup train 4
for i in 0 1 2 3; do member train train-$i 4; done
for i in 0 1 2 3; do it_wait 60 "train-$i bound" it_bound train-$i; done
declare -A per_node=()
for i in 0 1 2 3; do n=$(node_of train-$i); per_node[$n]=$((${per_node[$n]:-0} + 1)); done
for n in gang-a gang-b; do
  [[ ${per_node[$n]:-0} == 2 ]] || fail "node $n holds ${per_node[$n]:-0} members of train, want 2"
done
phase() { kubectl get podgroup -n "$NS" "$1" -o 'jsonpath={.status.phase}'; }
is_phase() { [[ $(phase "$1") == "$2" ]]; }
# Placed, then Running as the kubelet starts its members.
it_wait 30 "train status Running" is_phase train Running

# A second gang: no GPU left. None of its pods is bound, and the PodGroup says why.
it_podgroup wait 2
member wait wait-0 4 20s
member wait wait-1 4 20s
condition() { kubectl get podgroup -n "$NS" wait -o 'jsonpath={.status.conditions[0].message}'; }
has_condition() { [[ $(condition) == *"needs 2 × 4 GPUs"* ]]; }
it_wait 30 "wait condition" has_condition
say "wait: $(condition)"
failed_events() {
  kubectl get events -n "$NS" --field-selector involvedObject.name=wait-0,reason=FailedScheduling -o name | matches .
}
it_wait 30 "FailedScheduling for wait-0" failed_events
[[ -z $(node_of wait-0) && -z $(node_of wait-1) ]] || fail "a member of the gang that does not fit was bound"

# The first gang leaves: the second is placed whole.
kubectl delete pod -n "$NS" train-0 train-1 train-2 train-3 --wait=false >/dev/null
for p in wait-0 wait-1; do it_wait 60 "$p bound" it_bound "$p"; done

# Its members run for 20 s, then succeed: the PodGroup's phase and counts follow.
counts() { kubectl get podgroup -n "$NS" wait -o 'jsonpath={.status.phase} {.status.scheduled} {.status.running} {.status.succeeded}'; }
it_wait 20 "wait Running" is_phase wait Running
[[ $(counts) == "Running 2 2 0" ]] || fail "wait: phase scheduled running succeeded = $(counts), want Running 2 2 0"
it_wait 60 "wait Finished" is_phase wait Finished
[[ $(counts) == "Finished 2 0 2" ]] || fail "wait: phase scheduled running succeeded = $(counts), want Finished 2 0 2"
say "wait: $(counts) (phase scheduled running succeeded)"

# A pod whose PodGroup does not exist yet: no events, then bound when the group appears.
member late late-0 1
sleep 3
[[ -z $(node_of late-0) ]] || fail "late-0 bound before its PodGroup existed"
n=$(kubectl get events -n "$NS" --field-selector involvedObject.name=late-0 -o name | wc -l)
((n == 0)) || fail "late-0 got $n events while waiting for its PodGroup"
it_podgroup late 1
it_wait 60 "late-0 bound" it_bound late-0

it_stop_scheduler main
exit 0
