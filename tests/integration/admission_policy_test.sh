#!/usr/bin/env bash
# admission_policy_test.sh: manifests/admission-policy.yaml on the real apiserver (docs/deploy.md,
# "Threat model"). With the policies applied:
#  1. A namespace editor (a ServiceAccount with the `edit` role) may not change, add or remove any
#     tessel.io/ annotation or label, nor scheduling.x-k8s.io/pod-group, on a bound pod; other
#     annotations, and a pending pod's, stay theirs to edit.
#  2. The scheduler's own writes pass: it binds (the Binding copies tessel.io/gpu-devices and
#     tessel.io/charge onto the pod) and writes cluster-autoscaler's consume-provisioning-request.
#  3. With the scheduler's token: no image replaced, no label or other annotation changed, no
#     PodTemplate deleted that Tessel did not create.
#  4. With the scheduler's token, where resource.k8s.io/v1 is served: a ResourceClaim is created or
#     deleted only when it is one the scheduler makes for a pod's extended resources (annotated,
#     the pod its controlling owner); of a team's claim only the finalizer
#     resource.kubernetes.io/delete-protection may be added.
#  5. PriorityClass tessel-production only in namespaces an admin labelled.
# The policies are removed at the end (the other tests run without them).
source "$(dirname "$0")/lib.sh"
it_begin admission

POLICY="$TESSEL_ROOT/manifests/admission-policy.yaml"
cleanup_policy() { kubectl delete -f "$POLICY" --ignore-not-found >/dev/null 2>&1 || true; }
it_on_exit cleanup_policy
kubectl apply -f "$POLICY" >/dev/null || fail "the admission policies do not apply"

kubectl create serviceaccount -n "$NS" editor >/dev/null
kubectl create rolebinding -n "$NS" editor --clusterrole=edit --serviceaccount="$NS:editor" >/dev/null
as_editor() { kubectl --as="system:serviceaccount:$NS:editor" -n "$NS" "$@"; }
as_scheduler() { kubectl --kubeconfig "$SCHED_KUBECONFIG" -n "$NS" "$@"; }

it_nodes admission-0:8
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# 2. The scheduler binds through the policies, with its annotations.
it_pod a --gpus 1 --annotation tessel.io/gpu-milli=900
it_wait 60 "a bound" it_bound a
for key in gpu-devices charge; do
  [[ -n $(kubectl get pod -n "$NS" a -o "jsonpath={.metadata.annotations.tessel\\.io/$key}") ]] \
    || fail "the bind did not leave tessel.io/$key on a"
done
it_pod pending --gpus 1 --select pool=none

# refused WHAT CMD...: CMD fails, and says it was the policy.
refused() {
  local what=$1; shift
  local out
  if out=$("$@" 2>&1); then fail "$what was allowed"; fi
  [[ $out == *"ValidatingAdmissionPolicy"* ]] || fail "$what failed, but not by the policy: $out"
}
# The policies take effect once the apiserver has loaded them. Asked as a server-side dry run,
# which admission judges but which changes nothing: an edit let through before the policies were
# loaded would have made every later attempt a no-op (the value already there), never refused.
edit_refused() { ! as_editor annotate pod a tessel.io/gpu-milli=100 --overwrite --dry-run=server; }
it_wait 30 "the policy refuses the editor" edit_refused

# 1. The editor.
refused "lowering tessel.io/gpu-milli" as_editor annotate pod a tessel.io/gpu-milli=100 --overwrite
refused "removing tessel.io/charge" as_editor annotate pod a tessel.io/charge-
# Every annotation Tessel reads on a pod (grep -o 'tessel\.io/[a-z-]*' scheduler plugins), and the labels.
for key in gpu-milli gpu-sharing gpu-memory gpu-devices charge gang min-available min-run-seconds movable \
    provisioning-class topology-key queue; do
  refused "setting the annotation tessel.io/$key" as_editor annotate pod a "tessel.io/$key=1" --overwrite
done
for key in tessel.io/queue tessel.io/gang scheduling.x-k8s.io/pod-group; do
  refused "setting the label $key" as_editor label pod a "$key=other" --overwrite
done
[[ $(kubectl get pod -n "$NS" a -o 'jsonpath={.metadata.annotations.tessel\.io/gpu-milli}') == 900 ]] \
  || fail "a's tessel.io/gpu-milli changed"
as_editor annotate pod a team.example/owner=me >/dev/null || fail "the editor may not annotate its pod with its own keys"
as_editor annotate pod pending tessel.io/gpu-milli=300 >/dev/null || fail "the editor may not annotate a pending pod"
say "editor: refused on the bound pod's scheduling keys, allowed elsewhere"

# 3. The scheduler's token: what Tessel writes passes; nothing else.
as_scheduler annotate pod pending autoscaling.x-k8s.io/consume-provisioning-request=r-1 \
  autoscaling.x-k8s.io/provisioning-class-name=c >/dev/null || fail "the scheduler may not mark a pending pod for provisioning"
refused "the scheduler replacing an image" as_scheduler patch pod a --type=json \
  -p '[{"op":"replace","path":"/spec/containers/0/image","value":"attacker.example/evil:1"}]'
refused "the scheduler labelling a pod" as_scheduler label pod a owned=yes
refused "the scheduler writing another annotation" as_scheduler annotate pod a team.example/owner=attacker --overwrite
[[ $(kubectl get pod -n "$NS" a -o 'jsonpath={.spec.containers[0].image}') == busybox ]] || fail "a's image changed"
template() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PodTemplate
metadata: {name: $1, namespace: $NS, labels: {$2}}
template: {spec: {containers: [{name: main, image: busybox}]}}
YAML
}
template team-template "team: a"
template tessel-template "app.kubernetes.io/managed-by: tessel"
refused "the scheduler deleting a team's PodTemplate" as_scheduler delete podtemplate team-template
as_scheduler delete podtemplate tessel-template >/dev/null || fail "the scheduler may not delete its own PodTemplate"
say "scheduler token: its own writes pass; image, labels, other annotations and others' templates refused"

# 4. ResourceClaims with the scheduler's token (Kubernetes 1.34 and later serve resource.k8s.io/v1).
if kubectl get --raw /apis/resource.k8s.io/v1 >/dev/null 2>&1; then
  pending_uid=$(kubectl get pod -n "$NS" pending -o 'jsonpath={.metadata.uid}')
  claim_json() {  # NAME ANNOTATED(yes|no)
    python3 - "$NS" "$1" "$2" "$pending_uid" <<'EOF'
import json, sys
ns, name, annotated, uid = sys.argv[1:5]
meta = {"name": name, "namespace": ns}
if annotated == "yes":
    meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "pending", "uid": uid, "controller": True}]
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "any"}}]}}}))
EOF
  }
  claim_json team-claim no | kubectl apply -f - >/dev/null || fail "a team's ResourceClaim cannot be created"
  stray_refused() { ! claim_json stray no | as_scheduler create --dry-run=server -f - >/dev/null 2>&1; }
  it_wait 30 "the claim policy refuses the scheduler" stray_refused
  refused "the scheduler creating a ResourceClaim of its own choosing" \
    eval 'claim_json stray no | as_scheduler create -f -'
  claim_json pending-extended-resources yes | as_scheduler create -f - >/dev/null \
    || fail "the scheduler may not create the claim for a pod's extended resources"
  refused "the scheduler deleting a team's ResourceClaim" as_scheduler delete resourceclaim team-claim
  refused "the scheduler adding another finalizer to a team's ResourceClaim" \
    as_scheduler patch resourceclaim team-claim --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}'
  refused "the scheduler labelling a team's ResourceClaim" as_scheduler label resourceclaim team-claim owned=yes
  as_scheduler patch resourceclaim team-claim --type=merge \
    -p '{"metadata":{"finalizers":["resource.kubernetes.io/delete-protection"]}}' >/dev/null \
    || fail "the scheduler may not protect a claim with resource.kubernetes.io/delete-protection"
  kubectl patch resourceclaim -n "$NS" team-claim --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  as_scheduler delete resourceclaim pending-extended-resources >/dev/null \
    || fail "the scheduler may not delete the claim it made for a pod's extended resources"
  say "scheduler token: ResourceClaims made, deleted and changed only as extended resources and the finalizer need"
fi

# 5. The preempting PriorityClass.
refused "tessel-production in an unlisted namespace" it_pod prod --priority-class tessel-production
kubectl label namespace "$NS" tessel.io/allow-priority-tessel-production=true >/dev/null
prod_allowed() { it_pod prod --priority-class tessel-production; }
it_wait 30 "tessel-production allowed once the namespace is listed" prod_allowed
say "tessel-production: refused, then allowed in a listed namespace"

it_stop_scheduler main
exit 0
