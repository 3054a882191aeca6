#!/usr/bin/env python3
"""register_nodes.py: registers simulated nodes in the local Tessel test cluster (stdlib only).

Called by `cluster.sh nodes FILE`. FILE holds Node objects: a JSON object or List, or YAML with
one or more documents (YAML is converted to JSON with `kubectl create --dry-run=client -o json`,
as the standard library has no YAML parser). For each Node:
  1. create it with its metadata (name, labels, annotations) and spec; if it exists, merge-patch
     those instead;
  2. set spec.taints to exactly the file's taints, or clear them (admission adds
     node.kubernetes.io/not-ready:NoSchedule to every new node and only the node lifecycle
     controller, which does not run here, would remove it);
  3. set status through the /status subresource (a plain write drops status): capacity and
     allocatable (each defaults to the other), the file's conditions or Ready=True plus the
     pressure conditions False, nodeInfo and addresses.
The kubelet's well-known labels (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch)
are added unless the file sets them.

    register_nodes.py --kubeconfig admin.kubeconfig --kubectl kubectl nodes.yaml
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_http import Api, log, now_rfc3339  # noqa: E402


def harness_kube_version():
    """KUBE_VERSION from tools/cluster/k8s-versions: the release the simulated nodes claim."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "k8s-versions")
    with open(path) as f:
        for line in f:
            if line.startswith("KUBE_VERSION="):
                return line.split("=", 1)[1].strip()
    sys.exit(f"register_nodes.py: {path}: no KUBE_VERSION line")


SIM_VERSION = f"v{harness_kube_version()}-tessel-sim"

MERGE_PATCH = "application/merge-patch+json"


def parse_json_stream(text):
    """One JSON value, or several one after another (kubectl prints one per object)."""
    dec, pos, out = json.JSONDecoder(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        value, pos = dec.raw_decode(text, pos)
        out.append(value)


def load_objects(path, kubectl, kubeconfig):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8").lstrip()
    if text.startswith("{") or text.startswith("["):
        docs = parse_json_stream(text)
    else:
        env = dict(os.environ, KUBECONFIG=kubeconfig)
        out = subprocess.run([kubectl, "create", "--dry-run=client", "--validate=false",
                              "-o", "json", "-f", path], env=env, check=False,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            sys.exit("%s: kubectl could not read it: %s" % (path, out.stderr.decode().strip()))
        docs = parse_json_stream(out.stdout.decode("utf-8"))
    items = []
    for doc in docs:
        items.extend(doc if isinstance(doc, list) else [doc])
    flat = []
    while items:
        obj = items.pop(0)
        if isinstance(obj, dict) and obj.get("kind", "").endswith("List") and "items" in obj:
            items = list(obj["items"]) + items
        else:
            flat.append(obj)
    nodes = [o for o in flat if isinstance(o, dict) and o.get("kind") == "Node"]
    if len(nodes) != len(flat):
        log("%s: ignoring %d objects that are not Nodes" % (path, len(flat) - len(nodes)))
    return nodes


def default_conditions(now):
    def cond(ctype, status, reason, message):
        return {"type": ctype, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": now}
    return [cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "simulated"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "simulated"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "simulated"),
            cond("Ready", "True", "KubeletReady", "simulated kubelet (tessel) is posting ready status")]


def node_status(node, now):
    status = dict(node.get("status") or {})
    cap, alloc = status.get("capacity"), status.get("allocatable")
    if not cap and not alloc:
        log("node %s: no capacity or allocatable in the file" % node["metadata"]["name"])
    status["capacity"] = cap or alloc or {}
    status["allocatable"] = alloc or cap or {}
    conds = status.get("conditions")
    if conds:
        for c in conds:
            c.setdefault("lastHeartbeatTime", now)
            c.setdefault("lastTransitionTime", now)
    else:
        status["conditions"] = default_conditions(now)
    status.setdefault("addresses", [{"type": "Hostname", "address": node["metadata"]["name"]}])
    info = {"architecture": "amd64", "operatingSystem": "linux", "osImage": "simulated",
            "kernelVersion": "", "containerRuntimeVersion": "sim://0",
            "kubeletVersion": SIM_VERSION, "kubeProxyVersion": SIM_VERSION,
            "machineID": "", "systemUUID": "", "bootID": ""}
    info.update(status.get("nodeInfo") or {})
    status["nodeInfo"] = info
    return status


def register(api, node):
    md = node.get("metadata") or {}
    name = md.get("name")
    if not name:
        raise RuntimeError("a Node without metadata.name")
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64"}
    labels.update(md.get("labels") or {})
    spec = dict(node.get("spec") or {})
    taints = spec.pop("taints", None) or None
    meta = {"name": name, "labels": labels}
    if md.get("annotations"):
        meta["annotations"] = md["annotations"]
    path = "/api/v1/nodes/" + name

    status, resp = api.request("POST", "/api/v1/nodes",
                               {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
    created = status == 201
    if status == 409:
        status, resp = api.request("PATCH", path, {"metadata": meta, "spec": spec}, MERGE_PATCH)
    if status not in (200, 201):
        raise RuntimeError("node %s: create/patch: HTTP %s %s" % (name, status, msg(resp)))
    status, resp = api.request("PATCH", path, {"spec": {"taints": taints}}, MERGE_PATCH)
    if status != 200:
        raise RuntimeError("node %s: taints: HTTP %s %s" % (name, status, msg(resp)))
    status, resp = api.request("PATCH", path + "/status",
                               {"status": node_status(node, now_rfc3339())}, MERGE_PATCH)
    if status != 200:
        raise RuntimeError("node %s: status: HTTP %s %s" % (name, status, msg(resp)))
    return created


def msg(resp):
    return resp.get("message", resp) if isinstance(resp, dict) else resp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--kubectl", default="kubectl", help="used only to read YAML files")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("file")
    args = ap.parse_args()
    api = Api.from_kubeconfig(args.kubeconfig)
    nodes = load_objects(args.file, args.kubectl, args.kubeconfig)
    if not nodes:
        sys.exit("%s: no Node objects" % args.file)
    created = updated = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(register, api, n) for n in nodes]):
            try:
                if fut.result():
                    created += 1
                else:
                    updated += 1
            except Exception as e:  # report every failing node, then fail
                failed += 1
                log(str(e))
    print("nodes: %d created, %d updated, %d failed" % (created, updated, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
