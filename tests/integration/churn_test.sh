#!/usr/bin/env bash
# churn_test.sh: no overcommit under churn (issue 10 §1.1, §1.9). 24 simulated nodes x 8 GPUs;
# 150 one-GPU pods are created, the scheduler started, a third of the pods (every third name)
# deleted while it binds them (client QPS 20, so binds are in flight), and half of the deleted
# names re-created asking 2 GPUs. While it settles and at the end, on every node the bound pods' GPUs fit its
# capacity and no GPU device (tessel.io/gpu-devices) is given to two whole-GPU pods; in the end
# every live pod is bound. The apiserver never answered a bind with "already assigned" (a pod
# bound twice, the "already bound" rescheduling) and the scheduler log has no "already bound".
# A 404, a 409 "being deleted" or a 409 whose UID precondition failed is allowed for a deleted name: a bind sent for
# a pod deleted (and re-created under the same name) before the scheduler saw the delete.
# Demand: 100 x 1 + 25 x 2 = 150 of 192 GPUs, so every pod fits whatever the holes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin churn

it_nodes_n churn 24 8
side_apiserver_start

mapfile -t all < <(pod_names p $(seq 0 149))
# Every third name, the last created first: the scheduler binds in about creation order, so the
# first deletes reach pods it has not bound yet even when the deletes are slow (a loaded machine
# once bound all 150 while the deletes went from p-000 up).
mapfile -t deleted < <(pod_names p $(seq 147 -3 0))    # 50
mapfile -t recreated < <(pod_names p $(seq 0 6 149))   # 25
# The pods exist before the scheduler starts, so that at 20 binds a second it needs about 7 s for
# them all and the deletes begin with most unbound: created while it ran, 127 of 150 were bound
# when the creation ended on a loaded machine, and the rest before the first delete.
say "creating ${#all[@]} one-GPU pods"
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 1 "${all[@]}"
it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false \
  --kube-api-qps 20 --kube-api-burst 20
it_wait 60 "the first binds" it_some_bound
bound_now=$(it_count_bound)
say "deleting ${#deleted[@]} pods while they are scheduled ($bound_now bound so far)"
unbound_at_delete=$(live_check delete --ns "$NS" --report-unbound "${deleted[@]}")
n_inflight=$(wc -w <<<"$unbound_at_delete")
say "$n_inflight of them were still unbound when deleted"
((n_inflight > 0)) || fail "every deleted pod was already bound: nothing was deleted in flight"
live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" >/dev/null || fail "overcommit after the deletes"
say "re-creating ${#recreated[@]} of the deleted names asking 2 GPUs"
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 2 "${recreated[@]}"

live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" --settle 60 \
  || fail "the cluster did not settle with every pod bound and no overcommit"
(($(kubectl get pods -n "$NS" --no-headers | wc -l) == 125)) || fail "want 125 live pods"

# Every bind the apiserver took: none was refused for anything but a stale UID.
binds=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS")
# A bind sent just before the scheduler saw its pod's delete is refused with 404 (the pod is gone),
# with 409 "being deleted" (a delete writes deletionTimestamp before it removes the pod, even with
# grace period 0) or, once the name is re-created, by the UID precondition (409 stale-uid).
refused=$(awk '$5 != "ok" && $5 != "stale-uid" && $5 != "deleting" && $2 != 404' <<<"$binds")
[[ -z $refused ]] || fail "binds refused (already-assigned is a double bind): $(head -5 <<<"$refused")"
# Those refusals are only possible for a name that was deleted (every third name).
gone=$(awk '$5 == "stale-uid" || $5 == "deleting" || $2 == 404 {print $1}' <<<"$binds")
for p in $gone; do ((10#${p#p-} % 3 == 0)) || fail "bind of $p refused as gone but $p was never deleted"; done
say "the apiserver saw $(wc -l <<<"$binds") bind requests: $(awk '{print $2 "/" $5}' <<<"$binds" | sort | uniq -c | tr '\n' ' ')"
grep -q "already bound" "$(scheduler_log main)" && fail "the scheduler log shows binds of already bound pods"
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler exited"
it_stop_scheduler main
exit 0
