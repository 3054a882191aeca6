#!/usr/bin/env bash
# metrics_once_test.sh: with the shipped two replicas, the Grafana dashboard shows each figure
# once. Two tessel-schedulers run against the real API server with leader election on; both are
# fed the same pods and Queues (the standby's informers are warm). Both are scraped, as a
# Prometheus with the shipped ServiceMonitor scrapes every pod, and the dashboard's own
# expressions (read from manifests/monitoring/dashboard.json by dashboard_eval.py) are evaluated
# over the two scrapes together. They must give the true figures, computed from what the API
# server holds: per Queue the pending and admitted pods, GPU usage, nominal quota, borrowed and
# lent GPUs; pending pods by whether some node could ever hold them; the cluster's allocatable
# and allocated GPUs. Before 0.2.0 both replicas exported the Queue gauges and the dashboard's
# `sum by (queue)` doubled them.
source "$(dirname "$0")/lib.sh"
it_begin monce

kubectl apply -f "$TESSEL_ROOT/manifests/crds/queues.yaml" >/dev/null
kubectl wait --for condition=established --timeout=60s crd/queues.tessel.io >/dev/null || fail "Queue CRD not established"
QA="$NS-a" QB="$NS-b" COHORT="$NS-cohort"
cleanup_queues() { kubectl delete queues.tessel.io "$QA" "$QB" --ignore-not-found >/dev/null 2>&1 || true; }
cleanup_queues
it_on_exit cleanup_queues
it_queue "$QA" "$COHORT" 2 names
it_queue "$QB" "$COHORT" 4 selects

kubectl delete lease -n kube-system tessel-scheduler >/dev/null 2>&1 || true
it_nodes monce-0:4 monce-1:4
it_start_scheduler a --leader-elect=true --lock-namespace kube-system
leads() { [[ $(metric "$1" tessel_leader) == 1 ]]; }
it_wait 30 "replica a leads" leads "$SCHED_PORT_a"
it_wait 30 "replica a ready" scheduler_ready "$SCHED_PORT_a"

# Team A runs 3 one-GPU pods on a nominal quota of 2 (borrowing 1 that team B lends) and waits
# with a 3-GPU pod (over what its cohort lends: it fits after a change) and a 64-GPU pod (no
# node is that big: it never fits); team B runs one pod.
for i in 0 1 2; do it_pod a-$i --gpus 1; done
it_pod b-0 --gpus 1 --label "tessel.io/queue=$QB"
for p in a-0 a-1 a-2 b-0; do it_wait 60 "$p bound" it_bound "$p"; done
it_pod a-wait --gpus 3
it_pod a-huge --gpus 64
refused() {
  [[ $(kubectl get pod -n "$NS" "$1" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}') == False ]]
}
for p in a-wait a-huge; do it_wait 60 "$p PodScheduled=False" refused "$p"; done

# The standby, started now, lists everything above when its informers sync (ready).
it_start_scheduler b --leader-elect=true --lock-namespace kube-system
it_wait 30 "replica b ready (synced, leader known)" scheduler_ready "$SCHED_PORT_b"
[[ $(metric "$SCHED_PORT_b" tessel_leader) == 0 ]] || fail "replica b leads too"
leads "$SCHED_PORT_a" || fail "replica a lost the lease"

# The true figures, from the API server (read again at every try: pods that other tests left
# being deleted count in the cluster's GPUs until they are gone).
true_figures() {
  kubectl get nodes -o json >"$IT_WORK/nodes.json"
  kubectl get pods -A -o json >"$IT_WORK/pods.json"
  kubectl get queues.tessel.io "$QA" "$QB" -o json >"$IT_WORK/queues.json"
  python3 - "$IT_WORK" "$NS" "$QA" "$QB" >"$IT_WORK/truth.json" <<'PY'
import json, os, re, sys
work, ns, qa, qb = sys.argv[1:]
load = lambda f: json.load(open(os.path.join(work, f)))["items"]

def qty(v):
    m = re.fullmatch(r"(\d+)(m|Ki|Mi|Gi)?", str(v))
    n, unit = int(m.group(1)), m.group(2)
    return {None: n * 1000, "m": n, "Ki": n << 10, "Mi": n << 20, "Gi": n << 30}[unit]

def requests(pod):
    out = {}
    for c in pod["spec"]["containers"]:
        r = c.get("resources", {})
        for name, v in {**r.get("limits", {}), **r.get("requests", {})}.items():
            out[name] = out.get(name, 0) + qty(v)
    return out

nodes = load("nodes.json")
pods = [p for p in load("pods.json") if p["status"].get("phase") not in ("Succeeded", "Failed")]
gpu = "nvidia.com/gpu"
truth = {
    "tessel_gpu_allocatable": {"": sum(qty(n["status"]["allocatable"].get(gpu, 0)) for n in nodes) / 1000},
    "tessel_gpu_allocated": {"": sum(requests(p).get(gpu, 0) for p in pods if p["spec"].get("nodeName")) / 1000},
}
queues = {q["metadata"]["name"]: q for q in load("queues.json")}
mine = [p for p in pods if p["metadata"]["namespace"] == ns]
queue_of = lambda p: p["metadata"].get("labels", {}).get("tessel.io/queue", qa)
per = {name: {"pending": 0, "admitted": 0, "usage": 0} for name in queues}
fit = {}
for p in mine:
    q = per[queue_of(p)]
    if p["spec"].get("nodeName"):
        q["admitted"] += 1
        q["usage"] += requests(p).get(gpu, 0)
    else:
        q["pending"] += 1
        r = requests(p)
        fits = any(all(v <= qty(n["status"]["allocatable"].get(k, 0)) for k, v in r.items()) for n in nodes)
        key = "fit=" + ("after_change" if fits else "never")
        fit[key] = fit.get(key, 0) + 1
nominal = {name: qty(q["spec"]["nominalQuota"][gpu]) for name, q in queues.items()}
borrowed = {name: max(0, per[name]["usage"] - nominal[name]) for name in queues}
lent = {name: min(max(0, nominal[name] - per[name]["usage"]),
                  sum(b for other, b in borrowed.items() if other != name)) for name in queues}
g = lambda d: {"queue=" + name: v for name, v in d.items()}
truth.update({
    "tessel_queue_pending_pods": g({n: per[n]["pending"] for n in queues}),
    "tessel_queue_admitted_pods": g({n: per[n]["admitted"] for n in queues}),
    "tessel_queue_usage": g({n: per[n]["usage"] / 1000 for n in queues}),
    "tessel_queue_nominal_quota": g({n: nominal[n] / 1000 for n in queues}),
    "tessel_queue_borrowed": g({n: borrowed[n] / 1000 for n in queues}),
    "tessel_queue_lent": g({n: lent[n] / 1000 for n in queues}),
    "tessel_pending_pods": fit,
})
json.dump(truth, sys.stdout, indent=1, sort_keys=True)
PY
}

# Both replicas scraped, the dashboard's expressions over both; the Queue variable set to this
# test's two Queues (other tests' Queues may share the cluster), the cohort to All.
dashboard_right() {
  true_figures &&
    curl -fsS "http://127.0.0.1:$SCHED_PORT_a/metrics" >"$IT_WORK/scrape-a.txt" &&
    curl -fsS "http://127.0.0.1:$SCHED_PORT_b/metrics" >"$IT_WORK/scrape-b.txt" &&
    python3 "$(dirname "$0")/dashboard_eval.py" --dashboard "$TESSEL_ROOT/manifests/monitoring/dashboard.json" \
      --var "queue=($QA|$QB)" --scrape "a=$IT_WORK/scrape-a.txt" --scrape "b=$IT_WORK/scrape-b.txt" \
      --truth "$IT_WORK/truth.json" >"$IT_WORK/eval.out" 2>&1
}
deadline=$((SECONDS + 30))
until dashboard_right; do
  ((SECONDS < deadline)) || fail "the dashboard's figures are not the true ones ($(tr -d '\n ' <"$IT_WORK/truth.json")):"$'\n'"$(cat "$IT_WORK/eval.out")"
  sleep 0.5
done
cat "$IT_WORK/eval.out" >&2
# The standby exports no Queue figure at all; the leader does.
grep -q '^tessel_queue_pending_pods{' "$IT_WORK/scrape-b.txt" && fail "the standby exports tessel_queue_pending_pods"
grep -q '^tessel_queue_pending_pods{' "$IT_WORK/scrape-a.txt" || fail "the leader exports no tessel_queue_pending_pods"
exit 0
