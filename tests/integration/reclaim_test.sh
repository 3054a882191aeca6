#!/usr/bin/env bash
# reclaim_test.sh: a lender reclaims its quota on the real apiserver, and evicts no more than it
# needs however long the victims take to go away (issue 18, item 12). Two queues of 20 GPUs in a
# cohort, four nodes of 10 GPUs. The borrower runs 30 one-GPU pods (it borrows 10); the lender
# then asks for 14 with 10 GPUs free: 10 are placed, and 4 borrower pods are evicted to reclaim
# the rest. The victims carry a finalizer, so they stay terminating until the test lets them go:
# meanwhile nothing more is evicted and nobody else takes their quota. Once they are gone, all
# 14 lender pods run and the borrower keeps 26.
source "$(dirname "$0")/lib.sh"
it_begin reclaim

LENDER_NS="$NS-lender"
QBORROW="$NS-borrower" QLEND="$NS-lender" COHORT="$NS"
HOLD=tessel.io/test-hold
release_all() {  # lets every held pod go
  local ns pod
  for ns in "$NS" "$LENDER_NS"; do
    for pod in $(kubectl get pods -n "$ns" -o name 2>/dev/null); do
      kubectl patch -n "$ns" "$pod" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    done
  done
}
cleanup_reclaim() {
  release_all
  kubectl delete queues.tessel.io "$QBORROW" "$QLEND" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$LENDER_NS" --wait=false >/dev/null 2>&1 || true
}
trap 'rc=$?; set +e; cleanup_reclaim; (exit $rc); it_cleanup' EXIT

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null \
  || fail "Queue CRD not established"
kubectl create namespace "$LENDER_NS" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QBORROW}
spec:
  namespaces: [$NS]
  cohort: $COHORT
  nominalQuota: {nvidia.com/gpu: "20"}
---
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QLEND}
spec:
  namespaces: [$LENDER_NS]
  cohort: $COHORT
  nominalQuota: {nvidia.com/gpu: "20"}
  preemption: {reclaimWithinCohort: Any}
YAML

it_nodes rc-1:10 rc-2:10 rc-3:10 rc-4:10
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# pods NAMESPACE PREFIX COUNT: one-GPU pods, held by a finalizer once deleted.
pods() {
  local ns=$1 prefix=$2 count=$3 i
  for ((i = 0; i < count; i++)); do
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $prefix-$i, namespace: $ns, finalizers: [$HOLD]}
spec:
  schedulerName: tessel
  terminationGracePeriodSeconds: 0
  nodeSelector: {tessel-it: $IT_NAME}
  containers:
  - {name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}
YAML
  done
}
bound_in() {
  kubectl get pods -n "$1" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
preempted_events() {
  kubectl get events -n "$NS" --field-selector reason=Preempted \
    -o 'jsonpath={range .items[*]}{.involvedObject.name} x{.count}: {.message}{"; "}{end}'
}
terminating_in() {
  kubectl get pods -n "$1" -o 'jsonpath={range .items[*]}{.metadata.deletionTimestamp}{"\n"}{end}' | grep -c . || true
}

pods "$NS" borrow 30 | kubectl apply -f - >/dev/null
all_borrowed() { [[ $(bound_in "$NS") == 30 ]]; }
it_wait 120 "the borrower's 30 pods bound (it borrows 10)" all_borrowed

pods "$LENDER_NS" lend 14 | kubectl apply -f - >/dev/null
reclaiming() { [[ $(bound_in "$LENDER_NS") == 10 && $(terminating_in "$NS") -ge 4 ]]; }
it_wait 120 "10 lender pods bound and 4 borrower pods evicted" reclaiming
# The victims linger; the lender's pending pods are retried meanwhile and must neither evict
# more nor lose their reclaimed quota to anyone.
sleep 10
evicted=$(terminating_in "$NS")
say "while the victims linger: $evicted evicted, $(bound_in "$LENDER_NS") lender pods bound"
[[ $evicted == 4 ]] || fail "$evicted borrower pods evicted, want 4 (one per GPU reclaimed): $(preempted_events)"

release_all
lender_done() { [[ $(bound_in "$LENDER_NS") == 14 ]]; }
it_wait 120 "all 14 lender pods bound once the victims are gone" lender_done
borrower_left=$(kubectl get pods -n "$NS" -o name | wc -l)
[[ $borrower_left == 26 ]] || fail "the borrower has $borrower_left pods, want 26"
events=$(kubectl get events -n "$NS" --field-selector reason=Preempted -o name | wc -l)
[[ $events == 4 ]] || fail "$events Preempted events, want 4: $(preempted_events)"
