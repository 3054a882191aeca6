#!/usr/bin/env python3
"""The organisation scenarios of `tessel-bench trace` (docs/bench.md, "An organisation over time").

Writes org-bursty.json, org-fixed-demand.json, org-late-team.json and org-late-team-uneven.json
next to this file. Deterministic: the same files
on every run and every Python 3 (only random.Random(seed).random() is drawn, whose sequence
Python keeps stable). Regenerate with `python3 bench/scenarios/org/generate.py`.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def node(i):
    name = f"gpu-{i}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.count": "8",
                                                  "nvidia.com/gpu.product": "A100-SXM4-80GB"}},
            "status": {"allocatable": {"cpu": "128", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def cohort(name, parent=None, gpus=None, weight=None, borrowing=None):
    spec = {}
    if parent:
        spec["parent"] = parent
    if gpus is not None:
        spec["nominalQuota"] = {"nvidia.com/gpu": str(gpus)}
    if borrowing is not None:
        spec["borrowingLimit"] = {"nvidia.com/gpu": str(borrowing)}
    if weight is not None:
        spec["weight"] = str(weight)
    return {"apiVersion": "tessel.io/v1alpha1", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def queue(name, parent, gpus, weight=None, borrowing=None):
    spec = {"namespaces": [name], "cohort": parent, "nominalQuota": {"nvidia.com/gpu": str(gpus)},
            "preemption": {"reclaimWithinCohort": "Any"}}
    if borrowing is not None:
        spec["borrowingLimit"] = {"nvidia.com/gpu": str(borrowing)}
    if weight is not None:
        spec["weight"] = str(weight)
    return {"apiVersion": "tessel.io/v1alpha1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def job(at, team, name, gpus, duration):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": team},
           "spec": {"schedulerName": "tessel", "containers": [{"name": "main", "image": "trainer", "resources": {
               "requests": {"cpu": str(2 * gpus), "memory": f"{16 * gpus}Gi", "nvidia.com/gpu": str(gpus)},
               "limits": {"nvidia.com/gpu": str(gpus)}}}]}}
    return {"at": at, "pod": pod, "duration": duration}


def write(name, doc):
    doc["events"].sort(key=lambda e: e["at"])  # stable: ties keep the order they were made in
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")


def bursty_tree():
    """1 org, 3 departments, 7 teams for 16 x 8 GPUs: 92 GPUs of the teams' quota, 36 more in the cohorts."""
    cohorts = [cohort("org", gpus=16),
               cohort("research", "org", gpus=8, weight=2),
               cohort("product", "org", gpus=8),
               cohort("platform", "org", gpus=4, borrowing=24)]
    # (team, department, nominal GPUs, weight, borrowing limit)
    teams = [("vision", "research", 24, 2, None), ("language", "research", 16, 1, None),
             ("speech", "research", 8, 1, None), ("search", "product", 16, 1, None),
             ("ads", "product", 12, 1.5, None), ("infra", "platform", 8, 1, 8),
             ("data", "platform", 8, 0.5, None)]
    return cohorts, [queue(t, d, g, w, b) for t, d, g, w, b in teams], [(t, g) for t, _, g, _, _ in teams]


SIZES = [1, 1, 2, 2, 4, 4, 8]  # GPUs per job, drawn uniformly from this list


def org_bursty():
    """Every team comes and goes in bursts for 24 hours."""
    rng = random.Random(40)
    cohorts, queues, teams = bursty_tree()
    horizon = 24 * 3600
    events = []
    for team, nominal in teams:
        t, k = int(rng.random() * 3600), 0
        while t < horizon:
            # A burst: within 10 minutes, jobs asking 2 to 5 times the team's nominal quota, each
            # running 5 to 60 minutes; then 30 minutes to 2.5 hours of quiet.
            want = int(nominal * (2 + 3 * rng.random()))
            while want > 0:
                gpus = SIZES[int(rng.random() * len(SIZES))]
                events.append(job(t + int(rng.random() * 600), team, f"{team}-{k}", gpus,
                                  300 + int(rng.random() * 3300)))
                want -= gpus
                k += 1
            t += 1800 + int(rng.random() * 7200)
    write("org-bursty.json", {"nodes": [node(i) for i in range(16)], "cohorts": cohorts, "queues": queues,
                              "events": events})


def org_fixed_demand():
    """The same organisation with demand that stays put: every team asks 3 times its nominal quota
    within the first 10 minutes, in jobs of 10 hours. Where the evictions stop, fair sharing has
    settled."""
    rng = random.Random(7)
    cohorts, queues, teams = bursty_tree()
    events = []
    for team, nominal in teams:
        want, k = 3 * nominal, 0
        while want > 0:
            gpus = SIZES[int(rng.random() * len(SIZES))]
            events.append(job(int(rng.random() * 600), team, f"{team}-{k}", gpus, 10 * 3600))
            want -= gpus
            k += 1
    write("org-fixed-demand.json", {"nodes": [node(i) for i in range(16)], "cohorts": cohorts, "queues": queues,
                                    "events": events})


def org_late_team(name, steady_gpus):
    """team-old runs alone (beside a small steady team) on 8 x 8 GPUs for three days; then team-new
    arrives and asks for as much. Every quota is a multiple of the steady team's job size, so
    every entitlement can be held exactly when that is 8 GPUs like the other jobs; with 4 it cannot
    (the -uneven variant)."""
    rng = random.Random(41)
    cohorts = [cohort("org", gpus=16), cohort("dept-a", "org", gpus=8), cohort("dept-b", "org", gpus=8)]
    queues = [queue("team-old", "dept-a", 16 - steady_gpus), queue("team-steady", "dept-a", steady_gpus),
              queue("team-new", "dept-b", 16)]
    day = 24 * 3600
    arrive = 3 * day

    def hours(lo, hi):  # a duration between lo and hi hours, to the second
        return int((lo + (hi - lo) * rng.random()) * 3600)

    events = []
    # team-old: twelve 8-GPU jobs at once, of 1 to 12 hours (so that its jobs do not end together),
    # then one of 10 to 14 hours every 90 minutes for five days: always more than the cluster.
    # team-steady: one job of 12 hours every 12 hours.
    for k in range(12):
        events.append(job(0, "team-old", f"old-{k}", 8, hours(1, 12)))
    for k in range(12, 12 + 5 * 16):
        events.append(job((k - 11) * 5400, "team-old", f"old-{k}", 8, hours(10, 14)))
    for k in range(10):
        events.append(job(k * 12 * 3600, "team-steady", f"steady-{k}", steady_gpus, 12 * 3600))
    # team-new, at day 3: eight 8-GPU jobs of 10 to 14 hours, then one every 3 hours for two days.
    for k in range(8):
        events.append(job(arrive, "team-new", f"new-{k}", 8, hours(10, 14)))
    for k in range(8, 8 + 16):
        events.append(job(arrive + (k - 7) * 3 * 3600, "team-new", f"new-{k}", 8, hours(10, 14)))
    write(name, {"nodes": [node(i) for i in range(8)], "cohorts": cohorts, "queues": queues, "events": events})


if __name__ == "__main__":
    org_bursty()
    org_fixed_demand()
    org_late_team("org-late-team.json", steady_gpus=8)
    org_late_team("org-late-team-uneven.json", steady_gpus=4)
