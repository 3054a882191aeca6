#!/usr/bin/env bash
# cluster_up.sh: ctest fixture that starts the control plane the integration tests share (in
# $TESSEL_CLUSTER_DIR, a fresh one each run) and installs the manifests' RBAC, ServiceAccount
# and PriorityClasses for real, so that the scheduler's token has exactly the rights the
# manifests give it.
set -euo pipefail
: "${TESSEL_ROOT:?}" "${TESSEL_CLUSTER_DIR:?}"
CLUSTER="$TESSEL_ROOT/tools/cluster/cluster.sh"
"$CLUSTER" down >/dev/null 2>&1 || true
eval "$("$CLUSTER" up)"
export KUBECONFIG
kubectl apply -f "$TESSEL_ROOT/manifests/serviceaccount.yaml" \
  -f "$TESSEL_ROOT/manifests/rbac.yaml" -f "$TESSEL_ROOT/manifests/priorityclasses.yaml" >&2
# RBAC takes effect through the apiserver's authorizer cache: wait until it does.
for _ in $(seq 1 100); do
  [[ $(kubectl --kubeconfig "$TESSEL_CLUSTER_DIR/scheduler.kubeconfig" auth can-i create pods --subresource=binding -A 2>/dev/null) == yes ]] && exit 0
  sleep 0.2
done
echo "RBAC for the scheduler did not take effect" >&2
exit 1
