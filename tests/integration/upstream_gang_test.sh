#!/usr/bin/env bash
# upstream_gang_test.sh: Kubernetes 1.37's own gang API and DRA claims, on a kube-apiserver with
# the GenericWorkload feature gate on and scheduling.k8s.io/v1beta1 served (a side apiserver on
# the shared etcd: the shared one keeps its defaults).
#   - The scheduler discovers that v1beta1 is served and reads PodGroups in it.
#   - A v1beta1 PodGroup (minCount 3) and three 4-GPU pods that name it in spec.schedulingGroup,
#     with two 4-GPU nodes: none is bound; each pod has PodScheduled=False and a
#     FailedScheduling event, the PodGroup PodGroupInitiallyScheduled=False (Unschedulable).
#     A third node appears: all three are bound, and the condition turns True (Scheduled).
#   - A pod whose DRA claim comes from a template no one made a claim from waits: PodScheduled=False
#     names the claim and says so; a plain pod beside it is bound.
#   - A PodGroup's own claim (DRAWorkloadResourceClaims, beta in 1.37): a v1beta1 PodGroup (minCount
#     2) lists a claim of 2 DRA devices in spec.resourceClaims, and its two pods name it in theirs;
#     the devices are on one node: both pods are bound there, and the claim is allocated once,
#     reserved for the PodGroup (reservedFor: podgroups, the PodGroup's uid), not for each pod.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_lib.sh"
it_begin upstreamgang

side_apiserver_start --feature-gates=GenericWorkload=true,DRAWorkloadResourceClaims=true \
  --runtime-config=scheduling.k8s.io/v1beta1=true
k() { kubectl --kubeconfig "$SIDE_ADMIN" "$@"; }
k get --raw /apis/scheduling.k8s.io/v1beta1 | matches '"podgroups"' || fail "the side apiserver does not serve v1beta1 podgroups"

it_nodes ug-a:4 ug-b:4
it_start_scheduler main --kubeconfig "$SIDE_KUBECONFIG" --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
grep -q "PodGroups (spec.schedulingGroup) are read as scheduling.k8s.io/v1beta1" "$(scheduler_log main)" \
  || fail "the scheduler did not discover scheduling.k8s.io/v1beta1: $(grep gangs "$(scheduler_log main)")"

# pod NAME GPUS EXTRA-SPEC-JSON: a pod on this test's nodes, created through the side apiserver.
pod() {
  python3 - "$NS" "$IT_NAME" "$@" <<'PY' | k apply -f - >/dev/null
import json, sys
ns, test, name, gpus, extra = sys.argv[1:6]
resources = {"requests": {"cpu": "100m", "memory": "64Mi"}}
if int(gpus):
    resources["limits"] = {"nvidia.com/gpu": gpus}
spec = {"schedulerName": "tessel", "terminationGracePeriodSeconds": 0,
        "nodeSelector": {"tessel-it": test},
        "containers": [{"name": "main", "image": "busybox", "resources": resources}]}
spec.update(json.loads(extra))
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}))
PY
}
scheduled_message() { k get pod -n "$NS" "$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'; }
scheduled_status() { k get pod -n "$NS" "$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}'; }
has_failed_event() {
  k get events -n "$NS" --field-selector "involvedObject.name=$1,reason=FailedScheduling" -o name | matches .
}
group_condition() {
  k get podgroups.v1beta1.scheduling.k8s.io -n "$NS" train \
    -o "jsonpath={.status.conditions[?(@.type==\"PodGroupInitiallyScheduled\")].$1}"
}

# ---- a v1beta1 gang that does not fit yet -------------------------------------------------------
k apply -f - >/dev/null <<YAML
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: $NS}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
YAML
for i in 0 1 2; do pod "train-$i" 4 '{"schedulingGroup": {"podGroupName": "train"}}'; done
for i in 0 1 2; do
  it_wait 60 "train-$i: PodScheduled=False" eval '[[ $(scheduled_status train-'$i') == False ]]'
  it_wait 30 "train-$i: FailedScheduling event" has_failed_event "train-$i"
  say "train-$i: $(scheduled_message "train-$i")"
  [[ $(scheduled_message "train-$i") == *"PodGroup $NS/train"* ]] \
    || fail "train-$i's condition does not name its PodGroup: $(scheduled_message "train-$i")"
done
it_wait 30 "PodGroup train: PodGroupInitiallyScheduled=False" eval '[[ $(group_condition status) == False ]]'
[[ $(group_condition reason) == Unschedulable ]] || fail "PodGroup train: reason $(group_condition reason), want Unschedulable"
say "PodGroup train: $(group_condition message)"

# ---- DRA: held with its reason; a plain pod beside it is bound ---------------------------------
pod claimed 0 '{"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
                "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}'
pod plain 0 '{}'
it_wait 30 "plain bound" it_bound plain
it_wait 30 "claimed: PodScheduled=False" eval '[[ $(scheduled_status claimed) == False ]]'
msg=$(scheduled_message claimed)
say "claimed: $msg"
# No template single-gpu exists, so no claim is made for the pod: it waits for one, named.
[[ $msg == *'resource claim "gpu" (ResourceClaimTemplate single-gpu)'* && $msg == *"waiting for the resourceclaim controller to create the claim"* ]] \
  || fail "claimed: condition message does not name the claim and say why: $msg"

# Until now no member of the gang (nor the DRA pod) was bound.
for p in train-0 train-1 train-2 claimed; do [[ -z $(node_of "$p") ]] || fail "$p was bound"; done

# ---- room for the whole gang ------------------------------------------------------------------
it_nodes ug-c:4
for i in 0 1 2; do it_wait 60 "train-$i bound" it_bound "train-$i"; done
declare -A seen=()
for i in 0 1 2; do seen[$(node_of "train-$i")]=1; done
((${#seen[@]} == 3)) || fail "the gang's three 4-GPU pods are not on three nodes: ${!seen[*]}"
it_wait 30 "PodGroup train: PodGroupInitiallyScheduled=True" eval '[[ $(group_condition status) == True ]]'
[[ $(group_condition reason) == Scheduled ]] || fail "PodGroup train: reason $(group_condition reason), want Scheduled"
[[ -z $(node_of claimed) ]] || fail "claimed was bound once room appeared"

# ---- a PodGroup's own DRA claim ------------------------------------------------------------------
DRIVER="gpu.$NS.example.com"
cleanup_cluster_scoped() {
  k delete deviceclass "$NS-gpu" --ignore-not-found >/dev/null 2>&1 || true
  k delete resourceslice "$NS-ug-d" "$NS-ug-e" --ignore-not-found >/dev/null 2>&1 || true
}
it_on_exit cleanup_cluster_scoped
it_nodes ug-d:0 ug-e:0
slice() {  # NODE: two devices of the test driver on the node
  cat <<YAML
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NS-$1}
spec:
  driver: $DRIVER
  nodeName: $1
  pool: {name: $1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
YAML
}
{ cat <<YAML
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $NS-gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "$DRIVER"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pair, namespace: $NS}
spec:
  devices:
    requests: [{name: gpus, exactly: {deviceClassName: $NS-gpu, allocationMode: ExactCount, count: 2}}]
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: duo, namespace: $NS}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  resourceClaims: [{name: gpus, resourceClaimName: pair}]
YAML
  slice ug-d; slice ug-e; } | k apply -f - >/dev/null
[[ $(k get podgroups.v1beta1.scheduling.k8s.io -n "$NS" duo -o 'jsonpath={.spec.resourceClaims[0].resourceClaimName}') == pair ]] \
  || fail "the side apiserver dropped PodGroup duo's spec.resourceClaims (DRAWorkloadResourceClaims off?)"
for i in 0 1; do
  pod "duo-$i" 0 '{"schedulingGroup": {"podGroupName": "duo"},
                   "resourceClaims": [{"name": "gpus", "resourceClaimName": "pair"}],
                   "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpus"}]}}]}'
done
for i in 0 1; do it_wait 60 "duo-$i bound" it_bound "duo-$i"; done
[[ $(node_of duo-0) == "$(node_of duo-1)" ]] || fail "duo's pods share a claim of one node's devices but are on $(node_of duo-0) and $(node_of duo-1)"
reserved=$(k get resourceclaim -n "$NS" pair -o 'jsonpath={range .status.reservedFor[*]}{.apiGroup}/{.resource}/{.name}/{.uid} {end}')
duo_uid=$(k get podgroups.v1beta1.scheduling.k8s.io -n "$NS" duo -o 'jsonpath={.metadata.uid}')
say "claim pair: reservedFor $reserved; allocated on $(k get resourceclaim -n "$NS" pair -o 'jsonpath={.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values[0]}')"
[[ $reserved == "scheduling.k8s.io/podgroups/duo/$duo_uid " ]] || fail "claim pair is reserved for '$reserved', want PodGroup duo ($duo_uid) only"
[[ $(k get resourceclaim -n "$NS" pair -o 'jsonpath={.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values[0]}') == "$(node_of duo-0)" ]] \
  || fail "claim pair is not allocated on duo's node $(node_of duo-0)"
[[ $(k get resourceclaim -n "$NS" pair -o 'jsonpath={.status.allocation.devices.results[*].device}') == "gpu-0 gpu-1" ]] \
  || fail "claim pair: devices $(k get resourceclaim -n "$NS" pair -o 'jsonpath={.status.allocation.devices.results[*].device}')"

it_stop_scheduler main
# The shared apiserver does not serve v1beta1: the namespace's deletion would leave these behind.
k delete podgroups.v1beta1.scheduling.k8s.io -n "$NS" --all --wait=false >/dev/null
side_apiserver_stop
exit 0
