#!/usr/bin/env bash
# volume_binding_test.sh: a WaitForFirstConsumer claim on the real apiserver. A StorageClass
# whose allowedTopologies names zone-b of a two-zone set of simulated nodes, a claim of that
# class and a pod using it: tessel-scheduler picks a zone-b node, writes
# volume.kubernetes.io/selected-node on the claim, and (as kube-scheduler) waits for the claim to
# be bound before it binds the pod. The test plays the provisioner and the PV controller (the
# control plane runs no persistentvolume-binder): it creates a PV in the selected node's zone
# with a claimRef, sets the claim's spec.volumeName and status.phase Bound; then the pod binds
# to the selected node. A pod whose claim does not exist is reported with the claim's name. A
# claim of a no-provisioner class is matched to a static PV in zone-a: the scheduler writes the
# PV's claimRef, and the pod binds in zone-a once the claim is bound.
# Also checks on the real apiserver the writes the scheduler relies on: a merge patch of a
# claim's annotations is accepted, and one carrying another UID is refused.
source "$(dirname "$0")/lib.sh"
it_begin volbind
CLASS=tessel-it-volbind-zonal
LOCAL=tessel-it-volbind-local
PV=tessel-it-volbind-pv
STATIC=tessel-it-volbind-static
cleanup_storage() {
  kubectl delete pv "$PV" "$STATIC" --wait=false >/dev/null 2>&1
  kubectl delete storageclass "$CLASS" "$LOCAL" >/dev/null 2>&1
}
trap 'rc=$?; cleanup_storage; (exit $rc); it_cleanup' EXIT
cleanup_storage || true

Z=topology.kubernetes.io/zone
it_nodes volbind-a1:0:$Z=zone-a volbind-a2:0:$Z=zone-a volbind-b1:0:$Z=zone-b volbind-b2:0:$Z=zone-b

kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $CLASS}
provisioner: example.com/tessel-it
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: $Z, values: [zone-b]}
YAML
for claim in data scratch; do
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $claim, namespace: $NS}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $CLASS
  resources: {requests: {storage: 1Gi}}
YAML
done

# The apiserver's side of the scheduler's claim write: a merge patch of the annotations with
# the claim's UID is accepted; with another UID it is refused (the scheduler's precondition).
uid=$(kubectl get pvc -n "$NS" scratch -o 'jsonpath={.metadata.uid}')
kubectl patch pvc -n "$NS" scratch --type merge \
  -p "{\"metadata\":{\"uid\":\"$uid\",\"annotations\":{\"volume.kubernetes.io/selected-node\":\"volbind-b1\"}}}" >/dev/null \
  || fail "a merge patch of a claim's annotations with its own UID was refused"
if kubectl patch pvc -n "$NS" scratch --type merge \
  -p '{"metadata":{"uid":"00000000-0000-0000-0000-000000000000","annotations":{"x":"y"}}}' >/dev/null 2>&1; then
  fail "a merge patch with another UID was accepted"
fi


it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
it_pod app --claim data
it_pod orphan --claim ghost

selected() { kubectl get pvc -n "$NS" data -o 'jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}'; }
annotated() { [[ -n $(selected) ]]; }
it_wait 60 "the claim annotated with a selected node" annotated
node=$(selected)
zone=$(kubectl get node "$node" -o "jsonpath={.metadata.labels.topology\.kubernetes\.io/zone}")
say "selected node $node in $zone"
[[ $zone == zone-b ]] || fail "selected node $node is in '$zone', the class allows zone-b only"
# The scheduler waits for the claim to bind: the pod is not bound before the PV exists.
sleep 2
it_bound app && fail "pod app was bound before its claim was"

# The provisioner: a PV in the selected node's zone, pre-bound to the claim.
claim_uid=$(kubectl get pvc -n "$NS" data -o 'jsonpath={.metadata.uid}')
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $PV, labels: {$Z: $zone}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: $CLASS
  persistentVolumeReclaimPolicy: Delete
  hostPath: {path: /tmp/$PV}
  claimRef: {namespace: $NS, name: data, uid: $claim_uid}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: $Z, operator: In, values: [$zone]}
YAML
# The PV controller's part: the claim names its volume (allowed once on 1.20), then is Bound.
kubectl patch pvc -n "$NS" data --type merge \
  -p "{\"spec\":{\"volumeName\":\"$PV\"},\"metadata\":{\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\"}}}" >/dev/null
kubectl patch pvc -n "$NS" data --subresource=status --type merge -p '{"status":{"phase":"Bound"}}' >/dev/null
kubectl patch pv "$PV" --subresource=status --type merge -p '{"status":{"phase":"Bound"}}' >/dev/null

it_wait 60 "pod app bound" it_bound app
[[ $(node_of app) == "$node" ]] || fail "pod app went to $(node_of app), its claim selected $node"

# The missing claim is named in the pod's condition; the pod stays unbound.
cond() { kubectl get pod -n "$NS" orphan -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'; }
names_claim() { [[ $(cond) == *'persistentvolumeclaim "ghost" not found'* ]]; }
it_wait 30 "orphan's PodScheduled message names the claim" names_claim
say "orphan: $(cond)"
it_bound orphan && fail "pod orphan was bound without its claim"

# A static PV: a no-provisioner class and a PV in zone-a. The scheduler writes the PV's claimRef
# (a merge patch with the PV's resourceVersion, accepted by the apiserver), then waits; the test
# plays the PV controller, and the pod binds in zone-a.
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $LOCAL}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: $STATIC}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: $LOCAL
  hostPath: {path: /tmp/$STATIC}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: $Z, operator: In, values: [zone-a]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local-data, namespace: $NS}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $LOCAL
  resources: {requests: {storage: 2Gi}}
YAML
it_pod local-app --claim local-data
claimed() { [[ $(kubectl get pv "$STATIC" -o 'jsonpath={.spec.claimRef.namespace}/{.spec.claimRef.name}') == "$NS/local-data" ]]; }
it_wait 60 "the static PV's claimRef names the claim" claimed
kubectl patch pvc -n "$NS" local-data --type merge \
  -p "{\"spec\":{\"volumeName\":\"$STATIC\"},\"metadata\":{\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\"}}}" >/dev/null
kubectl patch pvc -n "$NS" local-data --subresource=status --type merge -p '{"status":{"phase":"Bound"}}' >/dev/null
it_wait 60 "pod local-app bound" it_bound local-app
local_zone=$(kubectl get node "$(node_of local-app)" -o "jsonpath={.metadata.labels.topology\.kubernetes\.io/zone}")
[[ $local_zone == zone-a ]] || fail "pod local-app went to zone '$local_zone', its PV is in zone-a"
it_stop_scheduler main
exit 0
