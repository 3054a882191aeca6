#!/usr/bin/env python3
"""stand_in_provisioner.py: a stand-in for cluster-autoscaler's ProvisioningRequest support, for
tests/integration/provisioning_test.sh (stdlib and kubectl only).

Every half second it lists the ProvisioningRequests of one namespace and answers each new one by
its provisioningClassName:
  provision.test.tessel.io  registers, per pod set, `count` nodes that fit one pod of the set's
                            PodTemplate each (its GPUs, its nodeSelector as labels), through
                            `cluster.sh nodes`, then sets Accepted=True and Provisioned=True;
  fail.test.tessel.io       sets Accepted=True and Failed=True (reason NoCapacity).
Each request it answers is appended to LOG as "NAME CLASS"; each node it registers is labelled
tessel-it=TEST.

    stand_in_provisioner.py --namespace NS --test TEST --cluster cluster.sh --log LOG
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time


def kubectl(*args, stdin=None):
    out = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def condition(type_, reason, message):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": type_, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": now}


def set_conditions(ns, name, conditions):
    patch = json.dumps({"status": {"conditions": conditions}})
    kubectl("patch", "provisioningrequest", name, "-n", ns, "--subresource=status", "--type=merge",
            "-p", patch)


def gpus_of(spec):
    total = 0
    for c in spec.get("containers", []):
        res = c.get("resources", {})
        amount = res.get("limits", {}).get("nvidia.com/gpu") or res.get("requests", {}).get("nvidia.com/gpu")
        total += int(amount or 0)
    return total


def provision(args, request):
    ns, name = request["metadata"]["namespace"], request["metadata"]["name"]
    nodes = []
    for pod_set in request["spec"]["podSets"]:
        template = json.loads(kubectl("get", "podtemplate", pod_set["podTemplateRef"]["name"], "-n", ns,
                                      "-o", "json"))
        spec = template["template"]["spec"]
        labels = dict(spec.get("nodeSelector", {}))
        labels["tessel-it"] = args.test
        gpus = max(gpus_of(spec), 1)
        for i in range(pod_set["count"]):
            node = f"{name}-{len(nodes)}"
            nodes.append({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": node, "labels": labels},
                          "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110",
                                                  "nvidia.com/gpu": str(gpus)}}})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, f)
    try:
        subprocess.run([args.cluster, "nodes", f.name], check=True, capture_output=True)
    finally:
        os.unlink(f.name)
    try:
        set_conditions(ns, name, [condition("Accepted", "Accepted", "accepted by the stand-in"),
                                  condition("Provisioned", "Provisioned", f"{len(nodes)} nodes registered")])
    except RuntimeError as e:
        # The scheduler may place the pods as soon as the nodes register, and delete the request
        # before this patch lands: the request was answered all the same.
        if "(NotFound)" not in str(e):
            raise


def fail(request):
    ns, name = request["metadata"]["namespace"], request["metadata"]["name"]
    set_conditions(ns, name, [condition("Accepted", "Accepted", "accepted by the stand-in"),
                              condition("Failed", "NoCapacity", "the stand-in provisioner has no capacity")])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--namespace", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--cluster", required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    answered = set()
    while True:
        try:
            listed = json.loads(kubectl("get", "provisioningrequests", "-n", args.namespace, "-o", "json"))
        except RuntimeError as e:
            print(e, file=sys.stderr)
            time.sleep(1)
            continue
        for request in listed["items"]:
            name = request["metadata"]["name"]
            if name in answered:
                continue
            cls = request["spec"]["provisioningClassName"]
            try:
                if cls == "provision.test.tessel.io":
                    provision(args, request)
                elif cls == "fail.test.tessel.io":
                    fail(request)
                else:
                    continue
            except (RuntimeError, subprocess.CalledProcessError, KeyError) as e:
                print(f"{name}: {e}", file=sys.stderr)
                continue
            answered.add(name)
            with open(args.log, "a") as log:
                log.write(f"{name} {cls}\n")
            print(f"answered {name} ({cls})", file=sys.stderr, flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
