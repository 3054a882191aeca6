#!/usr/bin/env bash
# provisioning_test.sh: ProvisioningRequests for gangs that fit nowhere (docs/provisioning.md),
# against the real API server with the upstream CRD (testdata/provisioningrequests.yaml) and a
# stand-in provisioner (stand_in_provisioner.py) that answers requests by their class.
#  1. A gang of 4 whole-node (8-GPU) pods whose pool has no node: Tessel creates exactly one
#     request (with one PodTemplate) and annotates the members for cluster-autoscaler; the
#     stand-in registers 4 nodes and marks it Provisioned; the gang binds whole on the new nodes,
#     and the request and its template are deleted.
#  2. A gang whose request is marked Failed stays pending, unbound, with the reason on its
#     PodGroup (ProvisioningFailed) and on its pods' PodScheduled condition; deleting its
#     PodGroup deletes the request.
#  3. A single pod marked for provisioning gets a request of its own and lands on its node.
#  4. A flavored Queue whose only flavor has no node, and whose ResourceFlavor carries
#     spec.provisioning: an unmarked gang asks with the flavor's class, its template selects the
#     flavor's node labels (the stand-in's nodes get them), and it binds on those nodes.
#  5. Issue 37, defect 7: a user who may only create ProvisioningRequests in namespace mallory
#     creates one labelled and annotated as Tessel's request for the victim's gang. Tessel
#     refuses it (a log line naming the field), keeps the victim's own request, and never
#     deletes mallory's.
source "$(dirname "$0")/lib.sh"
it_begin provisioning

kubectl apply -f "$TESSEL_ROOT/manifests/crds/podgroups.yaml" >/dev/null
kubectl apply -f "$TESSEL_ROOT/tests/integration/testdata/provisioningrequests.yaml" >/dev/null
kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" -f "$TESSEL_ROOT/manifests/crds/resourceflavors.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/podgroups.scheduling.x-k8s.io \
  crd/provisioningrequests.autoscaling.x-k8s.io crd/queues.tessel.io crd/resourceflavors.tessel.io >/dev/null \
  || fail "CRDs not established"
# Queues and flavors are cluster-scoped: named after the test, deleted at the end.
FLAVOR="$NS-spot"
cleanup_flavored() {
  kubectl delete queues.tessel.io "$NS" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete resourceflavors.tessel.io "$FLAVOR" --ignore-not-found >/dev/null 2>&1 || true
}
cleanup_flavored
it_on_exit cleanup_flavored

# One small node of another pool: the cluster is not empty, the gang's pool is.
it_nodes prov-small:4:pool=small
answered="$IT_WORK/answered"
: >"$answered"
python3 "$TESSEL_ROOT/tests/integration/stand_in_provisioner.py" --namespace "$NS" --test "$IT_NAME" \
  --cluster "$CLUSTER" --log "$answered" >>"$IT_WORK/provisioner.log" 2>&1 &
IT_PIDS+=("$!")
it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

requests() { kubectl get provisioningrequests -n "$NS" -o name; }
templates() { kubectl get podtemplates -n "$NS" -o name; }
none_left() { [[ -z $(requests) && -z $(templates) ]]; }

# 1. Provisioned: the gang lands whole on the new nodes.
it_podgroup train 4 provision.test.tessel.io
for i in 0 1 2 3; do it_pod "train-$i" --gpus 8 --select pool=gpu8 --label scheduling.x-k8s.io/pod-group=train; done
for i in 0 1 2 3; do it_wait 180 "train-$i bound" it_bound "train-$i"; done
declare -A seen=()
for i in 0 1 2 3; do
  n=$(node_of "train-$i")
  [[ $n == tessel-podgroup-train-1-* ]] || fail "train-$i is on $n, not on a provisioned node"
  [[ -z ${seen[$n]:-} ]] || fail "train-$i shares node $n"
  seen[$n]=1
done
[[ $(wc -l <"$answered") == 1 ]] || fail "want exactly one request, the provisioner answered: $(cat "$answered")"
[[ $(cat "$answered") == "tessel-podgroup-train-1 provision.test.tessel.io" ]] || fail "answered: $(cat "$answered")"
consume=$(kubectl get pod -n "$NS" train-0 \
  -o 'jsonpath={.metadata.annotations.autoscaling\.x-k8s\.io/consume-provisioning-request}')
[[ $consume == tessel-podgroup-train-1 ]] || fail "train-0 consume-provisioning-request annotation: '$consume'"
it_wait 60 "request and template deleted" none_left
say "train: bound on ${!seen[*]}; request created once and deleted"

# 2. Failed: the gang stays pending, and says why.
it_podgroup stuck 2 fail.test.tessel.io
for i in 0 1; do it_pod "stuck-$i" --gpus 8 --select pool=gpu8-none --label scheduling.x-k8s.io/pod-group=stuck; done
reason() { kubectl get podgroup -n "$NS" stuck -o 'jsonpath={.status.conditions[?(@.type=="Scheduled")].reason}'; }
failed() { [[ $(reason) == ProvisioningFailed ]]; }
it_wait 120 "stuck: ProvisioningFailed" failed
message=$(kubectl get podgroup -n "$NS" stuck -o 'jsonpath={.status.conditions[?(@.type=="Scheduled")].message}')
[[ $message == *"tessel-podgroup-stuck-1"*"failed: NoCapacity: the stand-in provisioner has no capacity"* ]] \
  || fail "stuck message: $message"
pod_message() { kubectl get pod -n "$NS" stuck-0 -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'; }
pod_says() { [[ $(pod_message) == *"failed: NoCapacity"* ]]; }
it_wait 60 "stuck-0 PodScheduled message" pod_says
sleep 2
[[ -z $(node_of stuck-0) && -z $(node_of stuck-1) ]] || fail "a member of the failed gang was bound"
[[ $(requests) == *tessel-podgroup-stuck-1 && $(requests | wc -l) == 1 ]] || fail "requests: $(requests)"
say "stuck: $message"

# Deleting the gang deletes its request.
kubectl delete podgroup -n "$NS" stuck >/dev/null
it_wait 60 "stuck's request deleted" none_left

# 3. A single pod marked for provisioning: its own request, its node, then the request goes.
it_pod solo --gpus 8 --select pool=solo --annotation tessel.io/provisioning-class=provision.test.tessel.io
it_wait 120 "solo bound" it_bound solo
[[ $(node_of solo) == tessel-pod-solo-1-0 ]] || fail "solo is on $(node_of solo)"
it_wait 60 "solo's request deleted" none_left
grep -qx "tessel-pod-solo-1 provision.test.tessel.io" "$answered" || fail "answered: $(cat "$answered")"

# 4. The flavor the gang would use gives the class and the nodes' labels (the failed gang's
# pods go first: they select a pool outside the flavor).
kubectl delete pod -n "$NS" stuck-0 stuck-1 >/dev/null
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: ResourceFlavor
metadata: {name: $FLAVOR}
spec:
  nodeLabels: {pool: $FLAVOR}
  provisioning: {className: provision.test.tessel.io}
---
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $NS}
spec:
  namespaces: [$NS]
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $FLAVOR
      resources: [{name: nvidia.com/gpu, nominalQuota: "16"}]
YAML
it_podgroup flav 2
for i in 0 1; do it_pod "flav-$i" --gpus 8 --label scheduling.x-k8s.io/pod-group=flav; done
for i in 0 1; do it_wait 180 "flav-$i bound" it_bound "flav-$i"; done
for i in 0 1; do
  n=$(node_of "flav-$i")
  [[ $n == tessel-podgroup-flav-1-* ]] || fail "flav-$i is on $n, not on a provisioned node"
  [[ $(kubectl get node "$n" -o 'jsonpath={.metadata.labels.pool}') == "$FLAVOR" ]] || fail "node $n is not in $FLAVOR"
done
grep -qx "tessel-podgroup-flav-1 provision.test.tessel.io" "$answered" || fail "answered: $(cat "$answered")"
it_wait 60 "flav's request deleted" none_left
say "flav: bound on the $FLAVOR nodes its request asked for"

# 5. Another namespace's request never stands for a gang. The victim's gang asks with a class
# the stand-in leaves pending. (The flavored Queue goes first: its quota is spent by flav, and the
# victim's pool is outside its flavor, so the victim would wait for quota and ask for nothing.)
kubectl delete pod -n "$NS" flav-0 flav-1 --wait=false >/dev/null
cleanup_flavored
MALLORY="$NS-mallory"
kubectl delete namespace "$MALLORY" --ignore-not-found --wait=false >/dev/null 2>&1 || true
it_wait 60 "old $MALLORY gone" eval '! kubectl get namespace "$MALLORY"'
kubectl create namespace "$MALLORY" >/dev/null
trap 'rc=$?; cleanup_flavored; kubectl delete namespace "$MALLORY" --wait=false >/dev/null 2>&1; set +e; (exit $rc); it_cleanup' EXIT
kubectl create serviceaccount -n "$MALLORY" mallory >/dev/null
kubectl create role -n "$MALLORY" prov-writer --verb=create,get,list \
  --resource=provisioningrequests.autoscaling.x-k8s.io >/dev/null
kubectl create rolebinding -n "$MALLORY" prov-writer --role=prov-writer \
  --serviceaccount="$MALLORY:mallory" >/dev/null
it_podgroup victim 2 pending.test.tessel.io
for i in 0 1; do it_pod "victim-$i" --gpus 8 --select pool=victim --label scheduling.x-k8s.io/pod-group=victim; done
victim_request() { kubectl get provisioningrequests -n "$NS" tessel-podgroup-victim-1 -o name; }
it_wait 120 "the victim's request" victim_request
kubectl --as="system:serviceaccount:$MALLORY:mallory" create -f - >/dev/null <<YAML
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata:
  name: tessel-podgroup-victim-99
  namespace: $MALLORY
  labels: {app.kubernetes.io/managed-by: tessel}
  annotations: {tessel.io/gang: "podgroup:$NS/victim"}
spec:
  provisioningClassName: pending.test.tessel.io
  podSets: [{podTemplateRef: {name: whatever}, count: 1}]
YAML
refused() { grep -q "ProvisioningRequest $MALLORY/tessel-podgroup-victim-99: metadata.annotations\[tessel.io/gang\] \"podgroup:$NS/victim\" names a gang of namespace \"$NS\"" "$(scheduler_log main)"; }
it_wait 60 "the hijack refused in the log" refused
# The victim's gang tries again (a new member arrives) and still waits for its own request.
it_pod victim-2 --gpus 8 --select pool=victim --label scheduling.x-k8s.io/pod-group=victim
own_request_named() {
  kubectl get podgroup -n "$NS" victim -o 'jsonpath={.status.conditions[?(@.type=="Scheduled")].message}' \
    | matches "ProvisioningRequest $NS/tessel-podgroup-victim-1"
}
it_wait 60 "the victim's PodGroup names its own request" own_request_named
victim_request >/dev/null || fail "the victim's own request was deleted"
kubectl get provisioningrequests -n "$MALLORY" tessel-podgroup-victim-99 -o name >/dev/null \
  || fail "Tessel deleted mallory's request"
message=$(kubectl get podgroup -n "$NS" victim -o 'jsonpath={.status.conditions[?(@.type=="Scheduled")].message}')
[[ $message != *"$MALLORY"* ]] || fail "the victim's PodGroup names mallory: $message"
say "hijack: refused; the victim waits for its own request"

it_stop_scheduler main
exit 0
