#!/usr/bin/env bash
# deleted_in_flight_test.sh: a pod deleted while its bind waits in the binder backlog ends its
# life in the scheduler (issue 10 §1.2): at most the one bind that may already be on its way,
# answered 404, and nothing after it (no requeue, no repeated bind/404 loop, no events for the
# deleted pod; of all its writes, only the one already on its way may reach the apiserver
# after the delete). The other pods are bound as usual.
# The scheduler runs at client QPS 1 against a side apiserver whose audit log counts every bind
# request; 10 pods are created, and the last 4 deleted as soon as the first one is bound.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin inflight

it_nodes inflight-0:8 inflight-1:8
side_apiserver_start
it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false \
  --kube-api-qps 1 --kube-api-burst 1
it_wait 60 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

mapfile -t keep < <(pod_names p $(seq 0 5))
mapfile -t victims < <(pod_names p $(seq 6 9))
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 1 "${keep[@]}" "${victims[@]}"
it_wait 60 "a first pod bound" it_some_bound
unbound=$(live_check delete --ns "$NS" --report-unbound "${victims[@]}")
t_delete=$(now_epoch)
read -r -a unbound <<<"$unbound"
say "deleted ${#victims[@]} pods; ${#unbound[@]} were still unbound: ${unbound[*]}"
((${#unbound[@]} >= 2)) || fail "the victims were bound before the delete; nothing was in flight"

# The kept pods get bound; then the scheduler has time for several backoff rounds (1 s, 2 s,
# 4 s, 8 s) in which a pod that is put back in the queue would be tried again.
live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" --settle 60 \
  || fail "the pods that were not deleted were not all bound"
sleep 16

for v in "${unbound[@]}"; do
  attempts=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS" | awk -v p="$v" '$1 == p' | wc -l)
  after=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS" --after "$t_delete" | awk -v p="$v" '$1 == p')
  say "$v: $attempts bind requests in all; answered after the delete: $(awk '{print $2}' <<<"$after" | tr '\n' ' ')"
  ((attempts <= 1)) || fail "$v was deleted in flight but the scheduler sent $attempts binds for it"
  writes=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS" --after "$t_delete" --writes \
    | awk -v p="$v" '$1 == p' | wc -l)
  ((writes <= 1)) || fail "$v: $writes pod writes (bind, PATCH, status) after its delete"
  events=$(kubectl get events -n "$NS" --field-selector "involvedObject.name=$v" \
    -o 'jsonpath={range .items[*]}{.reason}{" "}{.count}{"\n"}{end}')
  [[ -z $events ]] || fail "$v: events for a pod deleted before its bind: $events"
done
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler exited"
it_stop_scheduler main
exit 0
