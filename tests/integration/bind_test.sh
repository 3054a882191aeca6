#!/usr/bin/env bash
# bind_test.sh: pods with schedulerName tessel are bound to the right nodes (node selectors,
# GPU capacity), each gets a Scheduled event, and pods of other schedulers are ignored.
# Also checks /metrics.
source "$(dirname "$0")/lib.sh"
it_begin bind

it_nodes bind-a:8:pool=a bind-b:8:pool=b bind-c:2:pool=c
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

it_pod pinned-b --gpus 1 --select pool=b
it_pod needs-six --gpus 6              # only bind-a or bind-b have 6 GPUs
for i in 0 1 2 3 4 5; do it_pod small-$i --gpus 1; done
it_pod default-sched --gpus 1 --scheduler default-scheduler
it_pod other-sched --gpus 1 --scheduler someone-else

for p in pinned-b needs-six small-0 small-1 small-2 small-3 small-4 small-5; do
  it_wait 30 "$p bound" it_bound "$p"
done
[[ $(node_of pinned-b) == bind-b ]] || fail "pinned-b on $(node_of pinned-b), want bind-b"
[[ $(node_of needs-six) == bind-[ab] ]] || fail "needs-six on $(node_of needs-six), want bind-a or bind-b"

# No node holds more GPUs than it has: 1 + 6 + 6 x 1 = 13 GPUs on 8 + 8 + 2.
declare -A used=()
for p in pinned-b needs-six small-0 small-1 small-2 small-3 small-4 small-5; do
  n=$(node_of "$p")
  g=$(kubectl get pod -n "$NS" "$p" -o 'jsonpath={.spec.containers[0].resources.limits.nvidia\.com/gpu}')
  used[$n]=$((${used[$n]:-0} + g))
done
for n in "${!used[@]}"; do
  cap=$(kubectl get node "$n" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')
  ((used[$n] <= cap)) || fail "node $n holds ${used[$n]} GPUs but has $cap"
done

# Scheduled events, from tessel.
ev=$(kubectl get events -n "$NS" --field-selector involvedObject.name=pinned-b,reason=Scheduled \
  -o 'jsonpath={.items[0].source.component} {.items[0].message}')
[[ $ev == "tessel Successfully assigned $NS/pinned-b to bind-b" ]] || fail "Scheduled event: '$ev'"

# Pods of other schedulers stay untouched: unbound and no events from tessel.
sleep 1
for p in default-sched other-sched; do
  [[ -z $(node_of "$p") ]] || fail "$p was bound by tessel"
  n=$(kubectl get events -n "$NS" --field-selector "involvedObject.name=$p" -o name | wc -l)
  ((n == 0)) || fail "$p got $n events"
  c=$(kubectl get pod -n "$NS" "$p" -o 'jsonpath={.status.conditions}')
  [[ -z $c ]] || fail "$p got conditions $c"
done

# Metrics.
m=$(metric "$SCHED_PORT_main" 'scheduler_schedule_attempts_total{result="scheduled",profile="tessel"}')
((m >= 8)) || fail "scheduled attempts metric is '$m', want >= 8"
alloc=$(metric "$SCHED_PORT_main" tessel_gpu_allocatable)
((alloc >= 18)) || fail "tessel_gpu_allocatable is '$alloc', want >= 18"
# Read whole first: `curl | grep -q` fails under pipefail when grep exits before curl has written
# everything (curl: (23) Failed writing body).
all_metrics=$(curl -fsS "http://127.0.0.1:$SCHED_PORT_main/metrics")
grep -q '^scheduler_scheduling_attempt_duration_seconds_bucket{result="scheduled",profile="tessel",le="+Inf"}' <<<"$all_metrics" \
  || fail "no attempt duration histogram"
grep -q '^scheduler_pending_pods{queue="active"}' <<<"$all_metrics" \
  || fail "no pending pods gauge"

it_stop_scheduler main
grep -q "already bound" "$(scheduler_log main)" && fail "bind conflicts in the log"
exit 0
