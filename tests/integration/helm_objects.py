#!/usr/bin/env python3
"""helm_objects.py: reads rendered objects (`helm template`, `kubectl kustomize`) for the chart's
tests (tests/integration/helm_*_test.sh).

    helm_objects.py diff CHART.yaml KUSTOMIZE.yaml [--unhash NAME]...
    helm_objects.py list FILE                      one "Kind namespace/name" line per object
    helm_objects.py get FILE KIND NAME PATH        the value at PATH (dots; list items by index,
                                                   e.g. spec.template.spec.containers.0.args;
                                                   keys may hold dots: data.config.yaml),
                                                   strings as they are, anything else as JSON;
                                                   exit 1 naming the object or field when absent

diff: both files are multi-document YAML. Objects are matched by kind, namespace and name, and
compared after normalising what legitimately differs between the two tools:
  - the labels only Helm adds (helm.sh/chart, app.kubernetes.io/managed-by, .../instance,
    .../version), and the chart's pod-template annotation checksum/config (kustomize rolls the
    pods through the ConfigMap's hashed name instead);
  - --unhash NAME: kustomize's generated ConfigMap NAME-<hash> is named NAME, and so are the
    references to it in pod templates' volumes;
  - the namespace kustomize writes on cluster-scoped kinds it does not know (FlowSchemas, ...);
  - ConfigMap data whose key ends in .yaml or .json is compared parsed, not as text (the chart
    renders the configuration from values, without the file's comments).
Exit 0 when the objects are the same; else 1, printing the objects only one side has and a
unified diff of each object that differs (canonical YAML, keys sorted).
"""

import argparse
import copy
import difflib
import json
import re
import sys

import yaml

sys.dont_write_bytecode = True

HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
                    "app.kubernetes.io/version")
HELM_ONLY_ANNOTATIONS = ("checksum/config",)
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "FlowSchema",
                  "PriorityLevelConfiguration", "PriorityClass", "Namespace",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                  "APIService", "StorageClass", "IngressClass", "RuntimeClass"}
KUSTOMIZE_HASH = re.compile(r"^(?P<base>.+)-[a-z0-9]{10}$")


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def drop_keys(meta, field, keys):
    values = meta.get(field)
    if not isinstance(values, dict):
        return
    for k in keys:
        values.pop(k, None)
    if not values:
        del meta[field]


def unhash(name, bases):
    m = KUSTOMIZE_HASH.match(name or "")
    return m.group("base") if m and m.group("base") in bases else name


def pod_templates(obj):
    spec = obj.get("spec") or {}
    if isinstance(spec.get("template"), dict):
        yield spec["template"]
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    if isinstance(job.get("template"), dict):
        yield job["template"]


def normalise(obj, bases):
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    drop_keys(meta, "labels", HELM_ONLY_LABELS)
    if obj.get("kind") in CLUSTER_SCOPED:
        meta.pop("namespace", None)
    if obj.get("kind") == "ConfigMap":
        meta["name"] = unhash(meta.get("name"), bases)
        for key, value in (obj.get("data") or {}).items():
            if key.endswith((".yaml", ".yml")):
                obj["data"][key] = {"parsed YAML": yaml.safe_load(value)}
            elif key.endswith(".json"):
                obj["data"][key] = {"parsed JSON": json.loads(value)}
    for tmpl in pod_templates(obj):
        tmeta = tmpl.setdefault("metadata", {})
        drop_keys(tmeta, "labels", HELM_ONLY_LABELS)
        drop_keys(tmeta, "annotations", HELM_ONLY_ANNOTATIONS)
        for vol in (tmpl.get("spec") or {}).get("volumes") or []:
            if isinstance(vol.get("configMap"), dict):
                vol["configMap"]["name"] = unhash(vol["configMap"].get("name"), bases)
    return obj


def key_of(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("kind", "?"), meta.get("namespace") or "", meta.get("name", "?"))


def index(docs, bases, label):
    out = {}
    for d in docs:
        n = normalise(d, bases)
        k = key_of(n)
        if k in out:
            sys.exit(f"helm_objects.py: {label} renders {format_key(k)} twice")
        out[k] = n
    return out


def format_key(k):
    kind, ns, name = k
    return f"{kind} {ns + '/' if ns else ''}{name}"


def dump(obj):
    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, width=100).splitlines(True)


def cmd_list(a):
    for d in load(a.file):
        meta = d.get("metadata") or {}
        ns = meta.get("namespace")
        print(f"{d.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}")
    return 0


def cmd_get(a):
    found = [d for d in load(a.file)
             if d.get("kind") == a.kind and (d.get("metadata") or {}).get("name") == a.name]
    if not found:
        sys.exit(f"helm_objects.py: no {a.kind} {a.name} in {a.file}")
    value, parts, i = found[0], a.path.split("."), 0
    while i < len(parts):
        # A key may hold dots itself (data.config.yaml): the longest key that is there wins.
        j = len(parts)
        while isinstance(value, dict) and j > i and ".".join(parts[i:j]) not in value:
            j -= 1
        if isinstance(value, dict) and j > i:
            value, i = value[".".join(parts[i:j])], j
        elif isinstance(value, list) and parts[i].isdigit() and int(parts[i]) < len(value):
            value, i = value[int(parts[i])], i + 1
        else:
            sys.exit(f"helm_objects.py: {a.kind} {a.name} has no {a.path} (at {parts[i]})")
    print(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    return 0


def cmd_diff(a):
    chart = index(load(a.chart), set(a.unhash), "the chart")
    kust = index(load(a.kustomize), set(a.unhash), "kustomize")
    same = True
    for k in sorted(set(kust) - set(chart)):
        print(f"only in kustomize: {format_key(k)}")
        same = False
    for k in sorted(set(chart) - set(kust)):
        print(f"only in the chart: {format_key(k)}")
        same = False
    for k in sorted(set(chart) & set(kust)):
        if chart[k] == kust[k]:
            continue
        same = False
        print(f"differs: {format_key(k)}")
        sys.stdout.writelines(difflib.unified_diff(
            dump(kust[k]), dump(chart[k]), fromfile=f"kustomize: {format_key(k)}",
            tofile=f"chart: {format_key(k)}"))
    if same:
        print(f"{len(chart)} objects, the same in both")
    return 0 if same else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("diff")
    d.add_argument("chart")
    d.add_argument("kustomize")
    d.add_argument("--unhash", action="append", default=[])
    d.set_defaults(run=cmd_diff)
    l = sub.add_parser("list")
    l.add_argument("file")
    l.set_defaults(run=cmd_list)
    g = sub.add_parser("get")
    for arg in ("file", "kind", "name", "path"):
        g.add_argument(arg)
    g.set_defaults(run=cmd_get)
    a = ap.parse_args()
    return a.run(a)


if __name__ == "__main__":
    sys.exit(main())
