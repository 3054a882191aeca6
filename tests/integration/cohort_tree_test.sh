#!/usr/bin/env bash
# cohort_tree_test.sh: the quota tree on the real apiserver (docs/quota.md, "Cohorts as a tree").
# Cohorts org <- dept-a (4 GPUs of its own, borrowing limit 1) <- queue A (2), and org <- dept-b
# <- queue B (6), applied with kubectl: A's pods stop at dept-a's 6 + 1 with the message naming
# dept-a's borrowing limit, B gets the 5 the organisation has left; the Cohorts' status shows
# their subtree quota, usage and borrowing, and /metrics their gauges with the path from the
# root. Then a cycle of spec.parent holds a third queue's pods with a message naming the cycle,
# and the Cohort's condition Active=False says so; fixing the parent lets them run.
source "$(dirname "$0")/lib.sh"
it_begin cohorts

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" -f "$TESSEL_ROOT/manifests/crds/cohorts.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io crd/cohorts.tessel.io >/dev/null \
  || fail "CRDs not established"
# Cluster-scoped objects: named after the test so that reruns and other tests never clash.
ORG="$NS-org" DA="$NS-dept-a" DB="$NS-dept-b" LX="$NS-loop-x" LY="$NS-loop-y"
QA="$NS-a" QB="$NS-b" QC="$NS-c"
cleanup_objects() {
  kubectl delete queues.tessel.io "$QA" "$QB" "$QC" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete cohorts.tessel.io "$ORG" "$DA" "$DB" "$LX" "$LY" --ignore-not-found >/dev/null 2>&1 || true
}
cleanup_objects
it_on_exit cleanup_objects

# cohort NAME PARENT [SPEC-LINES]
cohort() {
  kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Cohort
metadata: {name: $1}
spec:
  parent: "$2"
${3:-}
YAML
}
# queue NAME COHORT GPUS: a queue for the pods labelled tessel.io/queue=NAME in this namespace.
queue() {
  kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $1}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  cohort: $2
  nominalQuota: {nvidia.com/gpu: "$3"}
YAML
}
cohort "$ORG" ""
cohort "$DA" "$ORG" '  nominalQuota: {nvidia.com/gpu: "4"}
  borrowingLimit: {nvidia.com/gpu: "1"}'
cohort "$DB" "$ORG"
queue "$QA" "$DA" 2
queue "$QB" "$DB" 6

it_nodes tree-0:8 tree-1:8 tree-2:8
it_start_scheduler main --leader-elect=false --queue-status-interval 1s
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

gpu_pod() { it_pod "$1" --gpus 1 --label "tessel.io/queue=$2"; }
bound_of() { kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' | grep -c "^$1-.*=." || true; }
for i in $(seq 0 9); do gpu_pod a-$i "$QA"; done
it_wait 60 "seven of A's pods bound (dept-a's 4 + A's 2, + 1 borrowed)" eval '(( $(bound_of a) == 7 ))'
cond() {
  kubectl get pod -n "$NS" "$1" \
    -o 'jsonpath={range .status.conditions[?(@.type=="PodScheduled")]}{.status}|{.reason}|{.message}{end}'
}
waiting_with() { [[ $(cond "$1") == "False|QuotaExceeded|"*"$2"* ]]; }
pending_of() {  # the first pod of PREFIX not bound
  kubectl get pods -n "$NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' \
    | awk -F= -v p="$1-" 'index($1, p) == 1 && $2 == "" { print $1; exit }'
}
PA=$(pending_of a)
it_wait 30 "$PA: dept-a's borrowing limit" waiting_with "$PA" \
  "queue $QA: nvidia.com/gpu 8 of nominal 2; the cohort $DA may borrow at most 1 beyond its own quota, and does"
say "A: $(cond "$PA")"
for i in $(seq 0 5); do gpu_pod b-$i "$QB"; done
it_wait 60 "five of B's pods bound (org has 5 left)" eval '(( $(bound_of b) == 5 ))'
sleep 2
(( $(bound_of a) == 7 && $(bound_of b) == 5 )) || fail "bound past the tree's quota: A $(bound_of a), B $(bound_of b)"

PB=$(pending_of b)
it_wait 30 "$PB: org's pool is borrowed" waiting_with "$PB" \
  "queue $QB: nvidia.com/gpu 6 of nominal 6; other queues of the cohort $ORG borrow 1 of its quota"

# The Cohorts' status and metrics.
status_of() { kubectl get cohorts.tessel.io "$1" -o "jsonpath=$2"; }
it_wait 30 "$DA status: subtree 6, usage 7, borrowed 1" eval \
  '[[ $(status_of "$DA" "{.status.subtreeQuota.nvidia\.com/gpu}|{.status.usage.nvidia\.com/gpu}|{.status.borrowed.nvidia\.com/gpu}|{.status.path}") == "6|7|1|$ORG/$DA" ]]'
it_wait 30 "$ORG status: subtree 12, usage 12" eval \
  '[[ $(status_of "$ORG" "{.status.subtreeQuota.nvidia\.com/gpu}|{.status.usage.nvidia\.com/gpu}") == "12|12" ]]'
series="tessel_cohort_borrowed{cohort=\"$DA\",path=\"$ORG/$DA\",resource=\"nvidia.com/gpu\"}"
it_wait 10 "cohort metric" eval '[[ $(metric "$SCHED_PORT_main" "$series") == 1 ]]'

# A cycle of spec.parent holds the queue below it; fixing it lets the pod run.
cohort "$LX" "$LY"
cohort "$LY" "$LX"
queue "$QC" "$LX" 1
gpu_pod c-0 "$QC"
it_wait 30 "c-0 waits, naming the cycle" waiting_with c-0 \
  "Cohort $LX: spec.parent: the cohorts' parents form a cycle ($LX -> $LY -> $LX); Queue $QC is below it"
it_wait 30 "$LX Active=False" eval \
  '[[ $(status_of "$LX" "{.status.conditions[?(@.type==\"Active\")].status}|{.status.conditions[?(@.type==\"Active\")].reason}") == "False|InvalidTree" ]]'
it_bound c-0 && fail "c-0 was bound below a cycle"
cohort "$LY" ""
it_wait 60 "c-0 bound once the cycle is gone" it_bound c-0
it_wait 30 "$LX Active=True" eval \
  '[[ $(status_of "$LX" "{.status.conditions[?(@.type==\"Active\")].status}") == "True" ]]'
exit 0
