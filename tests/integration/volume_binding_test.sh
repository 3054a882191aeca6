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
# PV's claimRef, and the pod binds in zone-a once the claim is bound. Then CSI attach limits
# (NodeVolumeLimits) from CSINode objects: a pod over the limit on every node waits, and binds
# once a CSINode's count is raised.
# Also checks on the real apiserver the writes the scheduler relies on: a merge patch of a
# claim's annotations is accepted, and one carrying another UID is refused.
source "$(dirname "$0")/lib.sh"
it_begin volbind
CLASS=tessel-it-volbind-zonal
LOCAL=tessel-it-volbind-local
PV=tessel-it-volbind-pv
STATIC=tessel-it-volbind-static
CSI_CLASS=tessel-it-volbind-csi
CSI_DRIVER=ebs.csi.tessel-it.example.com
CSI_NODES=(volbind-a1 volbind-a2 volbind-b1 volbind-b2)
cleanup_storage() {
  kubectl delete pv "$PV" "$STATIC" tessel-it-volbind-csi-a tessel-it-volbind-csi-b --wait=false >/dev/null 2>&1
  kubectl delete storageclass "$CLASS" "$LOCAL" "$CSI_CLASS" >/dev/null 2>&1
  kubectl delete csinode "${CSI_NODES[@]}" >/dev/null 2>&1
}
trap 'rc=$?; cleanup_storage; (exit $rc); it_cleanup' EXIT
cleanup_storage || true

Z=topology.kubernetes.io/zone
it_nodes volbind-a1:0:$Z=zone-a volbind-a2:0:$Z=zone-a volbind-b1:0:$Z=zone-b volbind-b2:0:$Z=zone-b

# wffc_class NAME PROVISIONER [ZONE]: a WaitForFirstConsumer class, allowed in ZONE only if given.
wffc_class() {
  {
    printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\n' "$1"
    printf 'provisioner: %s\nvolumeBindingMode: WaitForFirstConsumer\n' "$2"
    [[ -n ${3:-} ]] && printf 'allowedTopologies: [{matchLabelExpressions: [{key: %s, values: [%s]}]}]\n' "$Z" "$3"
    true
  } | kubectl apply -f - >/dev/null
}
# claim NAME CLASS SIZE: a ReadWriteOnce claim in $NS.
claim() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1, namespace: $NS}
spec: {accessModes: [ReadWriteOnce], storageClassName: $2, resources: {requests: {storage: $3}}}
YAML
}
# zonal_pv NAME CLASS SIZE ZONE [CLAIM]: a PV whose node affinity is ZONE, pre-bound to CLAIM.
zonal_pv() {
  local ref=""
  [[ -n ${5:-} ]] && ref="  claimRef: {namespace: $NS, name: $5, uid: $(kubectl get pvc -n "$NS" "$5" -o 'jsonpath={.metadata.uid}')}"
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $1, labels: {$Z: $4}}
spec:
  capacity: {storage: $3}
  accessModes: [ReadWriteOnce]
  storageClassName: $2
  hostPath: {path: /tmp/$1}
$ref
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: $Z, operator: In, values: [$4]}]}]}}
YAML
}
# bind_claim CLAIM PV: the PV controller's part: the claim names its volume (allowed once), is
# marked bind-completed, and both are Bound.
bind_claim() {
  kubectl patch pvc -n "$NS" "$1" --type merge \
    -p "{\"spec\":{\"volumeName\":\"$2\"},\"metadata\":{\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\"}}}" >/dev/null
  kubectl patch pvc -n "$NS" "$1" --subresource=status --type merge -p '{"status":{"phase":"Bound"}}' >/dev/null
  kubectl patch pv "$2" --subresource=status --type merge -p '{"status":{"phase":"Bound"}}' >/dev/null
}
zone_of() { kubectl get node "$1" -o "jsonpath={.metadata.labels.topology\.kubernetes\.io/zone}"; }

wffc_class "$CLASS" example.com/tessel-it zone-b
claim data "$CLASS" 1Gi
claim scratch "$CLASS" 1Gi

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

# What this server says of ReadWriteOncePod (served from Kubernetes 1.22; Tessel decodes it anyway).
rwop=$(kubectl apply --dry-run=server -f - 2>&1 <<YAML || true
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: rwop-probe, namespace: $NS}
spec: {accessModes: [ReadWriteOncePod], storageClassName: $CLASS, resources: {requests: {storage: 1Gi}}}
YAML
)
say "a ReadWriteOncePod claim on this server: $rwop"

it_start_scheduler main --leader-elect=false
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
it_pod app --claim data
it_pod orphan --claim ghost

selected() { kubectl get pvc -n "$NS" data -o 'jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}'; }
annotated() { [[ -n $(selected) ]]; }
it_wait 60 "the claim annotated with a selected node" annotated
node=$(selected)
zone=$(zone_of "$node")
say "selected node $node in $zone"
[[ $zone == zone-b ]] || fail "selected node $node is in '$zone', the class allows zone-b only"
# The scheduler waits for the claim to bind: the pod is not bound before the PV exists.
sleep 2
it_bound app && fail "pod app was bound before its claim was"

# The provisioner: a PV in the selected node's zone, pre-bound to the claim; then the PV
# controller's binding.
zonal_pv "$PV" "$CLASS" 1Gi "$zone" data
bind_claim data "$PV"
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
wffc_class "$LOCAL" kubernetes.io/no-provisioner
zonal_pv "$STATIC" "$LOCAL" 5Gi zone-a
claim local-data "$LOCAL" 2Gi
it_pod local-app --claim local-data
claimed() { [[ $(kubectl get pv "$STATIC" -o 'jsonpath={.spec.claimRef.namespace}/{.spec.claimRef.name}') == "$NS/local-data" ]]; }
it_wait 60 "the static PV's claimRef names the claim" claimed
bind_claim local-data "$STATIC"
it_wait 60 "pod local-app bound" it_bound local-app
local_zone=$(zone_of "$(node_of local-app)")
[[ $local_zone == zone-a ]] || fail "pod local-app went to zone '$local_zone', its PV is in zone-a"
say "static PV $STATIC claimed by $NS/local-data; local-app on $(node_of local-app) in $local_zone"

# Attach limits (NodeVolumeLimits): every node's CSINode lets the driver attach one volume.
# limit-one (claim csi-a) binds somewhere; limit-two (csi-a and csi-b) fits no node: two new
# volumes elsewhere, one more beside csi-a on limit-one's node. Re-creating that node's CSINode
# with a count of 2 requeues limit-two, and it binds there (csi-a attached once for both pods).
csinode() {  # csinode NODE COUNT
  kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: $1}
spec: {drivers: [{name: $CSI_DRIVER, nodeID: $1, allocatable: {count: $2}}]}
YAML
}
csi_volume() {  # csi_volume CLAIM: a bound claim on a CSI PV of the driver
  local pv=tessel-it-volbind-$1
  claim "$1" "$CSI_CLASS" 1Gi
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: $CSI_CLASS
  csi: {driver: $CSI_DRIVER, volumeHandle: vol-$1}
  claimRef: {namespace: $NS, name: $1, uid: $(kubectl get pvc -n "$NS" "$1" -o 'jsonpath={.metadata.uid}')}
YAML
  bind_claim "$1" "$pv"
}
printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\nprovisioner: %s\n' \
  "$CSI_CLASS" "$CSI_DRIVER" | kubectl apply -f - >/dev/null
for n in "${CSI_NODES[@]}"; do csinode "$n" 1; done
csi_volume csi-a
csi_volume csi-b
it_pod limit-one --claim csi-a
it_wait 60 "pod limit-one bound" it_bound limit-one
first=$(node_of limit-one)
it_pod limit-two --claim csi-a --claim csi-b
limit_cond() { kubectl get pod -n "$NS" limit-two -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}'; }
over_limit() { [[ $(limit_cond) == *'4 node(s) exceed max volume count'* ]]; }
it_wait 30 "limit-two reported over the attach limit on every node" over_limit
say "limit-two: $(limit_cond)"
it_bound limit-two && fail "pod limit-two was bound over the attach limit"
# A CSINode's drivers are immutable (the apiserver refuses the update: "field is immutable");
# the kubelet re-creates it when a driver re-registers, and so does the test.
kubectl delete csinode "$first" >/dev/null
csinode "$first" 2
it_wait 60 "pod limit-two bound once $first's limit is 2" it_bound limit-two
[[ $(node_of limit-two) == "$first" ]] || fail "limit-two went to $(node_of limit-two); only $first can attach a second volume"
say "limit-two on $first beside limit-one (volume csi-a attached once)"
it_stop_scheduler main
exit 0
