#!/usr/bin/env bash
# leader_election_test.sh: two replicas with leader election on the Lease
# kube-system/tessel-scheduler (the manifests' Role allows only that one). Exactly one leads
# and binds; when the leader is killed with SIGKILL the other takes the lease within 20 s and
# binds the pods created meanwhile. The replicas never lead at the same time.
source "$(dirname "$0")/lib.sh"
it_begin leader

kubectl delete lease -n kube-system tessel-scheduler >/dev/null 2>&1 || true
it_nodes leader-0:8
it_start_scheduler a --leader-elect=true --lock-namespace kube-system
it_start_scheduler b --leader-elect=true --lock-namespace kube-system
holder() { kubectl get lease -n kube-system tessel-scheduler -o 'jsonpath={.spec.holderIdentity}'; }
identity() { sed -n 's/.*campaigning for lease .* as "\(.*\)"$/\1/p' "$(scheduler_log "$1")" | head -n1; }
id_a=$(identity a)
id_b=$(identity b)
[[ -n $id_a && -n $id_b && $id_a != "$id_b" ]] || fail "identities '$id_a' '$id_b'"
has_holder() { [[ $(holder) == "$id_a" || $(holder) == "$id_b" ]]; }
it_wait 30 "a leader" has_holder
if [[ $(holder) == "$id_a" ]]; then leader=a; follower=b; else leader=b; follower=a; fi
leader_port_var="SCHED_PORT_$leader"; follower_port_var="SCHED_PORT_$follower"
leader_pid_var="SCHED_PID_$leader"
say "leader is $leader ($(holder))"
it_wait 30 "leader ready" scheduler_ready "${!leader_port_var}"
it_wait 30 "follower ready (leader known)" scheduler_ready "${!follower_port_var}"
[[ $(metric "${!leader_port_var}" tessel_leader) == 1 ]] || fail "leader's tessel_leader != 1"
[[ $(metric "${!follower_port_var}" tessel_leader) == 0 ]] || fail "follower's tessel_leader != 0"

for i in 0 1 2; do it_pod first-$i --gpus 1; done
for i in 0 1 2; do it_wait 30 "first-$i bound" it_bound first-$i; done
grep -q "bound pod" "$(scheduler_log "$follower")" && fail "the follower bound pods"
[[ $(metric "${!follower_port_var}" tessel_leader) == 0 ]] || fail "follower leads too"

say "killing the leader ($leader) with SIGKILL"
kill -KILL "${!leader_pid_var}"
t0=$(date +%s%N)
for i in 0 1 2; do it_pod second-$i --gpus 1; done
follower_id=$([[ $follower == a ]] && echo "$id_a" || echo "$id_b")
took_over() { [[ $(holder) == "$follower_id" ]]; }
it_wait 25 "the follower takes the lease" took_over
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
say "takeover after $((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000))) s"
((elapsed_ms <= 20000)) || fail "takeover took $elapsed_ms ms (> 20 s)"
for i in 0 1 2; do it_wait 20 "second-$i bound by the new leader" it_bound second-$i; done
for i in 0 1 2; do
  grep -q "bound pod $NS/second-$i" "$(scheduler_log "$follower")" || fail "second-$i not bound by $follower"
done
[[ $(kubectl get lease -n kube-system tessel-scheduler -o 'jsonpath={.spec.leaseTransitions}') -ge 1 ]] \
  || fail "leaseTransitions not incremented"

# A graceful stop releases the lease at once.
it_stop_scheduler "$follower"
[[ -z $(holder) ]] || fail "lease still held by '$(holder)' after a graceful stop"
exit 0
