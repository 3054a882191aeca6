#!/usr/bin/env python3
"""Tessel's gang scheduling beside kube-scheduler's own (GangScheduling, Kubernetes 1.37), on the
same scheduling.k8s.io/v1beta1 PodGroups, on a real local control plane.

    bench/gang/compare_kube_scheduler.py --tessel build/bin/tessel-scheduler \
        --kube-scheduler "$(TESSEL_BUILD_KUBE_SCHEDULER=1 tools/cluster/build-k8s.sh)/kube-scheduler"

It starts a control plane of its own (tools/cluster/cluster.sh, in a temporary directory, with
the GenericWorkload gate and scheduling.k8s.io/v1beta1 on), registers simulated 8-GPU nodes, and
runs every scenario once per scheduler, one scheduler at a time, each scenario in a fresh
namespace on an empty cluster:

  fit          N gangs whose total demand is exactly the cluster: all should be placed.
  contention   two gangs that each need the whole cluster, their pods created interleaved:
               one should be placed whole, the other wait (both waiting is a deadlock).
  oversubscribed  1.5 times the cluster's GPUs asked by gangs: as many whole gangs as fit.

For each it prints, per scheduler: gangs placed whole, gangs left partly bound when the scenario
settles (0 < bound < minCount: a partial placement), gangs seen partly bound at some poll (binds
of one gang land one by one, so this counts gangs caught mid-bind as well), pods bound, time from
the first pod's creation to the last bind, and for contention whether no gang was placed
(deadlock). Polls every 0.1 s through the API. The
cluster and the schedulers it starts are stopped on exit. Output: a Markdown table (stdout).
"""
import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "tools", "cluster", "cluster.sh")
GPUS_PER_NODE = 8


class Api:
    """The admin's REST client for the local control plane."""

    def __init__(self, state):
        env = {}
        with open(os.path.join(state, "cluster.env")) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    k, v = line.strip().split("=", 1)
                    env[k] = v.strip("'\"")
        self.url = env["APISERVER_URL"]
        with open(os.path.join(state, "admin.token")) as f:
            self.token = f.read().strip()
        self.ctx = ssl.create_default_context(cafile=os.path.join(state, "pki", "ca.crt"))

    def call(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code == 404 and method == "DELETE":
                return {}
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from e


def pod_group(ns, name, min_count):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def pod(ns, name, group, gpus, scheduler):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m"},
                                                   "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def run_scenario(api, ns, gangs, scheduler, timeout, idle):
    """gangs: [(name, members, gpus)], pods created interleaved across gangs. Returns the row."""
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for name, members, _ in gangs:
        api.call("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups", pod_group(ns, name, members))
    start = time.monotonic()
    for i in range(max(m for _, m, _ in gangs)):
        for name, members, gpus in gangs:
            if i < members:
                api.call("POST", f"/api/v1/namespaces/{ns}/pods", pod(ns, f"{name}-{i}", name, gpus, scheduler))
    partial_seen = set()
    last_bound, last_change = 0, time.monotonic()
    while True:
        items = api.call("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        bound = {}
        for p in items:
            group = p["spec"]["schedulingGroup"]["podGroupName"]
            bound[group] = bound.get(group, 0) + (1 if p["spec"].get("nodeName") else 0)
        for name, members, _ in gangs:
            if 0 < bound.get(name, 0) < members:
                partial_seen.add(name)
        total = sum(bound.values())
        now = time.monotonic()
        if total != last_bound:
            last_bound, last_change = total, now
        whole = sum(1 for name, members, _ in gangs if bound.get(name, 0) >= members)
        if whole == len(gangs) or now - start > timeout or (total > 0 and now - last_change > idle):
            break
        time.sleep(0.1)
    partial_end = sum(1 for name, members, _ in gangs if 0 < bound.get(name, 0) < members)
    return {"whole": whole, "gangs": len(gangs), "partial": partial_end, "mid_bind": len(partial_seen),
            "seconds": round(last_change - start, 2) if last_bound else None, "bound": last_bound}


def cleanup(api, ns):
    api.call("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0")
    api.call("DELETE", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups")
    deadline = time.monotonic() + 60
    while api.call("GET", f"/api/v1/namespaces/{ns}/pods")["items"] and time.monotonic() < deadline:
        time.sleep(0.2)
    api.call("DELETE", f"/api/v1/namespaces/{ns}")


def start_scheduler(which, args, state, logdir):
    kubeconfig = os.path.join(state, "admin.kubeconfig")
    if which == "tessel":
        cmd = [args.tessel, "--kubeconfig", kubeconfig, "--leader-elect=false", "--bind-address", "127.0.0.1",
               "--port", "0", "--secure-port", "0"]
    else:
        cmd = [args.kube_scheduler, "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
               "--feature-gates=GenericWorkload=true", "-v=1"]
    log = open(os.path.join(logdir, f"{which}.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    time.sleep(3)  # informers synced (both list a nearly empty cluster)
    if proc.poll() is not None:
        sys.exit(f"{which} exited at once; see {log.name}")
    return proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", required=True, help="tessel-scheduler binary")
    ap.add_argument("--kube-scheduler", required=True, help="kube-scheduler 1.37 binary")
    ap.add_argument("--nodes", type=int, default=8, help="simulated nodes of 8 GPUs (default 8)")
    ap.add_argument("--members", type=int, default=4, help="pods per gang in fit/oversubscribed (default 4)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a scenario may run (default 120)")
    ap.add_argument("--idle", type=float, default=20, help="stop after this long without a bind (default 20)")
    args = ap.parse_args()

    gpus = args.nodes * GPUS_PER_NODE
    per_pod = 2
    fit_gangs = gpus // (args.members * per_pod)
    scenarios = {
        "fit": [(f"g{i}", args.members, per_pod) for i in range(fit_gangs)],
        "contention": [("a", args.nodes, GPUS_PER_NODE), ("b", args.nodes, GPUS_PER_NODE)],
        "oversubscribed": [(f"g{i}", args.members, per_pod) for i in range(fit_gangs * 3 // 2)],
    }
    state = tempfile.mkdtemp(prefix="tessel-gang-compare-")
    logdir = os.path.join(state, "bench-logs")
    os.makedirs(logdir)
    env = dict(os.environ, TESSEL_CLUSTER_DIR=os.path.join(state, "cluster"),
               TESSEL_APISERVER_ARGS="--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true")
    procs = []
    ok = False
    try:
        subprocess.run([CLUSTER, "up"], env=env, check=True, stdout=subprocess.DEVNULL)
        nodes = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"gpu-{i:02d}", "labels": {"nvidia.com/gpu.count": str(GPUS_PER_NODE)}},
             "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110",
                                     "nvidia.com/gpu": str(GPUS_PER_NODE)}}} for i in range(args.nodes)]}
        node_file = os.path.join(state, "nodes.json")
        with open(node_file, "w") as f:
            json.dump(nodes, f)
        subprocess.run([CLUSTER, "nodes", node_file], env=env, check=True, stdout=subprocess.DEVNULL)
        api = Api(env["TESSEL_CLUSTER_DIR"])
        rows = []
        for which in ("tessel", "kube-scheduler"):
            proc = start_scheduler(which, args, env["TESSEL_CLUSTER_DIR"], logdir)
            procs.append(proc)
            name = "tessel" if which == "tessel" else "default-scheduler"
            for scenario, gangs in scenarios.items():
                ns = f"{which}-{scenario}"
                r = run_scenario(api, ns, gangs, name, args.timeout, args.idle)
                print(f"{which} {scenario}: {r}", file=sys.stderr)
                rows.append((scenario, which, r))
                cleanup(api, ns)
            proc.terminate()
            proc.wait(timeout=30)
        print(f"{args.nodes} nodes × {GPUS_PER_NODE} GPUs; fit: {fit_gangs} gangs × {args.members} pods × "
              f"{per_pod} GPUs; contention: 2 gangs × {args.nodes} pods × {GPUS_PER_NODE} GPUs; oversubscribed: "
              f"{len(scenarios['oversubscribed'])} gangs × {args.members} pods × {per_pod} GPUs\n")
        print("| scenario | scheduler | gangs placed whole | gangs left partly bound | gangs seen mid-bind | "
              "pods bound | first pod created to last bind (s) | deadlock |")
        print("|---|---|---|---|---|---|---|---|")
        for scenario, which, r in rows:
            deadlock = "yes" if scenario == "contention" and r["whole"] == 0 else "no"
            print(f"| {scenario} | {which} | {r['whole']}/{r['gangs']} | {r['partial']} | {r['mid_bind']} | {r['bound']} | "
                  f"{r['seconds'] if r['seconds'] is not None else '-'} | {deadlock} |")
        ok = True
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run([CLUSTER, "down"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if ok:
            shutil.rmtree(state, ignore_errors=True)
        else:
            print(f"failed; the schedulers' logs are in {logdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
