#!/usr/bin/env python3
"""sim_kubelet.py: a simulated kubelet for every node of the local Tessel test cluster.

There are no real kubelets in the local control plane (tools/cluster/cluster.sh), so this one
process plays all of them (python3 stdlib only):
  - a pod bound to an existing node (spec.nodeName set) that is Pending and not being deleted is
    marked Running through pods/status (merge patch: phase, Ready conditions, running
    containerStatuses, startTime);
  - if that pod has the annotation tessel.io/sim-duration ("5", "5s", "2m", "1h30m", "500ms"), it
    is marked Succeeded that long after its startTime (containers terminated, exit code 0);
  - a bound pod that is being deleted (metadata.deletionTimestamp set), e.g. evicted or
    preempted, is deleted with grace period 0, as a kubelet confirms a deletion;
  - every node's Lease in kube-node-lease is created and renewed (every --lease-interval
    seconds), so a node lifecycle controller would see the nodes as healthy.
Pods and nodes are listed and watched (resume from resourceVersion, bookmarks, relist on 410 Gone,
reconnect with backoff). SIGTERM/SIGINT stop it cleanly. It logs to stderr.

    sim_kubelet.py --kubeconfig /tmp/tessel-cluster-0/admin.kubeconfig
"""

import argparse
import calendar
import heapq
import http.client
import json
import os
import queue
import re
import signal
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_http import Api, log, now_micro, now_rfc3339  # noqa: E402

DURATION_ANNOTATION = "tessel.io/sim-duration"
MERGE_PATCH = "application/merge-patch+json"
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


def parse_duration(text):
    """Seconds for "5" (plain seconds) or a Go duration such as "5s", "2m", "1h30m", "1.5s"."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("bad duration " + repr(text))
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def parse_time(rfc3339):
    try:
        return calendar.timegm(time.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return time.time()


def pod_key(pod):
    md = pod["metadata"]
    return md["namespace"], md["name"], md["uid"]


def pod_path(ns, name, sub=""):
    return "/api/v1/namespaces/%s/pods/%s%s" % (ns, name, sub)


class Informer(threading.Thread):
    """List + watch of one resource; calls on_sync(items) after each (re)list and
    on_event(type, obj) for each watch event."""

    def __init__(self, api, path, on_sync, on_event, stop):
        super().__init__(name="watch " + path, daemon=True)
        self.api, self.path, self.stop = api, path, stop
        self.on_sync, self.on_event = on_sync, on_event
        self.synced = threading.Event()

    def list(self):
        items, cont = [], ""
        while True:
            q = {"limit": "500"}
            if cont:
                q["continue"] = cont
            status, body = self.api.request("GET", self.path + "?" + urllib.parse.urlencode(q))
            if status == 410:  # continue token expired: start over
                items, cont = [], ""
                continue
            if status != 200:
                raise RuntimeError("list %s: HTTP %s %s" % (self.path, status, body))
            items.extend(body.get("items") or [])
            cont = (body.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items, body["metadata"]["resourceVersion"]

    def watch(self, rv):
        """Streams events from rv; returns the last resourceVersion seen, or None on 410."""
        q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv,
                                    "allowWatchBookmarks": "true", "timeoutSeconds": "300"})
        conn = self.api.connect(timeout=330)
        try:
            conn.request("GET", self.path + "?" + q, headers=self.api.headers())
            resp = conn.getresponse()
            if resp.status == 410:
                return None
            if resp.status != 200:
                raise RuntimeError("watch %s: HTTP %s %s" % (self.path, resp.status,
                                                             resp.read()[:300]))
            while not self.stop.is_set():
                line = resp.readline()
                if not line:
                    return rv  # server closed the watch (timeout): resume
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        return None
                    raise RuntimeError("watch %s: %s" % (self.path, obj.get("message")))
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if ev.get("type") != "BOOKMARK":
                    self.on_event(ev["type"], obj)
            return rv
        finally:
            conn.close()

    def run(self):
        rv, backoff = None, 0.5
        while not self.stop.is_set():
            try:
                if rv is None:
                    items, rv = self.list()
                    self.on_sync(items)
                    self.synced.set()
                rv = self.watch(rv)
                if rv is None:
                    log("watch %s: resourceVersion too old (410); relisting" % self.path)
                backoff = 0.5
            except (OSError, http.client.HTTPException, RuntimeError, ValueError) as e:
                if self.stop.is_set():
                    return
                log("watch %s: %s; retrying in %.1fs" % (self.path, e, backoff))
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)


class SimKubelet:
    def __init__(self, api, workers, lease_interval):
        self.api = api
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.nodes = {}          # name -> uid
        self.waiting = {}        # node name -> {uid: pod} bound to a node not (yet) known
        self.running = set()     # pod uids marked Running (or seen Running)
        self.finishing = set()   # pod uids with a completion timer
        self.deleting = set()    # pod uids with a delete queued or in flight
        self.timers = []         # heap of (due, seq, ns, name, uid)
        self.timer_seq = 0
        self.timer_cv = threading.Condition(self.lock)
        self.work = queue.Queue()
        self.lease_interval = lease_interval
        self.workers = [threading.Thread(target=self.worker, name="worker-%d" % i, daemon=True)
                        for i in range(workers)]
        self.node_informer = Informer(api, "/api/v1/nodes", self.nodes_synced, self.node_event,
                                      self.stop)
        self.pod_informer = Informer(api, "/api/v1/pods", self.pods_synced, self.pod_event,
                                     self.stop)

    # ---- nodes -------------------------------------------------------------------------------
    def nodes_synced(self, items):
        with self.lock:
            self.nodes = {n["metadata"]["name"]: n["metadata"]["uid"] for n in items}
            ready = [p for n in self.nodes for p in self.waiting.pop(n, {}).values()]
        for pod in ready:
            self.consider(pod)

    def node_event(self, kind, node):
        name = node["metadata"]["name"]
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(name, None)
                return
            self.nodes[name] = node["metadata"]["uid"]
            ready = list(self.waiting.pop(name, {}).values())
        for pod in ready:
            self.consider(pod)

    # ---- pods ----------------------------------------------------------------------------------
    def pods_synced(self, items):
        uids = {p["metadata"]["uid"] for p in items}
        with self.lock:
            self.running &= uids
            self.finishing &= uids
            for pods in self.waiting.values():
                for uid in [u for u in pods if u not in uids]:
                    del pods[uid]
        for pod in items:
            self.consider(pod)
        log("pods synced: %d pods" % len(items))

    def pod_event(self, kind, pod):
        if kind == "DELETED":
            uid = pod["metadata"]["uid"]
            with self.lock:
                self.running.discard(uid)
                self.finishing.discard(uid)
                node = (pod.get("spec") or {}).get("nodeName")
                self.waiting.get(node, {}).pop(uid, None)
            return
        self.consider(pod)

    def consider(self, pod):
        """Decides what a kubelet would do with this pod now."""
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        ns, name, uid = pod_key(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        with self.lock:
            if pod["metadata"].get("deletionTimestamp"):
                # Grace period 0: the apiserver removes it by itself (or waits for finalizers).
                if pod["metadata"].get("deletionGracePeriodSeconds") == 0:
                    return
                if uid not in self.deleting:
                    self.deleting.add(uid)
                    self.work.put(("delete", ns, name, uid, pod))
                return
            if node not in self.nodes:
                self.waiting.setdefault(node, {})[uid] = pod
                return
            if phase == "Pending" and uid not in self.running:
                self.running.add(uid)
                self.work.put(("run", ns, name, uid, pod))
                return
            if phase == "Running":
                self.running.add(uid)
                self.schedule_completion_locked(pod)

    def schedule_completion_locked(self, pod):
        ns, name, uid = pod_key(pod)
        ann = (pod["metadata"].get("annotations") or {}).get(DURATION_ANNOTATION)
        if ann is None or uid in self.finishing:
            return
        try:
            seconds = parse_duration(ann)
        except ValueError as e:
            log("pod %s/%s: ignoring %s: %s" % (ns, name, DURATION_ANNOTATION, e))
            self.finishing.add(uid)
            return
        started = parse_time((pod.get("status") or {}).get("startTime"))
        self.finishing.add(uid)
        self.timer_seq += 1
        heapq.heappush(self.timers, (started + seconds, self.timer_seq, ns, name, uid))
        self.timer_cv.notify()

    def timer_loop(self):
        with self.lock:
            while not self.stop.is_set():
                if not self.timers:
                    self.timer_cv.wait(1.0)
                    continue
                due = self.timers[0][0]
                now = time.time()
                if due > now:
                    self.timer_cv.wait(min(due - now, 1.0))
                    continue
                _, _, ns, name, uid = heapq.heappop(self.timers)
                self.work.put(("finish", ns, name, uid, None))

    # ---- API writes ----------------------------------------------------------------------------
    def worker(self):
        while not self.stop.is_set():
            try:
                item = self.work.get(timeout=1.0)
            except queue.Empty:
                continue
            action, ns, name, uid, pod = item
            done = False
            for attempt in range(6):
                try:
                    if action == "delete":
                        self.delete_pod(ns, name, uid, pod)
                    else:
                        self.set_status(action, ns, name, uid, pod)
                        pod = None  # a retry reads the pod again
                    done = True
                    break
                except (OSError, http.client.HTTPException, RuntimeError) as e:
                    log("%s %s/%s: %s (attempt %d)" % (action, ns, name, e, attempt + 1))
                    self.stop.wait(min(0.2 * 2 ** attempt, 5.0))
            with self.lock:
                if action == "delete":
                    self.deleting.discard(uid)
                elif action == "run" and not done:
                    self.running.discard(uid)  # let a later event try again

    def delete_pod(self, ns, name, uid, pod):
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": uid}}
        status, resp = self.api.request("DELETE", pod_path(ns, name), body)
        if status in (200, 202):
            phase = ((pod or {}).get("status") or {}).get("phase")
            log("pod %s/%s (%s): deleted (grace period 0)" % (ns, name, phase))
        elif status in (404, 409):
            pass  # gone already, or a new pod with the same name
        else:
            raise RuntimeError("DELETE: HTTP %s %s" % (status, resp))

    def set_status(self, action, ns, name, uid, pod=None):
        """Merge-patches pods/status, built from pod (as last seen) or from a fresh GET, with uid
        and resourceVersion preconditions so that a concurrent status writer (the scheduler) is
        never overwritten: on a conflict it reads the pod again."""
        for _ in range(10):
            if pod is None:
                status, pod = self.api.request("GET", pod_path(ns, name))
                if status == 404:
                    return
                if status != 200:
                    raise RuntimeError("GET: HTTP %s %s" % (status, pod))
            if pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
                return
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            if action == "run" and phase != "Pending":
                return
            if action == "finish" and phase != "Running":
                return
            patch = {"metadata": {"uid": uid, "resourceVersion": pod["metadata"]["resourceVersion"]},
                     "status": running_status(pod) if action == "run" else succeeded_status(pod)}
            status, resp = self.api.request("PATCH", pod_path(ns, name, "/status"), patch,
                                            MERGE_PATCH)
            if status == 200:
                log("pod %s/%s on %s: %s" % (ns, name, pod["spec"].get("nodeName"),
                                             "Running" if action == "run" else "Succeeded"))
                if action == "run":
                    with self.lock:
                        self.schedule_completion_locked(resp)
                return
            if status == 404:
                return
            if status != 409:
                raise RuntimeError("PATCH status: HTTP %s %s" % (status, resp))
            pod = None
        raise RuntimeError("PATCH status: conflicts did not stop")

    # ---- node leases ---------------------------------------------------------------------------
    def lease_loop(self):
        known = {}  # node name -> last Lease object
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        while not self.stop.is_set():
            start = time.time()
            with self.lock:
                nodes = dict(self.nodes)
            for name in [n for n in known if n not in nodes]:
                del known[name]
            for name, node_uid in nodes.items():
                if self.stop.is_set():
                    return
                try:
                    known[name] = self.renew_lease(path, name, node_uid, known.get(name))
                except (OSError, http.client.HTTPException, RuntimeError) as e:
                    known.pop(name, None)
                    log("lease %s: %s" % (name, e))
            self.stop.wait(max(0.0, self.lease_interval - (time.time() - start)))

    def renew_lease(self, path, name, node_uid, lease):
        for _ in range(3):
            if lease is None:
                status, lease = self.api.request("GET", path + "/" + name)
                if status == 404:
                    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                             "metadata": {"name": name, "namespace": "kube-node-lease",
                                          "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                               "name": name, "uid": node_uid}]},
                             "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}
                    lease["spec"]["renewTime"] = now_micro()
                    status, resp = self.api.request("POST", path, lease)
                    if status == 201:
                        return resp
                    lease = None
                    continue
                if status != 200:
                    raise RuntimeError("GET: HTTP %s" % status)
            lease["spec"]["renewTime"] = now_micro()
            lease["spec"]["holderIdentity"] = name
            status, resp = self.api.request("PUT", path + "/" + name, lease)
            if status == 200:
                return resp
            lease = None  # 409 (stale) or 404 (deleted): read again
        raise RuntimeError("could not renew")

    # ---- lifecycle -------------------------------------------------------------------------------
    def run(self):
        for w in self.workers:
            w.start()
        threading.Thread(target=self.timer_loop, name="timers", daemon=True).start()
        self.node_informer.start()
        # Nodes first, so that pods of known nodes run as soon as they are listed.
        while not self.node_informer.synced.wait(0.5):
            if self.stop.is_set():
                return
        self.pod_informer.start()
        if self.lease_interval > 0:
            threading.Thread(target=self.lease_loop, name="leases", daemon=True).start()
        self.stop.wait()


def pod_condition(pod, ctype, status, now, reason=None):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == status:
            return c
    c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        c["reason"] = reason
    return c


def merged_conditions(pod, wanted):
    """The pod's conditions with the (type, status, reason) in wanted upserted; the rest
    (e.g. PodScheduled set by the scheduler) are kept."""
    now = now_rfc3339()
    out = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or []}
    for ctype, status, reason in wanted:
        out[ctype] = pod_condition(pod, ctype, status, now, reason)
    return list(out.values())


def running_status(pod):
    now = now_rfc3339()
    spec = pod.get("spec") or {}
    return {
        "phase": "Running",
        "startTime": now,
        "hostIP": "127.0.0.1",
        "conditions": merged_conditions(pod, [("Initialized", "True", None),
                                              ("ContainersReady", "True", None),
                                              ("Ready", "True", None),
                                              ("PodScheduled", "True", None)]),
        "initContainerStatuses": [
            {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
             "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now,
                                      "finishedAt": now}}}
            for c in spec.get("initContainers") or []] or None,
        "containerStatuses": [
            {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
             "started": True, "restartCount": 0, "state": {"running": {"startedAt": now}}}
            for c in spec.get("containers") or []],
    }


def succeeded_status(pod):
    now = now_rfc3339()
    started = {s["name"]: ((s.get("state") or {}).get("running") or {}).get("startedAt", now)
               for s in (pod.get("status") or {}).get("containerStatuses") or []}
    return {
        "phase": "Succeeded",
        "conditions": merged_conditions(pod, [("ContainersReady", "False", "PodCompleted"),
                                              ("Ready", "False", "PodCompleted")]),
        "containerStatuses": [
            {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False,
             "started": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                      "startedAt": started.get(c["name"], now),
                                      "finishedAt": now}}}
            for c in (pod.get("spec") or {}).get("containers") or []],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), required=False)
    ap.add_argument("--workers", type=int, default=4, help="parallel API writers")
    ap.add_argument("--lease-interval", type=float,
                    default=float(os.environ.get("TESSEL_SIM_LEASE_INTERVAL", "10")),
                    help="seconds between node Lease renewals; 0 turns leases off")
    args = ap.parse_args()
    if not args.kubeconfig:
        ap.error("--kubeconfig (or KUBECONFIG) is required")
    api = Api.from_kubeconfig(args.kubeconfig)
    sim = SimKubelet(api, max(1, args.workers), args.lease_interval)

    def on_signal(signum, _frame):
        log("signal %d: stopping" % signum)
        sim.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log("sim kubelet starting (server %s:%d, lease interval %ss)"
        % (api.host, api.port, args.lease_interval))
    sim.run()
    log("sim kubelet stopped")


if __name__ == "__main__":
    main()
