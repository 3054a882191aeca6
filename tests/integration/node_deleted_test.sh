#!/usr/bin/env bash
# node_deleted_test.sh: binds waiting in the binder backlog are rechecked against the node
# (issue 10 §1.6). The scheduler (client QPS 1, so binds queue up) assumes 8 pods on the only
# node that fits them (created once the scheduler watches nodes); as soon as the first is bound
# the node is deleted and another node with the same labels is added. No bind to the deleted node may be sent after its deletion (one
# that was already on its way is tolerated), and every pod that was not bound before the
# deletion ends bound to the new node.
# The scheduler talks to a side apiserver whose audit log has every bind with its target and
# the node's deletion.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin nodedel

it_nodes nodedel-a:8:pool=nodedel
side_apiserver_start
it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false \
  --kube-api-qps 1 --kube-api-burst 1
it_wait 60 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
# At QPS 1 the informers' watches leave one per second after their lists: until the node watch
# is sent the scheduler cannot hear of the deletion, whatever it rechecks.
node_watch_sent() { (($(metric "$SCHED_PORT_main" 'tessel_informer_watches_total{resource="nodes"}') >= 1)); }
it_wait 60 "the scheduler's node watch" node_watch_sent

mapfile -t pods < <(pod_names p $(seq 0 7))
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --select pool=nodedel --gpus 1 "${pods[@]}"
it_wait 60 "a first pod bound" it_some_bound
kubectl --kubeconfig "$SIDE_ADMIN" delete node nodedel-a --wait=false >/dev/null
t_delete=$(now_epoch)
bound_before=$(it_count_bound)
say "deleted node nodedel-a with $bound_before pods bound to it; adding nodedel-b"
it_nodes nodedel-b:8:pool=nodedel

# Pods bound before the deletion stay bound to nodedel-a (until pod GC, which may delete them);
# the others go to nodedel-b.
none_unbound() {
  [[ -z $(kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' | grep '=$') ]]
}
it_wait 60 "every pod bound" none_unbound

late=$(live_check audit-binds --audit "$SIDE_AUDIT" --ns "$NS" --node nodedel-a --after "$t_delete" \
  | awk '$2 == 201')
n_late=$(grep -c . <<<"$late" || true)
say "binds to nodedel-a accepted after its deletion: $n_late"
((n_late <= 1)) || fail "$n_late binds to the deleted node were sent after its deletion: $late"
# No pod created by this test is bound to a node that is gone, except those bound before.
on_a=$(kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c '^nodedel-a$' || true)
((on_a <= bound_before + 1)) || fail "$on_a pods bound to the deleted node (only $bound_before were bound before its deletion)"
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler exited"
it_stop_scheduler main
exit 0
