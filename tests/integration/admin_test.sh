#!/usr/bin/env bash
# admin_test.sh: the admin API through tesselctl against the leader on the real apiserver,
# over TLS with the user's own kubeconfig token, authorized per call by the API server.
#   - tesselctl finds the leader through the Lease (its pod's IP and "admin" port);
#   - queues: team A's pending and admitted pods and GPU usage; -o json and -o yaml;
#   - pending: positions in the scheduler's order (priority, then age), per queue too;
#   - explain, the nearest miss: a quota case (team A at its nominal quota), a preemption case
#     (a pod whose room is held by pods of the same priority: not preemptible) and a gang case
#     (members placeable now, the largest free block);
#   - simulate: the same JSON as tessel-bench replay of the same snapshot;
#   - snapshot -o FILE --anonymize: a List replay reads, with namespaces, pods and nodes renamed;
#   - a user without tessel-admin-reader is refused (PERMISSION_DENIED naming the verb and
#     resource); with a RoleBinding in one namespace it sees that namespace's pending pods and
#     explanations and nothing else; with a ClusterRoleBinding, everything; a
#     client-certificate-only kubeconfig is refused by tesselctl with the reason.
source "$(dirname "$0")/lib.sh"
: "${TESSEL_CTL_BIN:?}" "${TESSEL_BENCH_BIN:?}"
it_begin admin

NS2="$NS-other"
QA="$NS-a"
binding=it-admin-reader
holder_pod=""
cleanup_admin() {
  kubectl delete queues.tessel.io "$QA" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$NS2" --wait=false >/dev/null 2>&1 || true
  kubectl delete clusterrolebinding "$binding" >/dev/null 2>&1 || true
  [[ -n $holder_pod ]] && kubectl delete pod -n kube-system "$holder_pod" --wait=false >/dev/null 2>&1 || true
}
cleanup_admin
it_on_exit cleanup_admin
kubectl create namespace "$NS2" >/dev/null

for crd in queues podgroups; do kubectl apply -f "$TESSEL_ROOT/manifests/crds/$crd.yaml" >/dev/null; done
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io crd/podgroups.scheduling.x-k8s.io >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $QA}
spec: {namespaces: [$NS], nominalQuota: {nvidia.com/gpu: "2"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: trio, namespace: $NS2}
spec: {minMember: 3}
YAML

it_nodes admin-0:4 admin-1:4
{ read -r secure; read -r admin; } < <(free_ports 2)
it_start_scheduler main --leader-elect=true --lock-namespace kube-system \
  --secure-port "$secure" --cert-dir "$IT_WORK/certs" --admin-port "$admin"
it_wait 60 "scheduler ready (leading)" scheduler_ready "$SCHED_PORT_main"
ca="$IT_WORK/certs/tessel-scheduler.crt"

# Team A: two pods within its quota, a third over it. Elsewhere: 5 GPUs held at priority 0, so
# one GPU stays free. (Creation times a second apart: the pending order is by age.)
for i in 0 1; do it_pod a-$i --gpus 1; done
for p in a-0 a-1; do it_wait 60 "$p bound" it_bound "$p"; done
NS=$NS2 it_pod hold-0 --gpus 4
NS=$NS2 it_pod hold-1 --gpus 1
for p in hold-0 hold-1; do it_wait 60 "$p bound" eval "[[ -n \$(kubectl get pod -n $NS2 $p -o 'jsonpath={.spec.nodeName}') ]]"; done
sleep 1
it_pod a-2 --gpus 1                       # quota: team A is at 2 of 2
sleep 1
NS=$NS2 it_pod wait-2 --gpus 2            # no room; its holders have its priority
sleep 1
for i in 0 1 2; do NS=$NS2 it_pod trio-$i --gpus 2 --label scheduling.x-k8s.io/pod-group=trio; done

# The leader's endpoint through the Lease: the holder's pod (none runs here, so the test
# creates one standing for it) with podIP 127.0.0.1 and the port named admin.
holder=$(kubectl get lease -n kube-system tessel-scheduler -o 'jsonpath={.spec.holderIdentity}')
[[ -n $holder ]] || fail "no Lease holder"
holder_pod=${holder%_*}
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $holder_pod, namespace: kube-system}
spec:
  schedulerName: tessel-it-nobody
  containers:
  - {name: scheduler, image: busybox, ports: [{name: admin, containerPort: $admin}]}
YAML
kubectl patch pod -n kube-system "$holder_pod" --subresource=status --type=merge \
  -p '{"status":{"podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null
ctl() { "$TESSEL_CTL_BIN" --grpc --ca "$ca" "$@"; }

# queues, found through the Lease.
queues_row() { ctl queues | awk -v q="$QA" '$1 == q'; }
a_counts() { [[ $(queues_row | awk '{print $3, $4, $6}') == "1 2 2" ]]; }
it_wait 30 "tesselctl queues: $QA 1 pending, 2 admitted, 2 GPUs used" a_counts
say "tesselctl queues:"$'\n'"$(ctl queues)"
ctl -o json queues | python3 -c "
import json, sys
q = {x['name']: x for x in json.load(sys.stdin)['queues']}['$QA']
assert q['pendingPods'] == '1' and q['admittedPods'] == '2', q
assert q['usage']['nvidia.com/gpu'] == '2' and q['nominal']['nvidia.com/gpu'] == '2', q
" || fail "queues -o json"
ctl -o yaml queues | matches "name: $QA" || fail "queues -o yaml lacks $QA"

# pending: every waiting pod once, positions 1..N in priority-then-age order.
pending_json=$(ctl --server "127.0.0.1:$admin" -o json pending)
python3 - "$pending_json" "$NS" "$NS2" <<'PY' || fail "pending: $pending_json"
import json, sys
pods = json.loads(sys.argv[1]).get("pods", [])
ns, ns2 = sys.argv[2], sys.argv[3]
mine = [p for p in pods if p["pod"].split("/")[0] in (ns, ns2)]
names = [p["pod"] for p in mine]
want = {f"{ns}/a-2", f"{ns2}/wait-2", f"{ns2}/trio-0", f"{ns2}/trio-1", f"{ns2}/trio-2"}
assert set(names) == want, names
positions = [p["position"] for p in pods]
assert positions == sorted(positions) and len(set(positions)) == len(positions), positions
assert names.index(f"{ns}/a-2") < names.index(f"{ns2}/wait-2") < names.index(f"{ns2}/trio-0"), names
assert all(p["state"] for p in mine), mine
PY
only_a=$(ctl pending --queue "$QA")
say "tesselctl pending --queue $QA:"$'\n'"$only_a"
[[ $(tail -n +2 <<<"$only_a" | awk '{print $2, $3, $4}') == "1 $NS/a-2 $QA" ]] || fail "pending --queue $QA: $only_a"
[[ $(ctl pending -n "$NS2" | tail -n +2 | wc -l) == 4 ]] || fail "pending -n $NS2: $(ctl pending -n "$NS2")"

# explain: the nearest miss in each case.
explain_field() { ctl -o json explain "$1" | python3 -c "import json,sys; print(json.load(sys.stdin).get('$2',''))"; }
out=$(ctl explain "$NS/a-2"); say "explain quota:"$'\n'"$out"
[[ $(explain_field "$NS/a-2" nearestKind) == quota ]] || fail "a-2: $out"
grep -qF "Nearest miss (quota): queue $QA is at 2 of nominal 2 nvidia.com/gpu, no cohort, so no borrowing: it waits for its own pods to finish" <<<"$out" \
  || fail "a-2 quota miss: $out"
out=$(ctl explain "$NS2/wait-2"); say "explain preemption:"$'\n'"$out"
[[ $(explain_field "$NS2/wait-2" nearestKind) == preemption ]] || fail "wait-2: $out"
grep -qE "Nearest miss \(preemption\): fits on admin-[01] if [0-9]+ GPUs? (is|are) freed \(held by $NS2/hold-[01], priority 0, preemptible: no, lower priority required" <<<"$out" \
  || fail "wait-2 preemption miss: $out"
grep -q "Message: 0/[0-9]* nodes are available: .*Insufficient nvidia.com/gpu" <<<"$out" || fail "wait-2 reasons: $out"
out=$(ctl explain "$NS2/trio-1"); say "explain gang:"$'\n'"$out"
[[ $(explain_field "$NS2/trio-1" nearestKind) == gang ]] || fail "trio-1: $out"
grep -qE "Nearest miss \(gang\): gang .*trio needs 3 members of 2 GPUs; 0 can be placed now; the largest free block is 1 GPU on admin-[01]" <<<"$out" \
  || fail "trio-1 gang miss: $out"

# simulate: the same result as tessel-bench replay of the same snapshot.
snap="$TESSEL_ROOT/bench/examples/gpu-cluster.json"
ctl --server "127.0.0.1:$admin" simulate "$snap" >"$IT_WORK/simulate.json" || fail "simulate failed"
"$TESSEL_BENCH_BIN" replay --snapshot "$snap" >"$IT_WORK/replay.json"
python3 -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a == b, (a, b)
assert a['placements'], a
" "$IT_WORK/simulate.json" "$IT_WORK/replay.json" || fail "simulate differs from tessel-bench replay"

# snapshot: anonymized, and replay reads it.
ctl snapshot -o "$IT_WORK/snap.json" --anonymize 2>/dev/null || fail "snapshot failed"
python3 - "$IT_WORK/snap.json" "$NS" <<'PY' || fail "snapshot content"
import json, sys
snap = json.load(open(sys.argv[1]))
assert snap["kind"] == "List"
kinds = {i["kind"] for i in snap["items"]}
assert {"Node", "Pod", "PriorityClass", "PodGroup", "Queue", "Namespace"} <= kinds, kinds
text = json.dumps(snap)
for name in ('"admin-0"', '"admin-1"', '"a-2"', '"wait-2"', f'"{sys.argv[2]}"'):
    assert name not in text, f"{name} left in the anonymized snapshot"
for i in snap["items"]:
    meta = i["metadata"]
    if i["kind"] == "Pod":
        assert meta["name"].startswith("pod-") and meta["namespace"].startswith("ns-"), meta
        assert i["spec"].get("nodeName", "node-").startswith("node-"), i["spec"]
    if i["kind"] == "Node":
        assert meta["name"].startswith("node-"), meta
queue = [i for i in snap["items"] if i["kind"] == "Queue" and i["metadata"]["name"] == sys.argv[2] + "-a"]
assert queue and all(n.startswith("ns-") for n in queue[0]["spec"]["namespaces"]), queue
PY
"$TESSEL_BENCH_BIN" replay --snapshot "$IT_WORK/snap.json" >/dev/null || fail "replay cannot read the snapshot"

# A user without tessel-admin-reader: refused, naming what it may not do; allowed once bound.
as_scheduler() { "$TESSEL_CTL_BIN" --kubeconfig "$SCHED_KUBECONFIG" --ca "$ca" --server "127.0.0.1:$admin" "$@"; }
if denied=$(as_scheduler queues 2>&1); then fail "an unauthorized user got: $denied"; fi
[[ $denied == *'may not get tessel.io/scheduler/queues'* ]] || fail "denial: $denied"
say "refused: $denied"
if out=$("$TESSEL_CTL_BIN" --kubeconfig "$TESSEL_CLUSTER_DIR/admin-cert.kubeconfig" --ca "$ca" --server "127.0.0.1:$admin" queues 2>&1); then
  fail "a certificate-only user got: $out"
fi
[[ $out == *"no bearer token"* ]] || fail "certificate-only: $out"

# A namespace-scoped grant (issue 37, defect 6): a RoleBinding of tessel-admin-reader in $NS2
# shows $NS2's pending pods and explanations, and nothing of $NS.
kubectl create rolebinding "$binding" -n "$NS2" --clusterrole=tessel-admin-reader \
  --user=system:serviceaccount:kube-system:tessel-scheduler >/dev/null
scoped_pending() {
  local out
  out=$(as_scheduler -o json pending 2>/dev/null) || return 1
  python3 - "$out" "$NS2" <<'PY'
import json, sys
names = sorted(p["pod"] for p in json.loads(sys.argv[1]).get("pods", []))
ns2 = sys.argv[2]
want = sorted(f"{ns2}/{n}" for n in ("wait-2", "trio-0", "trio-1", "trio-2"))
assert names == want, names
PY
}
it_wait 30 "the team's user sees its namespace's pending pods, and only those" scoped_pending
say "namespace-scoped pending:"$'\n'"$(as_scheduler pending)"
as_scheduler explain "$NS2/wait-2" >/dev/null || fail "explain in the granted namespace refused"
if out=$(as_scheduler explain "$NS/a-2" 2>&1); then fail "explain of another namespace's pod allowed: $out"; fi
[[ $out == *"may not get tessel.io/scheduler/explain in namespace $NS"* ]] || fail "explain denial: $out"
if out=$(as_scheduler pending -n "$NS" 2>&1); then fail "pending -n $NS allowed: $out"; fi
[[ $out == *"may not get tessel.io/scheduler/pending in namespace $NS"* ]] || fail "pending -n denial: $out"
if out=$(as_scheduler queues 2>&1); then fail "queues (cluster-scoped) allowed to a namespace grant: $out"; fi
say "a RoleBinding in $NS2: its pods shown, $NS refused ($out)"
kubectl delete rolebinding -n "$NS2" "$binding" >/dev/null

kubectl create clusterrolebinding "$binding" --clusterrole=tessel-admin-reader \
  --user=system:serviceaccount:kube-system:tessel-scheduler >/dev/null
it_wait 30 "the bound user allowed" as_scheduler queues
# A cluster-wide grant shows every namespace.
all_pending() { [[ $(as_scheduler pending | grep -c "$NS/a-2") == 1 ]]; }
it_wait 30 "the cluster-wide user sees $NS's pods too" all_pending
if out=$(as_scheduler simulate "$snap" 2>&1); then fail "simulate allowed without tessel-admin-simulator"; fi
[[ $out == *'may not create tessel.io/scheduler/simulate'* ]] || fail "simulate denial: $out"

it_stop_scheduler main
exit 0
