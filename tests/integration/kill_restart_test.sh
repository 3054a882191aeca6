#!/usr/bin/env bash
# kill_restart_test.sh: the scheduler is killed with SIGKILL in the middle of binding a batch
# and started again. Every pod that fits is bound exactly once (no pod bound twice, no node over
# capacity, no bind conflicts after the restart), none is lost, and the pods that do not fit
# are reported Unschedulable.
source "$(dirname "$0")/lib.sh"
it_begin restart

it_nodes restart-0:8 restart-1:8 restart-2:8 restart-3:8   # 32 GPUs
for i in $(seq -w 0 35); do it_pod p-$i --gpus 1; done     # 36 pods: 32 fit

# Slow client QPS so that the kill lands mid-run.
it_kill_mid_run first 4 6 32

it_start_scheduler second --leader-elect=false
all_bound() { (($(it_count_bound) == 32)); }
it_wait 60 "32 pods bound" all_bound
pending_reported() {
  local n
  n=$(kubectl get pods -n "$NS" -o \
    'jsonpath={range .items[*]}{.metadata.name}|{.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' \
    | grep -c '|Unschedulable$')
  ((n == 4))
}
it_wait 30 "the 4 pods that do not fit reported Unschedulable" pending_reported
sleep 2
(($(it_count_bound) == 32)) || fail "$(it_count_bound) pods bound, want 32"

# Exactly 8 GPUs per node: each bound pod counted once, none on a full node.
per_node=$(kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' \
  | grep . | sort | uniq -c | awk '{print $1}' | sort -u)
[[ $per_node == 8 ]] || fail "pods per node: $per_node (want 8 on each)"
# No pod bound twice: across both runs each pod appears in at most one "bound pod" log line, and
# the restarted scheduler never hit an already-bound pod.
dups=$(cat "$(scheduler_log first)" "$(scheduler_log second)" | grep -o 'bound pod [^ ]*' | sort | uniq -d)
[[ -z $dups ]] || fail "pods bound twice: $dups"
grep -q "already bound" "$(scheduler_log second)" && fail "bind conflicts after the restart"
first=$(grep -c 'bound pod ' "$(scheduler_log first)" || true)
second=$(grep -c 'bound pod ' "$(scheduler_log second)" || true)
say "first run logged $first binds, second run $second (32 in all; a bind in flight at the kill may be unlogged)"
((first + second <= 32 && first + second >= 30)) || fail "binds logged: $first + $second"

it_stop_scheduler second
exit 0
