#!/usr/bin/env bash
# charge_test.sh: what a pod is charged is fixed when it is bound (issue 37, defect 1), on the
# real apiserver with the admission policy NOT installed (the scheduler alone must hold the line;
# admission_policy_test.sh checks the policy). A ServiceAccount with only the namespace `edit`
# role edits the annotations of its bound pods:
#  1. A 1-GPU node: pod a (tessel.io/gpu-milli 900) is bound, b (500) waits. a's owner runs
#     `kubectl annotate pod a tessel.io/gpu-milli=100 --overwrite`; b is tried again and still
#     waits: the device keeps a's 900.
#  2. A Queue of 1 GPU and four 0.9-GPU pods: one is bound. Its owner lowers it to 1 milli, twice;
#     the others are tried again each time and stay out, and the queue's usage stays 0.9.
# The bind records the charge on the pod (annotation tessel.io/charge).
# Each check waits for the scheduler to have seen the edit (a probe pod created after it is
# bound: one watch stream, in order), then for a new attempt of each waiting pod (a label written
# on a parked pod moves it back to the queue), then looks. (A freed room is no barrier: with the
# charge held, the room the probe leaves cannot take a waiting pod, so none is tried again.)
source "$(dirname "$0")/lib.sh"
it_begin charge

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null || fail "Queue CRD not established"
QUEUE="$NS"
cleanup_queue() { kubectl delete queues.tessel.io "$QUEUE" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queue
it_on_exit cleanup_queue

kubectl create serviceaccount -n "$NS" editor >/dev/null
kubectl create rolebinding -n "$NS" editor --clusterrole=edit --serviceaccount="$NS:editor" >/dev/null
as_editor() { kubectl --as="system:serviceaccount:$NS:editor" -n "$NS" "$@"; }

it_nodes charge-0:1:pool=one charge-1:8:pool=eight
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

attempts() {
  curl -fsS "http://127.0.0.1:$SCHED_PORT_main/metrics" \
    | awk '$1 ~ /^scheduler_schedule_attempts_total\{.*profile="tessel"/ { n += $2 } END { print n + 0 }'
}
# seen_and_retried POOL POD...: the scheduler has seen every edit made so far, and each waiting
# POD was tried again after that.
RETRY=0
seen_and_retried() {
  local pool=$1; shift
  it_pod probe --select "pool=$pool"
  it_wait 60 "probe bound" it_bound probe
  # One attempt per labelled pod (computed here: inside it_wait, $# would be it_wait's own).
  local want
  want=$(( $(attempts) + $# ))
  RETRY=$((RETRY + 1))
  kubectl label pod -n "$NS" "$@" "tessel-test/retry=$RETRY" --overwrite >/dev/null
  it_wait 60 "a new attempt of $*" eval '(( $(attempts) >= want ))'
  kubectl delete pod -n "$NS" probe --wait=true >/dev/null
}
waits() {
  [[ $(kubectl get pod -n "$NS" "$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}') == False ]]
}

# 1. One device.
it_pod a --gpus 1 --select pool=one --annotation tessel.io/gpu-milli=900
it_wait 60 "a bound" it_bound a
record=$(kubectl get pod -n "$NS" a -o 'jsonpath={.metadata.annotations.tessel\.io/charge}')
[[ $record == *'"tessel.io/gpu-milli":"900"'* ]] || fail "a's charge record: '$record'"
it_pod b --gpus 1 --select pool=one --annotation tessel.io/gpu-milli=500
it_wait 60 "b waits" waits b
as_editor annotate pod a tessel.io/gpu-milli=100 --overwrite >/dev/null || fail "the editor may annotate its pod"
seen_and_retried one b
[[ -z $(node_of b) ]] || fail "b was bound beside a after a's owner lowered its annotation: 1.4 GPUs on one device"
say "device: a keeps 900 milli after its owner wrote 100; b waits"
kubectl delete pod -n "$NS" a b --wait=true >/dev/null

# 2. The queue.
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QUEUE}
spec:
  namespaces: [$NS]
  nominalQuota: {nvidia.com/gpu: "1"}
YAML
usage() { metric "$SCHED_PORT_main" "tessel_queue_usage{queue=\"$QUEUE\",cohort=\"\",resource=\"nvidia.com/gpu\"}"; }
bound_count() { kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' | grep -c '^q-.*=.' || true; }
for i in 0 1 2 3; do it_pod "q-$i" --gpus 1 --select pool=eight --annotation tessel.io/gpu-milli=900; done
it_wait 60 "one queued pod bound" eval '(( $(bound_count) == 1 ))'
for i in 0 1 2 3; do [[ -n $(node_of "q-$i") ]] || it_wait 60 "q-$i waits" waits "q-$i"; done
for round in 1 2; do
  for i in 0 1 2 3; do
    [[ -n $(node_of "q-$i") ]] || continue
    as_editor annotate pod "q-$i" tessel.io/gpu-milli=1 --overwrite >/dev/null || fail "the editor may annotate q-$i"
  done
  waiting=()
  for i in 0 1 2 3; do [[ -n $(node_of "q-$i") ]] || waiting+=("q-$i"); done
  seen_and_retried eight "${waiting[@]}"
  (( $(bound_count) == 1 )) || fail "round $round: $(bound_count) pods of a 1-GPU queue bound at 0.9 GPU each"
  awk -v u="$(usage)" 'BEGIN { exit !(u == 0.9) }' || fail "round $round: the queue's usage is '$(usage)', want 0.9"
done
say "queue: one 0.9-GPU pod bound through two rounds of edits; usage $(usage)"

it_stop_scheduler main
exit 0
