#!/usr/bin/env bash
# crd_validation_test.sh: Tessel's CRDs on the real apiserver (issue 36, item 6). The apiserver
# refuses each invalid Queue, ResourceFlavor, Cohort and PodGroup with a message naming the field (the
# schema and CEL rules refuse what the scheduler's decoders refuse), accepts every sample of the
# docs and README, and a Queue naming a ResourceFlavor that does not exist gets the condition
# FlavorsReady=False (reason FlavorNotFound) until the flavor appears. The CEL rules use only
# what the oldest supported release has: oldest_release_test.sh runs this test there too.
source "$(dirname "$0")/lib.sh"
it_begin crds

kubectl apply -f "$TESSEL_ROOT/manifests/crds/" >/dev/null || fail "the apiserver refused the CRDs"
kubectl wait --for condition=established --timeout=60s \
  crd/queues.tessel.io crd/resourceflavors.tessel.io crd/cohorts.tessel.io crd/podgroups.scheduling.x-k8s.io >/dev/null \
  || fail "CRDs not established"

# refused DESCRIPTION WANT YAML: the apiserver refuses the object, its message containing WANT.
refused() {
  local what=$1 want=$2 out
  if out=$(kubectl apply --dry-run=server -f - <<<"$3" 2>&1); then fail "$what: accepted ($out)"; fi
  [[ $out == *"$want"* ]] || fail "$what: message \"$out\" lacks \"$want\""
  say "refused, $what: ${out##*: Invalid value: }"
}
queue() {  # queue SPEC: a Queue with that spec
  printf 'apiVersion: tessel.io/v1alpha1\nkind: Queue\nmetadata: {name: %s-q}\nspec: %s\n' "$NS" "$1"
}

refused "negative nominal quota" 'spec.nominalQuota' \
  "$(queue '{nominalQuota: {nvidia.com/gpu: "-1"}}')"
refused "negative integer quota" 'spec.nominalQuota' "$(queue '{nominalQuota: {cpu: -2}}')"
# Lending limits are the admission policy's (the CRD's CEL cost budget on 1.31 cannot hold them):
# installed here, removed at the end; a policy takes effect a moment after it is created.
lending_policy() {
  python3 - "$TESSEL_ROOT/manifests/admission-policy.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["metadata"]["name"] == "tessel-queue-lending-limits"]
assert len(docs) == 2, "policy and binding tessel-queue-lending-limits"
print(yaml.safe_dump_all(docs))
PY
}
lending_policy | kubectl apply -f - >/dev/null || fail "the apiserver refused the lending-limit policy"
trap 'rc=$?; lending_policy | kubectl delete -f - --ignore-not-found >/dev/null 2>&1; set +e; (exit $rc); it_cleanup' EXIT
over_lent=$(queue '{cohort: c, nominalQuota: {nvidia.com/gpu: "2"}, lendingLimit: {nvidia.com/gpu: "3"}}')
it_wait 60 "the lending-limit policy in effect" eval '! kubectl apply --dry-run=server -f - <<<"$over_lent" >/dev/null 2>&1'
refused "lending limit above nominal" 'spec.lendingLimit[nvidia.com/gpu]: a queue lends at most its spec.nominalQuota' "$over_lent"
refused "lending an unlisted resource" 'spec.lendingLimit[cpu]: a queue lends at most' \
  "$(queue '{cohort: c, nominalQuota: {nvidia.com/gpu: "2"}, lendingLimit: {cpu: "1"}}')"
refused "borrowing limit without a cohort" 'spec.borrowingLimit: Forbidden: is only meaningful with spec.cohort' \
  "$(queue '{nominalQuota: {nvidia.com/gpu: "2"}, borrowingLimit: {nvidia.com/gpu: "1"}}')"
refused "flat quotas beside resourceGroups" 'spec.resourceGroups: Forbidden: a Queue has either flat quotas' \
  "$(queue '{nominalQuota: {cpu: "1"}, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: "1"}]}]}]}')"
refused "zero weight" 'spec.weight: Invalid value' "$(queue '{weight: "0"}')"
refused "negative weight" 'spec.weight' "$(queue '{weight: -1}')"
refused "flavor lacking a covered resource" 'spec.resourceGroups[0].flavors: Invalid value' \
  "$(queue '{resourceGroups: [{coveredResources: [cpu, memory], flavors: [{name: f, resources: [{name: cpu, nominalQuota: "1"}]}]}]}')"
refused "flavor lending above its nominal" 'spec.resourceGroups[0].flavors[1].resources[0].lendingLimit: a flavor lends at most' \
  "$(queue '{cohort: c, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: "2", lendingLimit: "2"}]}, {name: g, resources: [{name: cpu, nominalQuota: 1, lendingLimit: 2}]}]}]}')"
refused "flavor borrowing without a cohort" 'spec.resourceGroups: Forbidden: borrowingLimit is only meaningful with spec.cohort' \
  "$(queue '{resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: "1", borrowingLimit: "2"}]}]}]}')"
cohort() {  # cohort SPEC: a Cohort with that spec
  printf 'apiVersion: tessel.io/v1alpha1\nkind: Cohort\nmetadata: {name: %s-c}\nspec: %s\n' "$NS" "$1"
}
refused "a cohort its own parent" 'spec.parent: Invalid value' "$(cohort "{parent: $NS-c}")"
refused "cohort borrowing limit on a root" 'spec.borrowingLimit: Forbidden: is only meaningful with spec.parent' \
  "$(cohort '{nominalQuota: {nvidia.com/gpu: "2"}, borrowingLimit: {nvidia.com/gpu: "1"}}')"
refused "cohort lending limit on a root" 'spec.lendingLimit: Forbidden: is only meaningful with spec.parent' \
  "$(cohort '{lendingLimit: {nvidia.com/gpu: "1"}}')"
refused "cohort negative quota" 'spec.nominalQuota' "$(cohort '{parent: org, nominalQuota: {nvidia.com/gpu: "-1"}}')"
refused "cohort zero weight" 'spec.weight: Invalid value' "$(cohort '{parent: org, weight: "0"}')"
refused "flavor listed twice" 'spec.resourceGroups[0].flavors[1]: Duplicate value' \
  "$(queue '{resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: "1"}]}, {name: f, resources: [{name: cpu, nominalQuota: "1"}]}]}]}')"
refused "selector In without values" 'spec.namespaceSelector.matchExpressions[0].values' \
  "$(queue '{namespaceSelector: {matchExpressions: [{key: team, operator: In}]}}')"
refused "negative minRunSeconds" 'spec.disruption.minRunSeconds' "$(queue '{disruption: {minRunSeconds: -1}}')"
refused "empty provisioning class" 'spec.provisioning.className' "$(queue '{provisioning: {className: ""}}')"
refused "a Queue without spec" 'spec: Required value' \
  "$(printf 'apiVersion: tessel.io/v1alpha1\nkind: Queue\nmetadata: {name: %s-q}\n' "$NS")"
refused "flavor toleration Exists with a value" 'spec.tolerations[0].value' \
  "$(printf 'apiVersion: tessel.io/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: %s-f}\nspec: {tolerations: [{key: k, operator: Exists, value: v}]}\n' "$NS")"
refused "flavor taint without key" 'spec.nodeTaints[0].key' \
  "$(printf 'apiVersion: tessel.io/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: %s-f}\nspec: {nodeTaints: [{key: "", effect: NoSchedule}]}\n' "$NS")"
refused "PodGroup minMember 0 (upstream's minimum is 1)" 'spec.minMember' \
  "$(printf 'apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg, namespace: %s}\nspec: {minMember: 0}\n' "$NS")"
refused "PodGroup negative timeout" 'spec.scheduleTimeoutSeconds' \
  "$(printf 'apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg, namespace: %s}\nspec: {minMember: 2, scheduleTimeoutSeconds: -1}\n' "$NS")"

# Every Queue, ResourceFlavor, Cohort and PodGroup sample of the docs and README is accepted (their
# namespaces dropped: the objects are created nowhere, --dry-run=server).
samples="$IT_WORK/samples"
mkdir -p "$samples"
python3 - "$samples" "$TESSEL_ROOT"/README.md "$TESSEL_ROOT"/docs/*.md <<'PY'
import os, re, sys
out, files = sys.argv[1], sys.argv[2:]
n = 0
for path in files:
    text = open(path).read()
    for block in re.findall(r"```ya?ml\n(.*?)```", text, re.S):
        for doc in re.split(r"^---$", block, flags=re.M):
            if not re.search(r"^kind: (Queue|ResourceFlavor|Cohort|PodGroup)$", doc, re.M) or "apiVersion:" not in doc:
                continue
            if not re.search(r"^apiVersion: (tessel\.io|scheduling\.x-k8s\.io)/", doc, re.M):
                continue  # Kubernetes' own scheduling.k8s.io PodGroup: not a CRD of the install
            doc = re.sub(r"^  namespace: .*\n", "", doc, flags=re.M)
            doc = re.sub(r"^(metadata: \{.*?),\s*namespace: [^,}]+", r"\1", doc, flags=re.M)  # flow style
            n += 1
            with open(os.path.join(out, "%02d-%s.yaml" % (n, os.path.basename(path))), "w") as f:
                f.write(doc)
print(n)
PY
count=$(ls "$samples" | wc -l)
((count >= 8)) || fail "only $count samples found in the docs"
for f in "$samples"/*.yaml; do
  out=$(kubectl apply --dry-run=server -n "$NS" -f "$f" 2>&1) || fail "sample $(basename "$f") refused: $out"
done
say "accepted $count samples of the docs"

# A Queue naming a flavor that does not exist says so in its status, until the flavor appears.
Q="$NS-flavored" F="$NS-missing"
cleanup_objects() { kubectl delete queues.tessel.io "$Q" --ignore-not-found >/dev/null 2>&1; kubectl delete resourceflavors.tessel.io "$F" --ignore-not-found >/dev/null 2>&1; true; }
cleanup_objects
trap 'rc=$?; cleanup_objects; lending_policy | kubectl delete -f - --ignore-not-found >/dev/null 2>&1; set +e; (exit $rc); it_cleanup' EXIT
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: Queue
metadata: {name: $Q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $F
      resources: [{name: nvidia.com/gpu, nominalQuota: "4"}]
YAML
it_start_scheduler main --leader-elect=false --queue-status-interval 1s
it_wait 30 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
flavors='{.status.conditions[?(@.type=="FlavorsReady")].status}|{.status.conditions[?(@.type=="FlavorsReady")].reason}|{.status.conditions[?(@.type=="FlavorsReady")].message}'
is_flavors() { [[ $(kubectl get queues.tessel.io "$Q" -o "jsonpath=$flavors") == "$1" ]]; }
it_wait 30 "$Q FlavorsReady=False FlavorNotFound" is_flavors \
  "False|FlavorNotFound|ResourceFlavor $F does not exist: the queue's quota in it cannot be used"
kubectl apply --validate=strict -f - >/dev/null <<YAML
apiVersion: tessel.io/v1alpha1
kind: ResourceFlavor
metadata: {name: $F}
spec: {nodeLabels: {pool: $F}}
YAML
it_wait 30 "$Q FlavorsReady=True" is_flavors "True|Ready|Every ResourceFlavor it lists exists"
it_stop_scheduler main
exit 0
