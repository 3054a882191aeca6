#!/usr/bin/env python3
"""live_check.py: bulk pod operations, invariant checks and audit-log counts for the live
integration tests (stdlib only; talks to the apiserver through tools/cluster/kube_http.py).

    live_check.py --kubeconfig K create --ns NS --select tessel-it=churn --gpus 1 p-000 p-001 ...
    live_check.py --kubeconfig K delete --ns NS --report-unbound p-000 ...
    live_check.py --kubeconfig K check --ns NS --nodes tessel-it=churn [--all-bound] [--settle 60]
    live_check.py audit-binds --audit FILE --ns NS [--after EPOCH] [--node N]
    live_check.py --kubeconfig K intruder --lease kube-system/tessel-scheduler --took FILE

`check` verifies, for the pods of NS and the nodes with the given label, that on every node the
GPUs of the pods bound there fit its allocatable nvidia.com/gpu, and that no GPU device index
(annotation tessel.io/gpu-devices) is given to two whole-GPU pods of one node; with --all-bound
also that every live pod is bound to a node that exists. With --settle S it polls (checking the
invariants on every poll, so a transient overcommit fails too) until the state holds with every
pod bound, for at most S seconds.
Exit status: 0 when the check holds, 1 with one line per violation on stderr.
"""

import argparse
import calendar
import concurrent.futures
import json
import os
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "cluster"))
from kube_http import Api, now_micro  # noqa: E402

GPU = "nvidia.com/gpu"
DEVICES = "tessel.io/gpu-devices"
SCHEDULER_USER = "system:serviceaccount:kube-system:tessel-scheduler"


def die(msg):
    sys.stderr.write("live_check: " + msg + "\n")
    sys.exit(1)


def pod_body(ns, name, gpus, selectors, scheduler):
    limits = {GPU: str(gpus)} if gpus > 0 else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": selectors,
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                          "limits": limits}}],
        },
    }


def parallel(fn, items, workers=8):
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def cmd_create(api, args):
    selectors = dict(kv.split("=", 1) for kv in args.select)

    def create(name):
        body = pod_body(args.ns, name, args.gpus, selectors, args.scheduler)
        # The name may still be held by a pod being deleted: retry for a while on 409.
        deadline = time.time() + 30
        while True:
            status, resp = api.request("POST", "/api/v1/namespaces/%s/pods" % args.ns, body)
            if status == 201:
                return None
            if status == 409 and time.time() < deadline:
                time.sleep(0.2)
                continue
            return "create %s: HTTP %s %s" % (name, status, (resp or {}).get("message", ""))

    errors = [e for e in parallel(create, args.names) if e]
    if errors:
        die("; ".join(errors))


def cmd_delete(api, args):
    """Deletes at once (grace period 0). With --report-unbound, prints the names of the pods that
    were still unbound when deleted (the DELETE answers with the pod's last state)."""
    def delete(name):
        status, resp = api.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (args.ns, name),
                                   {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        if status == 404:
            return name, None
        if status not in (200, 202):
            die("delete %s: HTTP %s %s" % (name, status, (resp or {}).get("message", "")))
        return name, ((resp or {}).get("spec") or {}).get("nodeName") or ""

    results = parallel(delete, args.names)
    if args.report_unbound:
        print(" ".join(name for name, node in results if node == ""))


def gpus_of(pod):
    total = 0
    for c in pod["spec"].get("containers", []):
        v = ((c.get("resources") or {}).get("limits") or {}).get(GPU)
        if v is not None:
            total += int(v)
    return total


def list_state(api, ns, node_selector):
    status, nodes = api.request("GET", "/api/v1/nodes?labelSelector=" + urllib.parse.quote(node_selector))
    if status != 200:
        raise RuntimeError("list nodes: HTTP %s" % status)
    status, pods = api.request("GET", "/api/v1/namespaces/%s/pods" % ns)
    if status != 200:
        raise RuntimeError("list pods: HTTP %s" % status)
    capacity = {n["metadata"]["name"]: int((n["status"].get("allocatable") or {}).get(GPU, "0"))
                for n in nodes["items"]}
    live = [p for p in pods["items"] if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
    return capacity, live


def violations(capacity, pods, all_bound):
    """(invariant violations, pods not yet bound)."""
    errors, unbound = [], []
    used, owner = {}, {}
    for p in pods:
        name = p["metadata"]["name"]
        node = p["spec"].get("nodeName") or ""
        gpus = gpus_of(p)
        if not node:
            unbound.append(name)
            continue
        if node not in capacity:
            if all_bound:
                errors.append("pod %s is bound to %s, which is not a node of this test (deleted?)" % (name, node))
            continue
        used[node] = used.get(node, 0) + gpus
        if gpus == 0:
            continue
        ann = (p["metadata"].get("annotations") or {}).get(DEVICES)
        if ann is None:
            # The device choice may land with the bind or just after it (separate PATCH).
            continue
        try:
            devices = [int(d) for d in ann.split(",") if d != ""]
        except ValueError:
            errors.append("pod %s: %s=%r is not a list of device indexes" % (name, DEVICES, ann))
            continue
        if len(devices) != gpus or len(set(devices)) != len(devices):
            errors.append("pod %s asks %d GPUs but %s=%r" % (name, gpus, DEVICES, ann))
        for d in devices:
            if not 0 <= d < capacity[node]:
                errors.append("pod %s on %s: device %d outside 0..%d" % (name, node, d, capacity[node] - 1))
            other = owner.setdefault((node, d), name)
            if other != name:
                errors.append("device %d of %s is given to both %s and %s" % (d, node, other, name))
    for node, n in sorted(used.items()):
        if n > capacity[node]:
            errors.append("node %s holds %d GPUs of bound pods but has %d" % (node, n, capacity[node]))
    return errors, unbound


def missing_annotations(capacity, pods):
    return sorted(p["metadata"]["name"] for p in pods
                  if p["spec"].get("nodeName") in capacity and gpus_of(p) > 0
                  and DEVICES not in (p["metadata"].get("annotations") or {}))


def cmd_check(api, args):
    deadline = time.time() + args.settle
    polls = 0
    while True:
        capacity, pods = list_state(api, args.ns, args.nodes)
        polls += 1
        errors, unbound = violations(capacity, pods, args.all_bound or args.settle > 0)
        if errors:
            for e in errors:
                sys.stderr.write("VIOLATION: " + e + "\n")
            sys.exit(1)
        done = not unbound and not missing_annotations(capacity, pods)
        if args.settle <= 0 or done:
            break
        if time.time() >= deadline:
            break
        time.sleep(0.5)
    problems = []
    if args.all_bound or args.settle > 0:
        problems += ["pod %s is not bound" % n for n in sorted(unbound)]
        problems += ["bound GPU pod %s has no %s annotation" % (n, DEVICES)
                     for n in missing_annotations(capacity, pods)]
    for p in problems:
        sys.stderr.write("VIOLATION: " + p + "\n")
    used = sum(gpus_of(p) for p in pods if p["spec"].get("nodeName"))
    print("%d live pods, %d bound, %d GPUs bound on %d nodes (%d GPUs); %d polls"
          % (len(pods), len(pods) - len(unbound), used, len(capacity), sum(capacity.values()), polls))
    sys.exit(1 if problems else 0)


def rfc3339(ts):
    """Audit timestamps (2026-11-23T01:02:03.456789Z) as epoch seconds."""
    base, _, frac = ts.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + (float("0." + frac) if frac else 0.0)


def audit_events(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue  # a line cut by a killed apiserver


def cmd_audit_binds(args):
    """One line per bind request (create pods/binding) that the scheduler sent for pods of NS:
    `<pod> <HTTP code> <target node> <epoch received> <why>`, where why is `ok`, `stale-uid` (a
    409 because the Binding's UID names a pod deleted and re-created under the same name, which
    the apiserver rejects by precondition), `deleting` (a 409 for a pod whose delete is under way: a
    delete, even with grace period 0, first writes deletionTimestamp), `already-assigned` (a 409 for a pod already bound: a
    double bind) or `other`, then the apiserver's message. --after keeps requests received after
    that time; --node keeps binds to that node; --writes lists every write to pods instead."""
    for ev in audit_events(args.audit):
        if ev.get("stage") != "ResponseComplete" or ev.get("user", {}).get("username") != SCHEDULER_USER:
            continue
        ref = ev.get("objectRef") or {}
        if ref.get("resource") != "pods" or ref.get("namespace") != args.ns:
            continue
        received = rfc3339(ev.get("requestReceivedTimestamp", "1970-01-01T00:00:00Z"))
        if args.after is not None and received <= args.after:
            continue
        code = (ev.get("responseStatus") or {}).get("code", 0)
        if args.writes:
            if ev.get("verb") in ("create", "update", "patch", "delete"):
                print("%s %s %s/%s %d %.6f" % (ref.get("name"), ev.get("verb"), ref.get("resource"),
                                              ref.get("subresource", ""), code, received))
            continue
        if ev.get("verb") != "create" or ref.get("subresource") != "binding":
            continue
        target = ((ev.get("requestObject") or {}).get("target") or {}).get("name", "?")
        if args.node and target != args.node:
            continue
        message = bind_message(ev)
        print("%s %d %s %.6f %s %s" % (ref.get("name"), code, target, received, bind_outcome(ev),
                                       message.replace("\n", " ")))


def bind_message(ev):
    """A refused bind's message: the response object's (the audit policy logs binds at
    RequestResponse level; responseStatus keeps only the code and reason)."""
    return ((ev.get("responseObject") or {}).get("message")
            or (ev.get("responseStatus") or {}).get("message") or "")


def bind_outcome(ev):
    """Why the apiserver answered a bind as it did, from the audit event's response status."""
    code = (ev.get("responseStatus") or {}).get("code", 0)
    if 200 <= code < 300:
        return "ok"
    message = bind_message(ev)
    if code == 409 and "UID in precondition" in message:
        return "stale-uid"
    if code == 409 and "is being deleted" in message:
        return "deleting"
    if code == 409 and "already assigned" in message:
        return "already-assigned"
    return "other"


def cmd_audit_lists(args):
    """Prints the epoch times of the scheduler's pod LISTs (a list is how an informer relists)."""
    for ev in audit_events(args.audit):
        ref = ev.get("objectRef") or {}
        if (ev.get("stage") == "ResponseComplete" and ev.get("verb") == "list"
                and ref.get("resource") == "pods"
                and ev.get("user", {}).get("username") == SCHEDULER_USER):
            print("%.6f" % rfc3339(ev["requestReceivedTimestamp"]))


def cmd_intruder(api, args):
    """Takes the Lease from whoever holds it and keeps renewing it as "intruder" until killed.
    Writes the epoch time of the takeover to --took once the first write succeeded."""
    ns, name = args.lease.split("/", 1)
    path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (ns, name)
    took = False
    while True:
        status, lease = api.request("GET", path)
        if status == 200:
            spec = lease.setdefault("spec", {})
            now = now_micro()
            if spec.get("holderIdentity") != "intruder":
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
                spec["acquireTime"] = now
            spec["holderIdentity"] = "intruder"
            spec["leaseDurationSeconds"] = args.lease_seconds
            spec["renewTime"] = now
            status, _ = api.request("PUT", path, lease)
            if status == 200 and not took:
                with open(args.took, "w", encoding="utf-8") as f:
                    f.write("%.6f\n" % time.time())
                took = True
        time.sleep(args.period)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create")
    c.add_argument("--ns", required=True)
    c.add_argument("--gpus", type=int, default=1)
    c.add_argument("--select", action="append", default=[])
    c.add_argument("--scheduler", default="tessel")
    c.add_argument("names", nargs="+")
    d = sub.add_parser("delete")
    d.add_argument("--ns", required=True)
    d.add_argument("--report-unbound", action="store_true")
    d.add_argument("names", nargs="+")
    k = sub.add_parser("check")
    k.add_argument("--ns", required=True)
    k.add_argument("--nodes", required=True, help="label selector of the test's nodes")
    k.add_argument("--all-bound", action="store_true")
    k.add_argument("--settle", type=float, default=0)
    a = sub.add_parser("audit-binds")
    a.add_argument("--audit", required=True)
    a.add_argument("--ns", required=True)
    a.add_argument("--after", type=float)
    a.add_argument("--node")
    a.add_argument("--writes", action="store_true")
    al = sub.add_parser("audit-lists")
    al.add_argument("--audit", required=True)
    i = sub.add_parser("intruder")
    i.add_argument("--lease", required=True)
    i.add_argument("--took", required=True)
    i.add_argument("--lease-seconds", type=int, default=30)
    i.add_argument("--period", type=float, default=1.0)
    args = ap.parse_args()
    if args.cmd == "audit-binds":
        return cmd_audit_binds(args)
    if args.cmd == "audit-lists":
        return cmd_audit_lists(args)
    if not args.kubeconfig:
        die("--kubeconfig is required for " + args.cmd)
    api = Api.from_kubeconfig(args.kubeconfig)
    {"create": cmd_create, "delete": cmd_delete, "check": cmd_check, "intruder": cmd_intruder}[args.cmd](api, args)


if __name__ == "__main__":
    main()
