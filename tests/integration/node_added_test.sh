#!/usr/bin/env bash
# node_added_test.sh: a pending pod that fits nowhere is bound as soon as a node that fits is
# added (the NodeAdd event moves it out of the unschedulable queue; no 5-minute wait).
source "$(dirname "$0")/lib.sh"
it_begin nodeadd

it_nodes nodeadd-small:1
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

it_pod waits-for-node --gpus 4 --select pool=late
unschedulable() {
  [[ $(kubectl get pod -n "$NS" waits-for-node \
    -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}') == Unschedulable ]]
}
it_wait 30 "pod reported Unschedulable" unschedulable

t0=$SECONDS
it_nodes nodeadd-small:1 nodeadd-late:8:pool=late
it_wait 20 "pod bound after the node was added" it_bound waits-for-node
[[ $(node_of waits-for-node) == nodeadd-late ]] || fail "bound to $(node_of waits-for-node)"
say "bound $((SECONDS - t0)) s after the node was added"

it_stop_scheduler main
exit 0
