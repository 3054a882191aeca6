#!/usr/bin/env bash
# shutdown_test.sh: on SIGTERM the leader stops binding at once; it does not drain its bind
# backlog. With a client budget of 1 request/s and 40 pods waiting, the scheduler exits within
# 10 s of SIGTERM (it_stop_scheduler), releases the Lease, and leaves the rest of the pods
# unbound for the next leader, which then binds them all.
source "$(dirname "$0")/lib.sh"
it_begin shutdown

kubectl delete lease -n kube-system tessel-scheduler >/dev/null 2>&1 || true
it_nodes shutdown-0:64
it_start_scheduler slow --leader-elect=true --lock-namespace kube-system \
  --kube-api-qps 1 --kube-api-burst 1
holder() { kubectl get lease -n kube-system tessel-scheduler -o 'jsonpath={.spec.holderIdentity}'; }
has_holder() { [[ -n $(holder) ]]; }
it_wait 60 "the slow scheduler leads" has_holder
it_wait 60 "scheduler ready" scheduler_ready "$SCHED_PORT_slow"
for i in $(seq 0 39); do it_pod p-$i --gpus 1; done
it_wait 60 "a first bind" it_some_bound
it_stop_scheduler slow   # fails unless the process exits within 10 s of SIGTERM
bound=$(it_count_bound)
say "bound when stopped: $bound of 40"
((bound < 40)) || fail "all 40 pods were bound: the backlog was drained"
[[ -z $(holder) ]] || fail "lease still held by '$(holder)' after SIGTERM"
grep -q "released the lease" "$(scheduler_log slow)" || fail "no lease release in the log"

# The next leader (full budget) binds the rest.
it_start_scheduler next --leader-elect=true --lock-namespace kube-system
all_bound() { (($(it_count_bound) == 40)); }
it_wait 60 "all 40 bound by the next leader" all_bound
it_stop_scheduler next
exit 0
