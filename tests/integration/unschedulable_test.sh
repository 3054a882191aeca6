#!/usr/bin/env bash
# unschedulable_test.sh: a pod no node can take gets a FailedScheduling event and the condition
# PodScheduled=False with reason Unschedulable and a kube-scheduler style message; retries do
# not flood events (deduplicated).
source "$(dirname "$0")/lib.sh"
it_begin unsched

it_nodes unsched-0:2 unsched-1:2
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

it_pod too-big --gpus 4
cond() {
  kubectl get pod -n "$NS" too-big \
    -o 'jsonpath={range .status.conditions[?(@.type=="PodScheduled")]}{.status}|{.reason}|{.message}{end}'
}
has_condition() { [[ $(cond) == False\|Unschedulable\|* ]]; }
it_wait 30 "PodScheduled=False condition" has_condition
msg=$(cond)
msg=${msg#False|Unschedulable|}
say "condition message: $msg"
[[ $msg == "0/"*" nodes are available: "*"2 Insufficient nvidia.com/gpu"* ]] \
  || fail "unexpected message: $msg"

events() {
  kubectl get events -n "$NS" --field-selector involvedObject.name=too-big,reason=FailedScheduling \
    -o 'jsonpath={range .items[*]}{.type}|{.source.component}|{.count}|{.message}{"\n"}{end}'
}
has_event() { [[ -n $(events) ]]; }
it_wait 30 "FailedScheduling event" has_event
ev=$(events | head -n1)
[[ $ev == "Warning|tessel|"*"|$msg" ]] || fail "unexpected event: $ev"
[[ -z $(node_of too-big) ]] || fail "too-big was bound"

# A node update that does not help triggers a retry; the same message is not posted again.
kubectl label node unsched-0 touched=yes >/dev/null
sleep 2
n=$(events | wc -l)
((n == 1)) || fail "$n FailedScheduling events, want 1 (deduplicated)"

it_stop_scheduler main
exit 0
