#!/usr/bin/env python3
"""Tessel beside kube-scheduler on the same DRA objects and pods, on a real API server (issue 39).

Two equal sets of DRA nodes are published on one local cluster (tools/cluster/cluster.sh): each
node has no device plugin and a ResourceSlice of 8 GPUs of one test driver, selected by one
DeviceClass with a CEL selector. kube-scheduler 1.37 (its default profile, DynamicResources on)
schedules the pods of namespace `ks` to one set, Tessel the pods of namespace `ts` to the other:
the same pods, in the same order, each with a claim made from a ResourceClaimTemplate of 1, 2, 4
or 8 GPUs by the controller-manager, and 1 CPU.

Phases (the same for both, drawn from --seed):
  mixed       pods of 1/2/4/8 GPUs (50/25/15/10 %) up to --load of the GPUs;
  fragmented  half of the 1- and 2-GPU pods end (the same ones on both sides), then 8-GPU pods
              arrive, as many as the set has nodes: a scheduler that spread the small pods finds
              no whole node for them.
After each phase, once nothing has changed for --settle seconds, the report counts per scheduler
the pods placed, the whole free nodes (no device allocated) and the free GPUs; and an independent
checker validates every allocation from the API objects alone: each allocated device exists in a
ResourceSlice of the node its pods run on, no device is allocated twice, each request has its
count, and the class's CEL selector is true for each device by the reference evaluator (cel-go
with Kubernetes' DRA environment, tests/cel/reference).

  bench/dra/compare.py [--nodes 8] [--load 0.8] [--seed 1] [--settle 8]

It builds (and caches) kube-scheduler and the CEL reference with the Go toolchain, starts its own
cluster in a temporary directory and stops it at the end. Prints a Markdown table (docs/gpu.md
quotes one). A benchmark, not a test: it asserts only the checker's findings (exit 1 if any).
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = "gpu.bench.example.com"
CLASS = "bench-gpu"
SELECTOR = f'device.driver == "{DRIVER}"'
SIDES = {"ks": "kube-scheduler", "ts": "tessel"}
GPUS_PER_NODE = 8


def log(msg):
    print(f"[dra-compare {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, env=None, stdin=None, check=True):
    out = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return out.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, state):
        self.state = state
        self.env = dict(os.environ, TESSEL_CLUSTER_DIR=state)
        exports = run([f"{ROOT}/tools/cluster/cluster.sh", "up"], env=self.env)
        for line in exports.splitlines():
            if line.startswith("export KUBECONFIG="):
                self.kubeconfig = line.split("=", 1)[1]
            if line.startswith("export PATH="):
                self.bin_dir = line.split("=", 1)[1].strip('"').split(":")[0]
        self.env["KUBECONFIG"] = self.kubeconfig
        self.kubectl = os.path.join(self.bin_dir, "kubectl")

    def k(self, *args, stdin=None, check=True):
        return run([self.kubectl, *args], env=self.env, stdin=stdin, check=check)

    def apply(self, objects):
        self.k("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))

    def get(self, kind, namespace=None):
        args = ["get", kind, "-o", "json"] + (["-n", namespace] if namespace else ["-A"])
        return json.loads(self.k(*args))["items"]

    def down(self):
        run([f"{ROOT}/tools/cluster/cluster.sh", "down"], env=self.env, check=False)


def nodes_and_slices(cluster, nodes):
    node_file = os.path.join(cluster.state, "dra-nodes.yaml")
    items, slices = [], []
    for side in SIDES:
        for i in range(nodes):
            name = f"{side}-{i}"
            items.append({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": name, "labels": {"dra-bench": side}},
                          "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"}}})
            slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                           "metadata": {"name": f"{name}-gpus"},
                           "spec": {"driver": DRIVER, "nodeName": name,
                                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                                    "devices": [{"name": f"gpu-{g}", "attributes": {"index": {"int": g}}}
                                                for g in range(GPUS_PER_NODE)]}})
    with open(node_file, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    run([f"{ROOT}/tools/cluster/cluster.sh", "nodes", node_file], env=cluster.env)
    cluster.apply([{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
                    "spec": {"selectors": [{"cel": {"expression": SELECTOR}}]}}] + slices)


def namespaces_and_templates(cluster):
    objects = []
    for side in SIDES:
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": side}})
        for n in (1, 2, 4, 8):
            objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                            "metadata": {"name": f"gpu-{n}", "namespace": side},
                            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                                "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": n}}]}}}})
    cluster.apply([o for o in objects if o["kind"] == "Namespace"])
    cluster.apply([o for o in objects if o["kind"] != "Namespace"])


def pod(side, name, gpus):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": side},
            "spec": {"schedulerName": "default-scheduler" if side == "ks" else "tessel",
                     "terminationGracePeriodSeconds": 0, "nodeSelector": {"dra-bench": side},
                     "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": f"gpu-{gpus}"}],
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpus"}]}}]}}


def bound(cluster, side):
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in cluster.get("pods", side)}


def settle(cluster, seconds):
    last, since = None, time.time()
    while True:
        now = {s: sorted(n for n, node in bound(cluster, s).items() if node) for s in SIDES}
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= seconds:
            return
        time.sleep(1)


def measure(cluster, nodes):
    """Per side: pods placed, whole free nodes, free GPUs (from the claims' allocations)."""
    held = {s: {} for s in SIDES}
    for claim in cluster.get("resourceclaims"):
        side = claim["metadata"]["namespace"]
        if side not in SIDES:
            continue
        for r in (claim.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", []):
            held[side].setdefault(r["pool"], set()).add(r["device"])
    out = {}
    for side in SIDES:
        pods = bound(cluster, side)
        used = {f"{side}-{i}": len(held[side].get(f"{side}-{i}", ())) for i in range(nodes)}
        out[side] = {"placed": sum(1 for n in pods.values() if n), "pods": len(pods),
                     "whole_nodes": sum(1 for u in used.values() if u == 0),
                     "free_gpus": sum(GPUS_PER_NODE - u for u in used.values())}
    return out


def check(cluster, cel_ref):
    """Independent validation of every allocation; returns the problems found."""
    problems, devices = [], {}
    for s in cluster.get("resourceslices"):
        spec = s["spec"]
        for d in spec.get("devices", []):
            devices[(spec["driver"], spec["pool"]["name"], d["name"])] = (spec.get("nodeName"), d)
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in cluster.get("pods")}
    taken, cases = {}, []
    for claim in cluster.get("resourceclaims"):
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        if ns not in SIDES:
            continue
        alloc = (claim.get("status") or {}).get("allocation")
        if not alloc:
            continue
        want = {r["name"]: r["exactly"]["count"] for r in claim["spec"]["devices"]["requests"]}
        got = {}
        nodes = {pods[(ns, ref["name"])]["spec"].get("nodeName") for ref in claim["status"].get("reservedFor", [])
                 if (ns, ref["name"]) in pods}
        for r in alloc["devices"]["results"]:
            key = (r["driver"], r["pool"], r["device"])
            got[r["request"]] = got.get(r["request"], 0) + 1
            if key not in devices:
                problems.append(f"{ns}/{name}: device {key} is in no ResourceSlice")
                continue
            node, device = devices[key]
            if nodes and nodes != {node}:
                problems.append(f"{ns}/{name}: device {key} is on {node}, its pods on {sorted(nodes)}")
            if key in taken:
                problems.append(f"{ns}/{name}: device {key} is allocated to {taken[key]} too")
            taken[key] = f"{ns}/{name}"
            cases.append((f"{ns}/{name} {key}", {"expr": SELECTOR, "device": {
                "driver": r["driver"], "attributes": {f"{DRIVER}/{k}": v for k, v in device.get("attributes", {}).items()},
                "capacity": {}, "allowMultipleAllocations": False}}))
        if got != want:
            problems.append(f"{ns}/{name}: allocated {got}, asked {want}")
    if cases:
        answers = run([cel_ref], stdin="".join(json.dumps(c) + "\n" for _, c in cases)).splitlines()
        for (what, _), answer in zip(cases, answers):
            if not answer.startswith("true"):
                problems.append(f"{what}: the class's selector is {answer} by cel-go")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=8, help="nodes per scheduler (8 GPUs each)")
    ap.add_argument("--load", type=float, default=0.8, help="share of the GPUs the mixed phase asks for")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settle", type=float, default=8, help="seconds without a bind that end a phase")
    ap.add_argument("--keep", action="store_true", help="leave the cluster up (its directory is printed)")
    args = ap.parse_args()

    k8s_bin = run([f"{ROOT}/tools/cluster/build-k8s.sh"], env=dict(os.environ, TESSEL_BUILD_KUBE_SCHEDULER="1")).strip()
    cel_ref = run([f"{ROOT}/tests/cel/reference/build.sh"]).strip()
    scheduler_bin = os.environ.get("TESSEL_SCHEDULER_BIN", os.path.join(ROOT, "build", "bin", "tessel-scheduler"))
    state = tempfile.mkdtemp(prefix="tessel-dra-compare-")
    log(f"cluster in {state}")
    cluster = Cluster(state)
    procs = []
    try:
        nodes_and_slices(cluster, args.nodes)
        namespaces_and_templates(cluster)
        logs = {side: open(os.path.join(state, f"{SIDES[side]}.log"), "w") for side in SIDES}
        procs.append(subprocess.Popen([os.path.join(k8s_bin, "kube-scheduler"), "--kubeconfig", cluster.kubeconfig,
                                       "--leader-elect=false", "--secure-port=0", "-v=1"],
                                      stdout=logs["ks"], stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen([scheduler_bin, "--kubeconfig", cluster.kubeconfig, "--leader-elect=false",
                                       "--bind-address", "127.0.0.1", "--port", str(free_port()), "--secure-port", "0"],
                                      stdout=logs["ts"], stderr=subprocess.STDOUT))

        rng = random.Random(args.seed)
        capacity = args.nodes * GPUS_PER_NODE
        sizes, total = [], 0
        while True:
            n = rng.choices([1, 2, 4, 8], weights=[50, 25, 15, 10])[0]
            if total + n > args.load * capacity:
                break
            sizes.append(n)
            total += n
        rows = []
        for side in SIDES:
            cluster.apply([pod(side, f"mixed-{i}-g{n}", n) for i, n in enumerate(sizes)])
        settle(cluster, args.settle)
        rows.append(("mixed", measure(cluster, args.nodes), check(cluster, cel_ref)))

        small = [f"mixed-{i}-g{n}" for i, n in enumerate(sizes) if n <= 2]
        ending = sorted(rng.sample(small, len(small) // 2))
        for side in SIDES:
            cluster.k("delete", "pod", "-n", side, "--wait=true", *ending)
        time.sleep(args.settle)  # the controller-manager releases their claims
        for side in SIDES:
            cluster.apply([pod(side, f"big-{i}-g8", 8) for i in range(args.nodes)])
        settle(cluster, args.settle)
        rows.append(("fragmented", measure(cluster, args.nodes), check(cluster, cel_ref)))

        print(f"nodes per scheduler: {args.nodes} x {GPUS_PER_NODE} GPUs; mixed load {args.load}; seed {args.seed}\n")
        print("| phase | scheduler | pods placed | whole free nodes | free GPUs | allocation problems |")
        print("|---|---|---|---|---|---|")
        failed = False
        for phase, m, problems in rows:
            for side in SIDES:
                mine = [p for p in problems if p.startswith(side + "/")]
                failed |= bool(mine)
                print(f"| {phase} | {SIDES[side]} | {m[side]['placed']} of {m[side]['pods']} | "
                      f"{m[side]['whole_nodes']} | {m[side]['free_gpus']} | {len(mine)} |")
            for p in problems:
                log(f"{phase}: {p}")
        return 1 if failed else 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if args.keep:
            log(f"cluster left up in {state}")
        else:
            cluster.down()
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
