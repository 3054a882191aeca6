#!/usr/bin/env bash
# stranded_gang_test.sh: a gang left half bound by a crash is rolled back (issue 37, defect 12).
# The scheduler binds a PodGroup of 4 four-GPU members on two 8-GPU nodes through a slow client
# and is killed with SIGKILL once some, not all, are bound. The nodes are then cordoned, so the
# rest cannot follow. The restarted scheduler evicts the bound members with a Warning event
# GangRolledBack: no member keeps its GPUs. (The PodGroup's reason RolledBack is checked in
# tests/gang/gang_core_test.cc: here the gang moves on to waiting for members at once.)
source "$(dirname "$0")/lib.sh"
it_begin stranded

kubectl apply -f "$TESSEL_ROOT/manifests/crds/podgroups.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/podgroups.scheduling.x-k8s.io >/dev/null \
  || fail "PodGroup CRD not established"

it_nodes stranded-0:8 stranded-1:8
it_podgroup train 4
for i in 0 1 2 3; do it_pod "train-$i" --gpus 4 --label scheduling.x-k8s.io/pod-group=train; done

# One write a second: the kill lands between the gang's binds.
it_kill_mid_run first 1 1 4
held=$KILLED_AT
kubectl cordon stranded-0 stranded-1 >/dev/null

it_start_scheduler second --leader-elect=false
rolled_back_event() {
  kubectl get events -n "$NS" --field-selector reason=GangRolledBack -o 'jsonpath={.items[*].message}' \
    | matches "PodGroup $NS/train holds $held of 4 members placed since before the scheduler started"
}
it_wait 60 "a GangRolledBack event" rolled_back_event
it_wait 60 "no member bound" eval '(( $(it_count_bound) == 0 ))'
say "restart: $held bound member(s) evicted with GangRolledBack"

it_stop_scheduler second
exit 0
