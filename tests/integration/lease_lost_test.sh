#!/usr/bin/env bash
# lease_lost_test.sh: the leader loses its Lease while it is alive and busy (issue 10 §1.8).
# The scheduler leads (lease 6 s, renew deadline 4 s, retry 1 s) and binds 12 pods at client
# QPS 2, so binds wait in its backlog; once the first is bound another holder ("intruder")
# takes the Lease kube-system/tessel-scheduler and keeps renewing it. From then on:
#   - the old leader sends no write to pods (bind, PATCH, status) later than the renew deadline
#     after the takeover (+1 s for a request already on the wire);
#   - it does not take the Lease back while the intruder renews it.
# When the intruder lets the Lease go, a scheduler (the same process if it is still running,
# or a restarted one, as a Deployment would) leads again and binds every pod left: none lost.
# The scheduler talks to a side apiserver whose audit log has its every pod write.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin leaselost

LEASE=kube-system/tessel-scheduler
RENEW_DEADLINE=4
kubectl delete lease -n kube-system tessel-scheduler >/dev/null 2>&1 || true
it_nodes leaselost-0:8 leaselost-1:8
side_apiserver_start
le_flags=(--kubeconfig "$SIDE_KUBECONFIG" --leader-elect=true --lock-namespace kube-system
  --leader-elect-lease-duration 6s --leader-elect-renew-deadline "${RENEW_DEADLINE}s"
  --leader-elect-retry-period 1s)
it_start_scheduler first "${le_flags[@]}" --kube-api-qps 2 --kube-api-burst 1
holder() { kubectl get lease -n kube-system tessel-scheduler -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
leads() { [[ -n $(holder) && $(holder) != intruder ]]; }
it_wait 60 "the scheduler leads" leads
leader_id=$(holder)
say "leader: $leader_id"

mapfile -t pods < <(pod_names p $(seq 0 11))
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 1 "${pods[@]}"
it_wait 60 "a first pod bound" it_some_bound

took="$IT_WORK/took"
python3 "$LIVE_CHECK" --kubeconfig "$KUBECONFIG" intruder --lease "$LEASE" --took "$took" \
  --lease-seconds 10 --period 1 >>"$IT_WORK/intruder.log" 2>&1 &
intruder=$!
IT_PIDS+=("$intruder")
it_wait 30 "the intruder holds the lease" test -s "$took"
t_took=$(cat "$took")
bound_at_takeover=$(it_count_bound)
say "lease taken over with $bound_at_takeover of 12 pods bound"
((bound_at_takeover < 12)) || fail "every pod was bound before the takeover; nothing was tested"

# Long enough for the old leader to notice and for a backlog to drain if it did not stop.
sleep $((RENEW_DEADLINE + 8))
[[ $(holder) == intruder ]] || fail "the old leader took the lease back from a live holder ($(holder))"
deadline=$(python3 -c "print($t_took + $RENEW_DEADLINE + 1)")
late=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS" --after "$deadline" --writes)
[[ -z $late ]] || fail "the old leader wrote to pods more than ${RENEW_DEADLINE}s after losing the lease: $late"
if kill -0 "$SCHED_PID_first" 2>/dev/null; then
  [[ $(metric "$SCHED_PORT_first" tessel_leader) == 0 ]] || fail "the old leader still says it leads"
  say "the old leader is alive and follows"
  next=first
else
  say "the old leader exited (as kube-scheduler does on a lost lease)"
  next=second
fi

say "the intruder lets the lease go"
kill -TERM "$intruder" 2>/dev/null || true
wait "$intruder" 2>/dev/null || true
kubectl delete lease -n kube-system tessel-scheduler >/dev/null
[[ $next == second ]] && it_start_scheduler second "${le_flags[@]}"
all_bound() { (($(it_count_bound) == 12)); }
it_wait 60 "every pod bound after leadership came back" all_bound
live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" --all-bound >/dev/null || fail "overcommit"
it_stop_scheduler "$next"
exit 0
