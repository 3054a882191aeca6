#!/usr/bin/env bash
# queue_status_test.sh: the leader writes Queue and PodGroup statuses, and `kubectl get` shows
# them through the CRDs' printer columns. Two queues of one cohort: team A runs 3 one-GPU pods
# on a nominal quota of 2 (borrowing 1, which team B lends), and waits with an 8-GPU pod and a
# gang of two 8-GPU pods that no node can hold; team B runs 1 pod. The statuses carry the pending
# (gang members included) and admitted counts, usage, borrowed and lent GPUs, the oldest
# pending pod and condition Active; `kubectl get queues` shows them in its columns. A newer
# Queue listing team A's namespace gets Conflict=True with the message, a Queue that does not
# decode (schema-valid, a limit beyond int64) Active=False; the gang's PodGroup shows its phase
# and why it waits.
source "$(dirname "$0")/lib.sh"
it_begin qstatus

for crd in queues podgroups; do
  kubectl apply -f "$TESSEL_ROOT/manifests/crds/$crd.yaml" >/dev/null
done
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io crd/podgroups.scheduling.x-k8s.io >/dev/null \
  || fail "CRDs not established"
QA="$NS-a" QB="$NS-b" QNEW="$NS-newer" QBAD="$NS-bad" COHORT="$NS-cohort"
cleanup_queues() { kubectl delete queues.tessel.io "$QA" "$QB" "$QNEW" "$QBAD" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queues
it_on_exit cleanup_queues

kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QA}
spec: {cohort: $COHORT, namespaces: [$NS], nominalQuota: {nvidia.com/gpu: "2"}}
---
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QB}
spec:
  cohort: $COHORT
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  nominalQuota: {nvidia.com/gpu: "4"}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: big, namespace: $NS}
spec: {minMember: 2}
YAML

it_nodes qstatus-0:4 qstatus-1:4
it_start_scheduler main --leader-elect=false --queue-status-interval 1s
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

for i in 0 1 2; do it_pod a-$i --gpus 1; done
it_pod b-0 --gpus 1 --label "tessel.io/queue=$QB"
for p in a-0 a-1 a-2 b-0; do it_wait 60 "$p bound" it_bound "$p"; done
it_pod a-huge --gpus 8
for i in 0 1; do it_pod big-$i --gpus 8 --label scheduling.x-k8s.io/pod-group=big; done

status() { kubectl get queues.tessel.io "$1" -o "jsonpath=$2"; }
is_status() { [[ $(status "$1" "$2") == "$3" ]]; }
summary='{.status.pendingPods} {.status.admittedPods} {.status.usage.nvidia\.com/gpu} {.status.borrowed.nvidia\.com/gpu} {.status.lent.nvidia\.com/gpu}'
it_wait 30 "$QA status: 3 pending, 3 admitted, 3 GPUs used, 1 borrowed" is_status "$QA" "$summary" "3 3 3 1 0"
it_wait 30 "$QB status: 0 pending, 1 admitted, 1 GPU used, 1 lent" is_status "$QB" "$summary" "0 1 1 0 1"
active='{.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Conflict")].status}'
is_status "$QA" "$active" "True/False" || fail "$QA conditions: $(status "$QA" "$active")"
[[ -n $(status "$QA" '{.status.oldestPendingSince}') ]] || fail "$QA: no oldestPendingSince"
[[ -z $(status "$QB" '{.status.oldestPendingSince}') ]] || fail "$QB: oldestPendingSince with nothing pending"
wait_s=$(status "$QA" '{.status.oldestPendingWaitSeconds}')
[[ $wait_s =~ ^[0-9]+$ ]] || fail "$QA oldestPendingWaitSeconds \"$wait_s\""

# The printer columns, as a user reads them.
table=$(kubectl get queues.tessel.io "$QA" "$QB")
say "kubectl get queues.tessel.io:"$'\n'"$table"
header=$(head -1 <<<"$table" | tr -s ' ')
[[ $header == "NAME COHORT PENDING ADMITTED GPUS GPU USAGE BORROWED OLDEST PENDING ACTIVE AGE" ]] \
  || fail "header: $header"
row() { awk -v q="$1" '$1 == q { $NF = ""; print }' <<<"$table" | sed 's/ *$//'; }
# NAME COHORT PENDING ADMITTED GPUS USAGE BORROWED OLDEST-PENDING ACTIVE (AGE cut; an empty
# date column, nothing pending, prints nothing)
[[ $(row "$QA") =~ ^"$QA $COHORT 3 3 2 3 1 "[0-9]+s" True"$ ]] || fail "row $QA: $(row "$QA")"
[[ $(row "$QB") == "$QB $COHORT 0 1 4 1 0 True" ]] || fail "row $QB: $(row "$QB")"

# The gang's PodGroup: Pending, 0 of 2 scheduled, waiting as Unschedulable.
pg_row() { kubectl get podgroup -n "$NS" big --no-headers | tr -s ' ' | cut -d' ' -f1-6; }
is_pg_row() { [[ $(pg_row) == "big Pending 2 0 0 Unschedulable" ]]; }
it_wait 30 "PodGroup big: Pending, minMember 2, 0 scheduled, reason Unschedulable" is_pg_row
say "kubectl get podgroup -o wide:"$'\n'"$(kubectl get podgroup -n "$NS" big -o wide)"
kubectl get podgroup -n "$NS" big -o wide | matches "needs 2 × 8 GPUs" || fail "the wide view lacks the message"

# A newer Queue that lists team A's namespace: Conflict=True naming both; a Queue that does not
# decode: Active=False with its field.
sleep 1  # a later creationTimestamp than QA's
kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QNEW}
spec: {namespaces: [$NS], nominalQuota: {nvidia.com/gpu: "8"}}
---
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QBAD}
spec: {cohort: $NS-other, borrowingLimit: {cpu: "1e30"}}
YAML
conflict="Queue $QNEW: spec.namespaces: namespace \"$NS\" already belongs to the older Queue $QA; this queue does not get it (its other namespaces stay)"
it_wait 30 "$QNEW Conflict=True" is_status "$QNEW" '{.status.conditions[?(@.type=="Conflict")].status}' True
is_status "$QNEW" '{.status.conditions[?(@.type=="Conflict")].message}' "$conflict" \
  || fail "$QNEW conflict message: $(status "$QNEW" '{.status.conditions[?(@.type=="Conflict")].message}')"
kubectl get queues.tessel.io "$QNEW" -o wide | matches -F "$conflict" || fail "the wide view lacks the conflict"
bad='{.status.conditions[?(@.type=="Active")].status}|{.status.conditions[?(@.type=="Active")].reason}|{.status.conditions[?(@.type=="Active")].message}'
it_wait 30 "$QBAD Active=False" is_status "$QBAD" "$bad" "False|InvalidSpec|Queue $QBAD: spec.borrowingLimit.cpu: quantity \"1e30\" is not valid: out of range for a 64-bit integer; its pods wait until it decodes"
is_status "$QA" "$active" "True/False" || fail "$QA conditions after the conflict: $(status "$QA" "$active")"

# The statuses follow: team A's pending pods leave, its counts drop.
kubectl delete pod -n "$NS" a-huge big-0 big-1 --wait=false >/dev/null
it_wait 30 "$QA: nothing pending" is_status "$QA" '{.status.pendingPods}/{.status.oldestPendingSince}' "0/"

it_stop_scheduler main
exit 0
