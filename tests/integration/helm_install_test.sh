#!/usr/bin/env bash
# helm_install_test.sh: the Helm chart installed, upgraded and uninstalled on the real API server.
#
#   1. `helm install tessel charts/tessel -n kube-system` (the chart's CRDs are removed first, so
#      that Helm installs them from crds/): the release is deployed and every object of its
#      manifest is in the cluster, with the CRDs.
#   2. The Deployment as the API server stored it runs as a kubelet would run it (sandbox_lib.sh,
#      as install_test.sh runs the kustomize install): it passes its probes, binds a pod, and
#      stops cleanly.
#   3. `helm upgrade` with a changed configuration (a second profile, tessel-spread): the
#      ConfigMap holds it, the pod template's checksum/config changes, the Deployment controller
#      makes a new ReplicaSet and a pod from the new template (the pods roll); the Deployment run
#      again binds a pod that names the new profile, so the running scheduler reads the new file.
#   4. `helm uninstall`: every object of the release is gone, the CRDs stay (Helm never deletes
#      crds/).
# The fixture's ServiceAccount, RBAC and PriorityClasses (applied with kubectl, so not Helm's to
# adopt) are removed for the test and applied again at the end; the CRDs are removed at the end.
# On a control plane without kube-controller-manager (the oldest release's, oldest_release_test.sh)
# nothing makes ReplicaSets: step 3 then checks the template's new checksum, not the roll.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sandbox_lib.sh"
it_begin helm

command -v bwrap >/dev/null || fail "bubblewrap (bwrap) is not installed (tools/dev setup installs it)"
HELM=$("$TESSEL_ROOT/tools/cluster/build-helm.sh") || fail "could not build helm (tools/cluster/build-helm.sh)"
# Helm's own state (repository cache, config) stays in the test's scratch dir.
export HELM_CACHE_HOME="$IT_WORK/helm/cache" HELM_CONFIG_HOME="$IT_WORK/helm/config" \
  HELM_DATA_HOME="$IT_WORK/helm/data"
CHART="$TESSEL_ROOT/charts/tessel"
FIXTURE=(-f "$TESSEL_ROOT/manifests/serviceaccount.yaml" -f "$TESSEL_ROOT/manifests/rbac.yaml"
  -f "$TESSEL_ROOT/manifests/priorityclasses.yaml")
CRDS=(podgroups.scheduling.x-k8s.io queues.tessel.io resourceflavors.tessel.io cohorts.tessel.io)
controllers=1
[[ " ${TESSEL_CLUSTER_COMPONENTS:-controller-manager} " == *" controller-manager "* ]] || controllers=0

helm_cleanup() {
  local rc=$?
  sandbox_kill
  "$HELM" uninstall tessel -n kube-system --ignore-not-found >/dev/null 2>&1 || true
  # Helm leaves the CRDs (as it should); the test removes them, so that the next `kubectl apply`
  # of them (install_test.sh) creates them afresh rather than adopting Helm's.
  kubectl delete crd "${CRDS[@]}" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
  # The shared fixture's objects come back (other tests use them).
  kubectl apply "${FIXTURE[@]}" >/dev/null 2>&1 || true
  (exit $rc)
  it_cleanup
}
trap helm_cleanup EXIT

kubectl delete "${FIXTURE[@]}" --ignore-not-found >/dev/null
kubectl delete crd "${CRDS[@]}" --ignore-not-found --timeout=60s >/dev/null

# ---- 1. install -------------------------------------------------------------------------------
out=$("$HELM" install tessel "$CHART" -n kube-system 2>&1) || fail "helm install: $out"
say "helm install:"$'\n'"$out"
status() { "$HELM" status tessel -n kube-system -o json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["info"]["status"], r["version"])'; }
[[ $(status) == "deployed 1" ]] || fail "release status after install: $(status)"
"$HELM" get manifest tessel -n kube-system >"$IT_WORK/manifest.yaml"
kubectl get -f "$IT_WORK/manifest.yaml" -o name >"$IT_WORK/present.txt" 2>"$IT_WORK/missing.txt" \
  || fail "objects of the release missing: $(cat "$IT_WORK/missing.txt")"
rendered=$(grep -c '^kind:' "$IT_WORK/manifest.yaml")
[[ $rendered -eq $(grep -c . "$IT_WORK/present.txt") ]] || fail "$rendered objects in the release, $(grep -c . "$IT_WORK/present.txt") in the cluster"
for kind in deployment configmap serviceaccount clusterrole priorityclass flowschema poddisruptionbudget; do
  grep -qi "^$kind" "$IT_WORK/present.txt" || fail "no $kind among the installed objects"
done
kubectl get crd "${CRDS[@]}" >/dev/null || fail "the chart's CRDs were not installed"

# ---- 2. what it installed schedules -----------------------------------------------------------
sandbox_start kube-system tessel-scheduler
sandbox_wait_probes
it_nodes helm-a:4
it_pod p1 --gpus 1
it_wait 60 "p1 bound by the scheduler helm installed" it_bound p1
sandbox_stop

# ---- 3. upgrade with a changed configuration --------------------------------------------------
template_checksum() {  # the checksum/config of a pod template, from kubectl's JSON on stdin
  python3 -c 'import json,sys; o=json.load(sys.stdin); t=o["spec"]["template"] if "template" in o["spec"] else o
print(t["metadata"].get("annotations", {}).get("checksum/config", ""))'
}
old_checksum=$(kubectl -n kube-system get deployment tessel-scheduler -o json | template_checksum)
[[ -n $old_checksum ]] || fail "the Deployment's pod template has no checksum/config"
replicasets() {
  kubectl -n kube-system get replicasets -l app.kubernetes.io/name=tessel-scheduler -o name | sort
}
has_replicasets() { [[ $(replicasets | grep -c .) -ge $1 ]]; }
if ((controllers)); then
  it_wait 60 "the Deployment's first ReplicaSet" has_replicasets 1
  old_rs=$(replicasets)
fi

out=$("$HELM" upgrade tessel "$CHART" -n kube-system -f "$(dirname "$0")/testdata/helm-config-values.yaml" 2>&1) \
  || fail "helm upgrade: $out"
[[ $(status) == "deployed 2" ]] || fail "release status after upgrade: $(status)"
kubectl -n kube-system get configmap tessel-scheduler-config -o 'jsonpath={.data.config\.yaml}' \
  | matches "schedulerName: tessel-spread" || fail "the ConfigMap does not hold the new configuration"
new_checksum=$(kubectl -n kube-system get deployment tessel-scheduler -o json | template_checksum)
[[ $new_checksum != "$old_checksum" ]] || fail "the upgrade left the pod template's checksum/config as it was"
rolled_pod() {
  kubectl -n kube-system get pods -l app.kubernetes.io/name=tessel-scheduler -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
sys.exit(0 if any(p["metadata"].get("annotations", {}).get("checksum/config") == sys.argv[1] for p in pods) else 1)' "$new_checksum"
}
# The Deployment controller rolls: a new ReplicaSet from the new template, and a pod of it.
if ((controllers)); then
  it_wait 60 "a second ReplicaSet" has_replicasets 2
  new_rs=$(comm -13 <(echo "$old_rs") <(replicasets))
  [[ -n $new_rs ]] || fail "no new ReplicaSet after the upgrade (had: $old_rs)"
  [[ $(kubectl -n kube-system get "$new_rs" -o json | template_checksum) == "$new_checksum" ]] \
    || fail "$new_rs does not carry the new checksum"
  it_wait 60 "a pod from the new template" rolled_pod
fi

# The scheduler run from the upgraded Deployment reads the new file: it serves the new profile.
sandbox_start kube-system tessel-scheduler
sandbox_wait_probes
it_pod p2 --gpus 1 --scheduler tessel-spread
it_wait 60 "p2 (schedulerName tessel-spread) bound after the upgrade" it_bound p2
sandbox_stop

# ---- 4. uninstall -----------------------------------------------------------------------------
out=$("$HELM" uninstall tessel -n kube-system --wait 2>&1) || fail "helm uninstall: $out"
left=$(kubectl get -f "$IT_WORK/manifest.yaml" --ignore-not-found -o name 2>&1)
[[ -z $left ]] || fail "objects left after helm uninstall: $left"
[[ -z $("$HELM" list -n kube-system -q) ]] || fail "a release is still listed after uninstall"
kubectl get crd "${CRDS[@]}" >/dev/null || fail "helm uninstall deleted the CRDs (Helm keeps crds/)"
no_pods() { [[ -z $(kubectl -n kube-system get pods -l app.kubernetes.io/name=tessel-scheduler -o name) ]]; }
it_wait 60 "the Deployment's pods deleted" no_pods
exit 0
