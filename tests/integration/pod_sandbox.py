#!/usr/bin/env python3
"""pod_sandbox.py: runs a container of an applied Deployment the way a kubelet would, without a
container runtime, using bubblewrap (Debian's bwrap), in the image's own root filesystem.

It reads the Deployment as the API server stored it (kubectl get -o json) and turns its pod spec
into a bwrap command line, so that the install test checks the manifests themselves, not a copy:
  - the root: --root, the image's filesystem (tools/image/rootfs.sh builds it from the runtime
    stage's packages, runtime_stage.py install-files lays in the binary and the configuration);
    the host's own /usr, /lib and /etc are not seen;
  - the command: the container's `command` if it sets one, else the image's ENTRYPOINT (given on
    the command line), followed by the container's args (which replace the image's CMD);
  - runAsUser / runAsGroup (container securityContext first, then the pod's);
  - readOnlyRootFilesystem: the root is remounted read-only; the only writable places are
    the emptyDir volumes the container mounts;
  - volumeMounts: configMap volumes are written out from the ConfigMap the API server holds and
    bound read-only at their mountPath; emptyDir volumes become a tmpfs (sizeLimit honoured);
  - the ServiceAccount token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount,
    and KUBERNETES_SERVICE_HOST/PORT, as the kubelet projects them (in-cluster configuration);
  - /etc/hosts and /etc/resolv.conf from the node, as a kubelet manages them.
The process shares the host's network (the API server is on 127.0.0.1).

--root must be a copy of the test's own (the mount points are made in it, and a root that is
not read-only could be written): install_test.sh hard-links one from the cache.

Arguments that the tests must change because they run next to other tests on one machine are
given with --override-arg NAME=VALUE (e.g. --secure-port=<free port>), and only those.

    pod_sandbox.py --deployment deploy.json --configmaps cms.json --token-dir DIR
        --apiserver 127.0.0.1:6443 --work DIR --root ROOT [--override-arg --secure-port=1234]
        -- ENTRYPOINT...

Prints the bwrap command line as JSON on stdout (the caller runs it), one argument per element.
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def fail(msg):
    print("pod_sandbox.py: " + msg, file=sys.stderr)
    sys.exit(1)


def quantity_bytes(q):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, mult in units.items():
        if q.endswith(suffix):
            return int(q[: -len(suffix)]) * mult
    return int(q)


def resolve_in(root, path):
    """`path` as seen inside `root`, its symlinks followed there (Debian's /var/run -> /run): bwrap
    makes mount points before it enters the root, so it must be given the resolved path."""
    parts, out, hops = [p for p in path.split("/") if p], [], 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            out = out[:-1]
            continue
        candidate = os.path.join(root, *out, part)
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                fail("too many symlinks resolving %s in the image's root" % path)
            target = os.readlink(candidate)
            if target.startswith("/"):
                out = []
            parts = [p for p in target.split("/") if p and p != "."] + parts
        else:
            out.append(part)
    return "/" + "/".join(out)


def node_files():
    """What a kubelet writes into every container from the node: name resolution."""
    args = []
    for f in ("/etc/hosts", "/etc/resolv.conf"):
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deployment", required=True)
    ap.add_argument("--configmaps", required=True, help="kubectl get configmaps -o json")
    ap.add_argument("--token-dir", required=True, help="holds token, ca.crt, namespace")
    ap.add_argument("--apiserver", required=True, help="HOST:PORT")
    ap.add_argument("--work", required=True)
    ap.add_argument("--container", default=None)
    ap.add_argument("--override-arg", action="append", default=[])
    ap.add_argument("--root", required=True, help="the image's root filesystem (a copy of the test's own)")
    ap.add_argument("entrypoint", nargs="+", help="the image's ENTRYPOINT")
    a = ap.parse_args()

    deploy = json.load(open(a.deployment))
    pod = deploy["spec"]["template"]["spec"]
    containers = pod["containers"]
    c = next((x for x in containers if x["name"] == a.container), containers[0]) \
        if a.container else containers[0]
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    gid = csc.get("runAsGroup", psc.get("runAsGroup"))
    if uid is None or uid == 0:
        fail("the container runs as root (runAsUser unset or 0)")
    cms = {cm["metadata"]["name"]: cm for cm in json.load(open(a.configmaps))["items"]}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}

    root = os.path.abspath(a.root)
    if not os.path.isfile(os.path.join(root, "etc", "debian_version")):
        fail("--root %s is not a Debian root filesystem" % root)
    # The root is bound writable while the mount points are made, then remounted read-only
    # (readOnlyRootFilesystem) once everything is mounted.
    args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-user", "--uid", str(uid), "--gid", str(gid if gid is not None else uid),
            "--bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--clearenv"]
    args += node_files()
    for m in c.get("volumeMounts", []):
        v = volumes.get(m["name"])
        if v is None:
            fail("volumeMount %s names no volume" % m["name"])
        target = resolve_in(root, m["mountPath"])
        if "configMap" in v:
            name = v["configMap"]["name"]
            if name not in cms:
                fail("configMap %s of volume %s is not in the cluster" % (name, m["name"]))
            d = os.path.join(a.work, "volumes", m["name"])
            os.makedirs(d, exist_ok=True)
            for key, text in cms[name].get("data", {}).items():
                with open(os.path.join(d, key), "w") as f:
                    f.write(text)
            os.chmod(d, 0o755)
            args += ["--ro-bind", d, target]
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            if size:
                args += ["--size", str(quantity_bytes(size))]
            args += ["--perms", "1777", "--tmpfs", target]
        else:
            fail("volume %s: only configMap and emptyDir are supported here" % m["name"])
    if pod.get("automountServiceAccountToken", True):
        args += ["--ro-bind", a.token_dir, resolve_in(root, SA_DIR)]
    host, port = a.apiserver.rsplit(":", 1)
    args += ["--setenv", "KUBERNETES_SERVICE_HOST", host, "--setenv", "KUBERNETES_SERVICE_PORT", port,
             "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    # The container's env: values as written; from the downward API, what this sandbox is (the
    # pod's IP is loopback here: the test's servers listen on 127.0.0.1).
    downward = {"status.podIP": "127.0.0.1", "metadata.namespace": deploy["metadata"].get("namespace", "default"),
                "metadata.name": deploy["metadata"]["name"] + "-sandbox"}
    for e in c.get("env", []):
        if "value" in e:
            args += ["--setenv", e["name"], e["value"]]
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") in downward:
            args += ["--setenv", e["name"], downward[e["valueFrom"]["fieldRef"]["fieldPath"]]]
        else:
            fail("env %s: only values and the downward API's %s are supported here" % (e["name"], sorted(downward)))
    if csc.get("readOnlyRootFilesystem"):
        args += ["--remount-ro", "/"]

    overrides = {}
    for o in a.override_arg:
        k, _, val = o.partition("=")
        overrides[k] = val
    cargs = []
    for arg in c.get("args", []):
        k = arg.partition("=")[0]
        if k in overrides:
            cargs.append("%s=%s" % (k, overrides.pop(k)))
        else:
            cargs.append(arg)
    if overrides:
        fail("--override-arg for flags the Deployment does not set: %s" % ", ".join(overrides))
    command = c.get("command") or a.entrypoint
    binary = os.path.join(root, command[0].lstrip("/"))
    if not os.access(binary, os.X_OK):
        fail("%s is not an executable in the image's root" % command[0])
    args += command + cargs
    json.dump(args, sys.stdout)


if __name__ == "__main__":
    main()
