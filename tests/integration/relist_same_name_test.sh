#!/usr/bin/env bash
# relist_same_name_test.sh: a pod deleted and re-created under the same name while the
# scheduler is cut off, so that it learns of it only from a relist after a 410 (issue 10 §1.3).
# The re-created pod (a new UID) must end bound, and the old pod's charge must be released:
# both ask all 8 GPUs of the test's only node, so the new pod fits only if the old one's
# GPUs were given back.
# The scheduler talks to a side apiserver. It is stopped; through the shared apiserver the pod
# is deleted and re-created, and etcd is compacted to the current revision; the side apiserver
# is started again with a fresh watch cache, so the scheduler's watches resume from a
# resourceVersion that is gone (410) and its informers relist.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin relist

it_nodes relist-0:8
side_apiserver_start
it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false
it_wait 60 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

uid_of() { kubectl get pod -n "$NS" "$1" -o 'jsonpath={.metadata.uid}'; }
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 8 web-0
it_wait 30 "web-0 bound" it_bound web-0
old_uid=$(uid_of web-0)

say "cutting the scheduler off (stopping the side apiserver)"
side_apiserver_stop
live_check delete --ns "$NS" web-0 >/dev/null
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 8 web-0
new_uid=$(uid_of web-0)
[[ -n $new_uid && $new_uid != "$old_uid" ]] || fail "web-0 was not re-created with a new UID"
[[ -z $(node_of web-0) ]] || fail "the re-created web-0 is already bound"
# Compact etcd up to its current revision: no watch can resume from before it.
etcd="http://127.0.0.1:$ETCD_CLIENT_PORT"
rev=$(curl -fsS -X POST "$etcd/v3/kv/range" -d '{"key":"Lw==","limit":1}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
curl -fsS -X POST "$etcd/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null \
  || fail "etcd compaction failed"
say "etcd compacted at revision $rev; starting the side apiserver again"
t_restart=$(now_epoch)
side_apiserver_start

it_wait 60 "the re-created web-0 bound" it_bound web-0
[[ $(uid_of web-0) == "$new_uid" ]] || fail "web-0 changed UID again"
lists=$(live_check audit-lists --audit "$SIDE_AUDIT" | awk -v t="$t_restart" '$1 > t' | wc -l)
((lists >= 1)) || fail "the scheduler did not list pods again after the restart (no relist: the test did not test it)"
say "web-0 (new UID) bound to $(node_of web-0) after a relist"
# The cache holds the new pod only: one more 1-GPU pod does not fit on the full node.
live_check create --ns "$NS" --select "tessel-it=$IT_NAME" --gpus 1 extra
unschedulable() {
  [[ $(kubectl get pod -n "$NS" extra \
    -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}') == Unschedulable ]]
}
it_wait 30 "one more pod reported Unschedulable on the full node" unschedulable
live_check check --ns "$NS" --nodes "tessel-it=$IT_NAME" >/dev/null || fail "overcommit"
kill -0 "$SCHED_PID_main" 2>/dev/null || fail "the scheduler exited"
it_stop_scheduler main
exit 0
