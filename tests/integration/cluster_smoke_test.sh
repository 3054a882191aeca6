#!/usr/bin/env bash
# cluster_smoke_test.sh: end-to-end check of the local control plane in tools/cluster/.
#
# Brings up its own cluster (TESSEL_CLUSTER_DIR under a mktemp dir, so it can run next to other
# clusters), registers tools/cluster/sample-nodes.yaml and checks that: nodes are Ready, untainted
# and allocatable; the simulated kubelet runs and completes a bound pod; kube-controller-manager
# runs a Job to completion; a bound pod's deletion completes; RBAC is enforced for the
# scheduler's token; an apiserver restart is survived. Always tears the cluster down.
# Exits non-zero on the first failure. The first run builds Kubernetes (about 9 minutes).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER="$ROOT/tools/cluster/cluster.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessel-cluster-smoke.XXXXXX")
export TESSEL_CLUSTER_DIR="$WORK/cluster"

say() { printf '[smoke %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

cleanup() {
  local rc=$?
  if ((rc)) && [[ -d $TESSEL_CLUSTER_DIR/logs ]]; then
    for f in "$TESSEL_CLUSTER_DIR"/logs/*.log; do
      say "--- last lines of $f"
      tail -n 15 "$f" >&2 || true
    done
  fi
  "$CLUSTER" down || true
  rm -rf "$WORK"
  if ((rc)); then say "FAILED"; else say "PASSED"; fi
}
trap cleanup EXIT

# wait_until SECONDS DESCRIPTION CMD... : polls CMD every 0.2 s.
wait_until() {
  local timeout=$1 what=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${timeout}s waiting for: $what"
    sleep 0.2
  done
}

pod_phase_is() { [[ $(kubectl get pod "$1" -o 'jsonpath={.status.phase}') == "$2" ]]; }
pod_gone() { ! kubectl get pod "$1" >/dev/null 2>&1; }

say "cluster up in $TESSEL_CLUSTER_DIR"
t0=$SECONDS
env_lines=$("$CLUSTER" up)
eval "$env_lines"
[[ $(tail -n1 <<<"$env_lines") == "export KUBECONFIG=$TESSEL_CLUSTER_DIR/admin.kubeconfig" ]] \
  || fail "up did not end with the export line: $env_lines"
say "up took $((SECONDS - t0)) s"
[[ $("$CLUSTER" up 2>/dev/null | tail -n1) == "export KUBECONFIG=$KUBECONFIG" ]] \
  || fail "a second up did not print the export line"
for f in admin.kubeconfig scheduler.kubeconfig; do
  [[ -s $TESSEL_CLUSTER_DIR/$f ]] || fail "missing $f"
done

say "registering nodes"
"$CLUSTER" nodes "$ROOT/tools/cluster/sample-nodes.yaml" >/dev/null
for n in gpu-a-0 gpu-a-1 gpu-a-2 gpu-a-3; do
  ready=$(kubectl get node "$n" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')
  taints=$(kubectl get node "$n" -o 'jsonpath={.spec.taints}')
  gpus=$(kubectl get node "$n" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')
  product=$(kubectl get node "$n" -o 'jsonpath={.metadata.labels.nvidia\.com/gpu\.product}')
  [[ $ready == True ]] || fail "node $n Ready=$ready"
  [[ -z $taints ]] || fail "node $n has taints $taints"
  [[ $gpus == 8 ]] || fail "node $n allocatable nvidia.com/gpu=$gpus"
  [[ $product == NVIDIA-A100-SXM4-80GB ]] || fail "node $n gpu.product=$product"
done
[[ $(kubectl get node gpu-ts-0 -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}') == 32 ]] \
  || fail "gpu-ts-0 should have 32 nvidia.com/gpu"
# Registering again updates in place.
"$CLUSTER" nodes "$ROOT/tools/cluster/sample-nodes.yaml" | grep "0 created, 5 updated" >/dev/null \
  || fail "registering the nodes again did not update them"

say "a bound pod runs and succeeds"
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: smoke-bound
  annotations:
    tessel.io/sim-duration: "2"
spec:
  nodeName: gpu-a-0
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    resources:
      limits:
        nvidia.com/gpu: "1"
EOF
wait_until 30 "smoke-bound Running" pod_phase_is smoke-bound Running
[[ $(kubectl get pod smoke-bound -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]] \
  || fail "smoke-bound is Running but not Ready"
wait_until 30 "smoke-bound Succeeded" pod_phase_is smoke-bound Succeeded
code=$(kubectl get pod smoke-bound -o 'jsonpath={.status.containerStatuses[0].state.terminated.exitCode}')
[[ $code == 0 ]] || fail "smoke-bound exit code '$code'"

say "a Job completes through kube-controller-manager"
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata:
  name: smoke-job
spec:
  completions: 3
  parallelism: 2
  backoffLimit: 0
  template:
    metadata:
      annotations:
        tessel.io/sim-duration: 1s
    spec:
      nodeName: gpu-a-1
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources:
          limits:
            nvidia.com/gpu: "2"
EOF
kubectl wait --for=condition=complete job/smoke-job --timeout=90s >/dev/null \
  || fail "job smoke-job did not complete"
[[ $(kubectl get job smoke-job -o 'jsonpath={.status.succeeded}') == 3 ]] \
  || fail "job smoke-job: succeeded != 3"

say "deleting a running bound pod completes"
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: smoke-delete
spec:
  nodeName: gpu-a-2
  terminationGracePeriodSeconds: 600
  containers:
  - name: main
    image: busybox
EOF
wait_until 30 "smoke-delete Running" pod_phase_is smoke-delete Running
kubectl delete pod smoke-delete --wait=false >/dev/null
wait_until 20 "smoke-delete to disappear" pod_gone smoke-delete

say "RBAC is enforced for the scheduler's token"
SCHED=(kubectl --kubeconfig "$TESSEL_CLUSTER_DIR/scheduler.kubeconfig")
answer=$("${SCHED[@]}" auth can-i create pods 2>/dev/null || true)
[[ $answer == no ]] || fail "scheduler token: can-i create pods answered '$answer', want no"
answer=$(kubectl auth can-i create pods 2>/dev/null || true)
[[ $answer == yes ]] || fail "admin token: can-i create pods answered '$answer', want yes"
answer=$(kubectl --kubeconfig "$TESSEL_CLUSTER_DIR/admin-cert.kubeconfig" auth can-i create pods \
  2>/dev/null || true)
[[ $answer == yes ]] || fail "admin client certificate: can-i create pods answered '$answer'"
# A binding to the ServiceAccount applies to the scheduler's token user.
kubectl create clusterrole smoke-pod-reader --verb=list --resource=pods >/dev/null
kubectl create clusterrolebinding smoke-pod-reader --clusterrole=smoke-pod-reader \
  --serviceaccount=kube-system:tessel-scheduler >/dev/null
can_list() { [[ $(kubectl --kubeconfig "$1" auth can-i list pods 2>/dev/null) == yes ]]; }
wait_until 15 "scheduler token allowed to list pods after the binding" \
  can_list "$TESSEL_CLUSTER_DIR/scheduler.kubeconfig"
can_list "$TESSEL_CLUSTER_DIR/scheduler-tokenfile.kubeconfig" \
  || fail "scheduler-tokenfile.kubeconfig cannot list pods"

say "the apiserver restarts and the simulated kubelet carries on"
"$CLUSTER" restart apiserver >/dev/null
kubectl get nodes >/dev/null || fail "kubectl get nodes after the apiserver restart"
kubectl run smoke-after-restart --image=busybox --restart=Never \
  --overrides='{"apiVersion":"v1","spec":{"nodeName":"gpu-a-3"}}' >/dev/null
wait_until 60 "smoke-after-restart Running" pod_phase_is smoke-after-restart Running
"$CLUSTER" status >/dev/null || fail "cluster status after restart"

kubectl get pods -o wide >&2
