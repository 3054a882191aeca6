#!/usr/bin/env bash
# dra_test.sh: Dynamic Resource Allocation (resource.k8s.io/v1) on the real API server.
#   - A DeviceClass selects a test driver's devices by CEL; a ResourceSlice publishes 2 of them on
#     one of two nodes. A pod whose ResourceClaim asks one device is bound to that node, and its
#     claim's status holds the allocation (driver, pool, device, a node selector for the node)
#     and reservedFor the pod, written before the bind.
#   - A second pod's claim gets the other device; a third pod's claim finds none left: it stays
#     pending with kube-scheduler's FailedScheduling message ("cannot allocate all claims"), and
#     its claim stays unallocated.
#   - A claim that the CEL selector rejects for every device (a model no device has) is never
#     allocated.
#   - A pod that names a ResourceClaimTemplate: the controller-manager's resourceclaim controller
#     makes its claim; Tessel resolves it through status.resourceClaimStatuses and allocates it
#     once the third pod's device is free.
#   - Partitions, consumable capacity and a shared claim on dra-c: a GPU published whole and as
#     two halves drawing on one counter set, a plain GPU, and a device that allows multiple
#     allocations of 40Gi. A claim for a whole GPU gets the plain one (Tessel keeps the
#     partitionable GPU whole; first fit would split it); two halves take the partitionable GPU's
#     counters, so a second whole GPU waits until both halves are released; two 20Gi shares fit
#     on the shared device (distinct share IDs), a third does not; a claim named by two pods is
#     reserved for both.
#   - `tesselctl snapshot` writes the DeviceClasses, ResourceSlices and ResourceClaims, and
#     `tessel-bench replay` reads that snapshot.
#   - Extended resources backed by DRA (DRAExtendedResource, GA in 1.37): a DeviceClass with
#     extendedResourceName nvidia.com/gpu and 2 devices on dra-a, a node without the device
#     plugin. An ordinary pod asking nvidia.com/gpu: 1 is bound to dra-a; the claim Tessel made
#     for it is owned by the pod, annotated, allocated one device and reserved for the pod, and
#     the pod's status.extendedResourceClaimStatus names it and maps the container to its request.
#     A pod asking 2 waits ("cannot allocate all claims"); once the first pod is deleted its claim
#     goes with it (garbage collector) and the second pod gets both devices.
#   - Preemption frees DRA devices: a pod of a higher PriorityClass asking nvidia.com/gpu: 1 evicts
#     the pod holding both devices of dra-a and runs there once its claim is released.
#   - Quota counts claimed devices: with a Queue of 1 GPU held by that pod, a pod whose own claim
#     asks a device of the class serving nvidia.com/gpu waits with reason QuotaExceeded while a
#     device is free, and is placed once the quota is 2.
source "$(dirname "$0")/lib.sh"
it_begin dra

# The server must serve resource.k8s.io/v1 (Kubernetes 1.34 and later).
kubectl get --raw /apis/resource.k8s.io/v1 >/dev/null 2>&1 || fail "the API server does not serve resource.k8s.io/v1"

DRIVER="gpu.$NS.example.com"
CLASS="$NS-gpu"
it_nodes dra-a:0 dra-b:0 dra-c:0
cleanup_cluster_scoped() {
  kubectl delete deviceclass "$CLASS" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete resourceslice "$NS-dra-b" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete deviceclass "$CLASS-ext" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete resourceslice "$NS-dra-a" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete deviceclass "$CLASS-part" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete priorityclass "$NS-urgent" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete queues.tessel.io "$NS-team" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete resourceslice "$NS-dra-c-counters" "$NS-dra-c-devices" --ignore-not-found >/dev/null 2>&1 || true
}
cleanup_cluster_scoped
it_on_exit cleanup_cluster_scoped

kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $CLASS}
spec:
  selectors:
  - cel: {expression: 'device.driver == "$DRIVER"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NS-dra-b}
spec:
  driver: $DRIVER
  nodeName: dra-b
  pool: {name: dra-b, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: a100}
    capacity:
      memory: {value: 80Gi}
  - name: gpu-1
    attributes:
      model: {string: a100}
    capacity:
      memory: {value: 80Gi}
YAML

claim() {  # NAME [CEL]: a claim of one device of the class (and the selector)
  python3 - "$NS" "$CLASS" "$@" <<'EOF' | kubectl apply -f - >/dev/null
import json, sys
ns, cls, name = sys.argv[1:4]
exactly = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}
if len(sys.argv) > 4:
    exactly["selectors"] = [{"cel": {"expression": sys.argv[4]}}]
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": name, "namespace": ns},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}))
EOF
}
pod() {  # NAME CLAIM|template:TEMPLATE
  python3 - "$NS" "$IT_NAME" "$@" <<'EOF' | kubectl apply -f - >/dev/null
import json, sys
ns, test, name, source = sys.argv[1:5]
ref = ({"resourceClaimTemplateName": source[len("template:"):]} if source.startswith("template:")
       else {"resourceClaimName": source})
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                  "spec": {"schedulerName": "tessel", "terminationGracePeriodSeconds": 0,
                           "nodeSelector": {"tessel-it": test},
                           "resourceClaims": [dict({"name": "gpu"}, **ref)],
                           "containers": [{"name": "main", "image": "busybox",
                                           "resources": {"claims": [{"name": "gpu"}]}}]}}))
EOF
}
allocated_device() { kubectl get resourceclaim -n "$NS" "$1" -o 'jsonpath={.status.allocation.devices.results[0].device}'; }
failed_events() {
  kubectl get events -n "$NS" --field-selector "involvedObject.name=$1,reason=FailedScheduling" \
    -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}'
}

it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"

# ---- one claim, one device -----------------------------------------------------------------------
claim first
pod first first
it_wait 60 "first bound" it_bound first
[[ $(node_of first) == dra-b ]] || fail "first is on $(node_of first), not on dra-b (the node with the devices)"
status=$(kubectl get resourceclaim -n "$NS" first -o json)
python3 - "$status" "$DRIVER" "$(kubectl get pod -n "$NS" first -o 'jsonpath={.metadata.uid}')" <<'EOF' || fail "first's claim status: $status"
import json, sys
claim, driver, uid = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
st = claim.get("status", {})
results = st["allocation"]["devices"]["results"]
assert len(results) == 1, results
r = results[0]
assert r["request"] == "gpu" and r["driver"] == driver and r["pool"] == "dra-b", r
assert r["device"] in ("gpu-0", "gpu-1"), r
terms = st["allocation"]["nodeSelector"]["nodeSelectorTerms"]
assert any(f.get("values") == ["dra-b"] for t in terms for f in t.get("matchFields", []) + t.get("matchExpressions", [])), terms
reserved = st.get("reservedFor", [])
assert [x.get("uid") for x in reserved] == [uid], reserved
assert reserved[0]["resource"] == "pods" and reserved[0]["name"] == "first", reserved
EOF

# ---- the second device, then none left ---------------------------------------------------------------
claim second
pod second second
it_wait 60 "second bound" it_bound second
[[ $(allocated_device second) != "$(allocated_device first)" ]] \
  || fail "first and second were given the same device $(allocated_device first)"
claim third
pod third third
it_wait 60 "third: FailedScheduling" eval '[[ -n $(failed_events third) ]]'
failed_events third | matches "cannot allocate all claims" || fail "third's FailedScheduling is not kube-scheduler's: $(failed_events third)"
[[ -z $(node_of third) ]] || fail "third was bound with no device left for its claim"
[[ -z $(allocated_device third) ]] || fail "third's claim was allocated $(allocated_device third) with no device free"

# ---- a selector no device matches --------------------------------------------------------------------
claim h100 'device.attributes["'"$DRIVER"'"].model == "h100"'
pod h100 h100
it_wait 60 "h100: FailedScheduling" eval '[[ -n $(failed_events h100) ]]'
[[ -z $(node_of h100) && -z $(allocated_device h100) ]] || fail "h100's claim was allocated to a device its selector rejects"

# ---- a claim made from a template by the controller-manager ----------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: $NS}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: $CLASS, allocationMode: ExactCount, count: 1}
YAML
pod templated template:one-gpu
templated_claim() { kubectl get pod -n "$NS" templated -o 'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}'; }
it_wait 60 "the controller-manager made templated's claim" eval '[[ -n $(templated_claim) ]]'
[[ -z $(node_of templated) ]] || fail "templated was bound while both devices were taken"
# Room: first leaves. Its claim is released (reservedFor emptied by the controller-manager), its
# device free again; the templated pod and third compete for it: exactly one of them gets it.
kubectl delete pod -n "$NS" first --wait=true >/dev/null
one_more_bound() { [[ -n $(node_of templated) || -n $(node_of third) ]]; }
it_wait 90 "templated or third bound once first's device is free" one_more_bound
if [[ -n $(node_of templated) ]]; then
  [[ -n $(allocated_device "$(templated_claim)") ]] || fail "templated was bound with its claim unallocated"
fi
[[ -z $(node_of templated) || -z $(node_of third) ]] || fail "templated and third were both bound on one free device"


# ---- partitions, consumable capacity and a shared claim (dra-c) -------------------------------------
PART="part.$DRIVER"
kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $CLASS-part}
spec:
  selectors:
  - cel: {expression: 'device.driver == "$PART"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NS-dra-c-counters}
spec:
  driver: $PART
  nodeName: dra-c
  pool: {name: dra-c, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: gpu-0
    counters:
      memory: {value: 80Gi}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NS-dra-c-devices}
spec:
  driver: $PART
  nodeName: dra-c
  pool: {name: dra-c, generation: 1, resourceSliceCount: 2}
  devices:
  - name: gpu-0-whole
    attributes: {profile: {string: whole}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 80Gi}}}]
  - name: gpu-0-half-a
    attributes: {profile: {string: half}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
  - name: gpu-0-half-b
    attributes: {profile: {string: half}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
  - name: gpu-1
    attributes: {profile: {string: whole}}
  - name: shared-0
    attributes: {profile: {string: shared}}
    allowMultipleAllocations: true
    capacity:
      memory:
        value: 40Gi
        requestPolicy: {default: 10Gi, validRange: {min: 1Gi}}
YAML
pclaim() {  # NAME PROFILE [MEMORY]: one device of the partition class with that profile (and capacity)
  python3 - "$NS" "$CLASS-part" "$PART" "$@" <<'EOF' | kubectl apply -f - >/dev/null
import json, sys
ns, cls, driver, name, profile = sys.argv[1:6]
exactly = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1,
           "selectors": [{"cel": {"expression": 'device.attributes["%s"].profile == "%s"' % (driver, profile)}}]}
if len(sys.argv) > 6:
    exactly["capacity"] = {"requests": {"memory": sys.argv[6]}}
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": name, "namespace": ns},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}))
EOF
}
claim_field() { kubectl get resourceclaim -n "$NS" "$1" -o "jsonpath=$2"; }

pclaim whole-a whole
pod whole-a whole-a
it_wait 60 "whole-a bound" it_bound whole-a
[[ $(node_of whole-a) == dra-c ]] || fail "whole-a is on $(node_of whole-a), not dra-c"
[[ $(allocated_device whole-a) == gpu-1 ]] \
  || fail "whole-a got $(allocated_device whole-a): the plain GPU keeps the partitionable one whole"
for h in half-a half-b; do
  pclaim "$h" half
  pod "$h" "$h"
  it_wait 60 "$h bound" it_bound "$h"
done
halves="$(allocated_device half-a) $(allocated_device half-b)"
[[ $halves == "gpu-0-half-a gpu-0-half-b" || $halves == "gpu-0-half-b gpu-0-half-a" ]] \
  || fail "the two halves got '$halves'"
pclaim whole-b whole
pod whole-b whole-b
it_wait 60 "whole-b: FailedScheduling (its GPU's counters are held by the halves)" eval '[[ -n $(failed_events whole-b) ]]'
[[ -z $(node_of whole-b) && -z $(allocated_device whole-b) ]] || fail "whole-b was given $(allocated_device whole-b) beside the halves"

for sh in share-a share-b share-c; do pclaim "$sh" shared 20Gi; done
pod share-a share-a
pod share-b share-b
it_wait 60 "share-a bound" it_bound share-a
it_wait 60 "share-b bound" it_bound share-b
for sh in share-a share-b; do
  [[ $(allocated_device "$sh") == shared-0 ]] || fail "$sh got $(allocated_device "$sh")"
  consumed=$(claim_field "$sh" '{.status.allocation.devices.results[0].consumedCapacity.memory}')
  [[ $consumed == 20Gi || $consumed == 21474836480 ]] \
    || fail "$sh's consumed capacity: $(claim_field "$sh" '{.status.allocation.devices.results[0]}')"
done
share_id() { claim_field "$1" '{.status.allocation.devices.results[0].shareID}'; }
[[ -n $(share_id share-a) && $(share_id share-a) != "$(share_id share-b)" ]] \
  || fail "the shares' IDs: '$(share_id share-a)' and '$(share_id share-b)'"
pod share-c share-c
it_wait 60 "share-c: FailedScheduling (40Gi given out)" eval '[[ -n $(failed_events share-c) ]]'
[[ -z $(node_of share-c) ]] || fail "share-c was bound beyond the shared device's capacity"
pod share-a-too share-a
it_wait 60 "share-a-too bound on share-a's claim" it_bound share-a-too
reserved=$(claim_field share-a '{.status.reservedFor[*].name}')
[[ $reserved == "share-a share-a-too" || $reserved == "share-a-too share-a" ]] || fail "share-a is reserved for '$reserved'"

# The halves go: their claims are released, the counters free, and whole-b gets the whole GPU.
kubectl delete pod -n "$NS" half-a half-b --wait=true >/dev/null
it_wait 90 "whole-b bound once both halves are released" it_bound whole-b
[[ $(allocated_device whole-b) == gpu-0-whole ]] || fail "whole-b got $(allocated_device whole-b)"

# ---- a snapshot of the cluster carries the DRA objects, and replay reads them ---------------------------
snapshot="$IT_WORK/snapshot.json"
"$TESSEL_CTL_BIN" --kubeconfig "$KUBECONFIG" snapshot -o "$snapshot" >/dev/null || fail "tesselctl snapshot failed"
python3 - "$snapshot" "$NS" "$CLASS-part" <<'EOF' || fail "the snapshot lacks the test's DRA objects"
import json, sys
items = json.load(open(sys.argv[1]))["items"]
kinds = {(i.get("kind"), i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items}
ns, cls = sys.argv[2], sys.argv[3]
assert ("DeviceClass", "", cls) in kinds, sorted(k for k in kinds if k[0] == "DeviceClass")
assert ("ResourceSlice", "", ns + "-dra-c-devices") in kinds
assert ("ResourceClaim", ns, "whole-b") in kinds
EOF
"$TESSEL_BENCH_BIN" replay --snapshot "$snapshot" >"$IT_WORK/replay.json" 2>&1 || fail "replay of the snapshot failed: $(tail -5 "$IT_WORK/replay.json")"

# ---- extended resources backed by DRA --------------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $CLASS-ext}
spec:
  extendedResourceName: nvidia.com/gpu
  selectors:
  - cel: {expression: 'device.driver == "ext.$DRIVER"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $NS-dra-a}
spec:
  driver: ext.$DRIVER
  nodeName: dra-a
  pool: {name: dra-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
  - name: gpu-1
YAML
gpu_pod() {  # NAME GPUS: an ordinary pod asking nvidia.com/gpu
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS}
spec:
  schedulerName: tessel
  terminationGracePeriodSeconds: 0
  nodeSelector: {tessel-it: $IT_NAME}
  containers:
  - name: main
    image: busybox
    resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}
gpu_pod plain-one 1
it_wait 60 "plain-one bound" it_bound plain-one
[[ $(node_of plain-one) == dra-a ]] || fail "plain-one is on $(node_of plain-one), not on dra-a (where the class's devices are)"
ext_claim() { kubectl get pod -n "$NS" "$1" -o 'jsonpath={.status.extendedResourceClaimStatus.resourceClaimName}'; }
[[ -n $(ext_claim plain-one) ]] || fail "plain-one's status names no extended resource claim: $(kubectl get pod -n "$NS" plain-one -o json)"
python3 - "$(kubectl get resourceclaim -n "$NS" "$(ext_claim plain-one)" -o json)" \
  "$(kubectl get pod -n "$NS" plain-one -o json)" "ext.$DRIVER" <<'EOF' || fail "plain-one's extended resource claim is not as kube-scheduler makes it"
import json, sys
claim, pod, driver = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
meta = claim["metadata"]
assert meta["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true", meta
owners = meta["ownerReferences"]
assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in owners] == \
    [("Pod", "plain-one", pod["metadata"]["uid"], True)], owners
assert "resource.kubernetes.io/delete-protection" in meta.get("finalizers", []), meta
results = claim["status"]["allocation"]["devices"]["results"]
assert len(results) == 1 and results[0]["driver"] == driver and results[0]["pool"] == "dra-a", results
assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]], claim["status"]
mapping = pod["status"]["extendedResourceClaimStatus"]["requestMappings"]
assert mapping == [{"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": results[0]["request"]}], mapping
EOF
gpu_pod plain-two 2
it_wait 60 "plain-two: FailedScheduling" eval '[[ -n $(failed_events plain-two) ]]'
failed_events plain-two | matches "cannot allocate all claims" || fail "plain-two's FailedScheduling: $(failed_events plain-two)"
[[ -z $(node_of plain-two) ]] || fail "plain-two was bound with one device free for two"
first_ext_claim=$(ext_claim plain-one)
kubectl delete pod -n "$NS" plain-one --wait=true >/dev/null
claim_gone() { ! kubectl get resourceclaim -n "$NS" "$first_ext_claim" >/dev/null 2>&1; }
it_wait 60 "plain-one's extended resource claim deleted with the pod" claim_gone
it_wait 90 "plain-two bound once both devices are free" it_bound plain-two
[[ $(node_of plain-two) == dra-a ]] || fail "plain-two is on $(node_of plain-two)"
devices=$(kubectl get resourceclaim -n "$NS" "$(ext_claim plain-two)" -o 'jsonpath={.status.allocation.devices.results[*].device}')
[[ $devices == "gpu-0 gpu-1" || $devices == "gpu-1 gpu-0" ]] || fail "plain-two's claim holds '$devices', not both devices"

# ---- preemption frees a victim's DRA devices ---------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $NS-urgent}
value: 100000
YAML
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: $NS}
spec:
  schedulerName: tessel
  priorityClassName: $NS-urgent
  terminationGracePeriodSeconds: 0
  nodeSelector: {tessel-it: $IT_NAME}
  containers:
  - name: main
    image: busybox
    resources: {limits: {nvidia.com/gpu: "1"}}
YAML
gone() { ! kubectl get pod -n "$NS" "$1" >/dev/null 2>&1; }
it_wait 60 "plain-two (priority 0, holding both DRA devices) evicted for urgent" gone plain-two
it_wait 90 "urgent bound once plain-two's claim is released" it_bound urgent
[[ $(node_of urgent) == dra-a ]] || fail "urgent is on $(node_of urgent)"

# ---- quota counts the devices claims take ---------------------------------------------------------------
# A queue of 1 GPU for the namespace: `urgent` holds it (nvidia.com/gpu served by DRA); a pod whose
# own claim asks one device of the class that serves nvidia.com/gpu waits on quota while a device
# is free, and is placed once the quota is 2.
kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null || fail "Queue CRD not established"
team_queue() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $NS-team}
spec:
  namespaces: [$NS]
  nominalQuota: {nvidia.com/gpu: "$1"}
YAML
}
team_queue 1
queue_usage() { kubectl get queues.tessel.io "$NS-team" -o 'jsonpath={.status.usage.nvidia\.com/gpu}'; }
it_wait 60 "the scheduler counts urgent's GPU in the queue" eval '[[ $(queue_usage) == 1 ]]'
python3 - "$NS" "$CLASS-ext" <<'EOF' | kubectl apply -f - >/dev/null
import json, sys
ns, cls = sys.argv[1:3]
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "quota-gpu", "namespace": ns},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls, "count": 1}}]}}}))
EOF
pod by-claim quota-gpu
scheduled_reason() { kubectl get pod -n "$NS" "$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}'; }
it_wait 60 "by-claim waits on its queue's quota" eval '[[ $(scheduled_reason by-claim) == QuotaExceeded ]]'
[[ -z $(node_of by-claim) ]] || fail "by-claim was bound past its queue's 1 GPU"
team_queue 2
it_wait 60 "by-claim bound once the quota is 2" it_bound by-claim
[[ $(node_of by-claim) == dra-a ]] || fail "by-claim is on $(node_of by-claim)"

it_stop_scheduler main
exit 0
