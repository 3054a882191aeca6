#!/usr/bin/env bash
# install_test.sh: the shipped install, proven on the real API server.
#
#   1. `kubectl apply -k manifests/` for real (not a dry run): every object is accepted, with no
#      warning, and each one named by `kubectl kustomize` is then in the cluster.
#   2. The Deployment as the API server stored it is run the way a kubelet would
#      (pod_sandbox.py, bubblewrap, sandbox_lib.sh) in the image's own root filesystem, not the
#      host's: Debian 12 packages exactly as the Dockerfile's runtime stage lists them
#      (tools/image/rootfs.sh, cached), with the built binary and the configuration where the
#      Dockerfile puts them (runtime_stage.py install-files). Its own args after the image's
#      ENTRYPOINT, as its non-root user, with a read-only root and only the volumes it mounts
#      writable, in-cluster configuration from a ServiceAccount token (TokenRequest) and CA at the
#      standard paths. Only the serving address and ports are changed (loopback and free ports,
#      because tests share the machine).
#   3. It passes its liveness and readiness probes with the probes' own paths and timeouts,
#      schedules a pod (leader election on, as deployed), and stops cleanly on SIGTERM within
#      the pod's termination grace period, releasing its lease.
# Everything it created is deleted again.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sandbox_lib.sh"
it_begin install

command -v bwrap >/dev/null || fail "bubblewrap (bwrap) is not installed (tools/dev test installs it)"
kustomize_out="$IT_WORK/rendered.yaml"
kubectl kustomize "$TESSEL_ROOT/manifests" >"$kustomize_out"

install_cleanup() {
  local rc=$?
  sandbox_kill
  kubectl delete -k "$TESSEL_ROOT/manifests" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  # The shared fixture's RBAC, ServiceAccount and PriorityClasses come back (other tests use them).
  kubectl apply -f "$TESSEL_ROOT/manifests/serviceaccount.yaml" -f "$TESSEL_ROOT/manifests/rbac.yaml" \
    -f "$TESSEL_ROOT/manifests/priorityclasses.yaml" >/dev/null 2>&1 || true
  (exit $rc)
  it_cleanup
}
trap install_cleanup EXIT

# ---- 1. a real apply ------------------------------------------------------------------------------
out=$(kubectl apply -k "$TESSEL_ROOT/manifests" 2>&1) || fail "kubectl apply -k manifests/ failed: $out"
say "applied:"$'\n'"$out"
if grep -qiE "warning|error" <<<"$out"; then fail "warnings or errors: $out"; fi
# Every object kustomize rendered is in the cluster now (kind/name, with its namespace).
kubectl get -f "$kustomize_out" -o name >"$IT_WORK/present.txt" 2>"$IT_WORK/missing.txt" \
  || fail "objects missing after apply: $(cat "$IT_WORK/missing.txt")"
rendered=$(grep -c '^kind:' "$kustomize_out")
present=$(grep -c . "$IT_WORK/present.txt")
[[ $rendered -eq $present ]] || fail "$rendered objects rendered, $present in the cluster"
for kind in deployment poddisruptionbudget flowschema prioritylevelconfiguration \
  customresourcedefinition configmap; do
  grep -qi "^$kind" "$IT_WORK/present.txt" || fail "no $kind among the applied objects"
done

# ---- 2. the Deployment, run as a kubelet would (sandbox_lib.sh) ------------------------------------
sandbox_start kube-system tessel-scheduler
sandbox_wait_probes

it_nodes install-a:4
it_pod p1 --gpus 1
it_wait 60 "p1 bound by the installed scheduler" it_bound p1
[[ $(node_of p1) == install-a ]] || fail "p1 bound to $(node_of p1)"
holder=$(kubectl -n kube-system get lease tessel-scheduler -o 'jsonpath={.spec.holderIdentity}')
[[ -n $holder ]] || fail "no lease holder while the scheduler runs"
# Probes still pass while it schedules.
sandbox_probe liveness || fail "liveness probe failed after scheduling"
sandbox_probe readiness || fail "readiness probe failed after scheduling"

# Nothing was written outside the writable mounts (the root is read-only; a write there would
# have failed the process). The serving certificate went to the emptyDir.
grep -qiE "read-only file system" "$SANDBOX_LOG" && fail "the scheduler hit the read-only root: $(grep -i read-only "$SANDBOX_LOG")"

# ---- 3. a clean stop ------------------------------------------------------------------------------
sandbox_stop
holder=$(kubectl -n kube-system get lease tessel-scheduler -o 'jsonpath={.spec.holderIdentity}')
[[ -z $holder ]] || fail "the lease is still held by $holder after a clean stop"
exit 0
