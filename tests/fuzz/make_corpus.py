#!/usr/bin/env python3
"""Regenerates the seed corpora of tests/fuzz/corpus/ from the project's own tests.

  quantity/      every string literal of tests/unit/quantity_test.cc
  decode/        the snapshots of tests/replay and tests/gpu/replay, whole and object by object
  kubeconfig/    the raw-string kubeconfigs of tests/live/kubeconfig_test.cc
  custom_objects/ the Queue, ResourceFlavor and PodGroup objects of those snapshots and of the
                 YAML samples of docs/ and README.md (converted to JSON)
  cel/           the selector expressions of tests/cel/ (corpus.txt, edge_cases.txt, unsupported.txt)
  watch_stream/  watch streams (ADDED/MODIFIED/DELETED/BOOKMARK/ERROR lines) of those objects,
                 each followed by the 8 bytes the target reads as its chunking seed

Run from anywhere: python3 tests/fuzz/make_corpus.py (it replaces the corpus folders)."""
import glob
import hashlib
import json
import os
import re
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(kind, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(OUT, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def unescape(literal):
    return literal.encode().decode("unicode_escape")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def doc_samples():
    """The Queue, ResourceFlavor and PodGroup objects of the docs' YAML blocks, as JSON (with
    PyYAML when it is installed; without it, none)."""
    try:
        import yaml
    except ImportError:
        return []
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs/*.md"))) + [os.path.join(ROOT, "README.md")]:
        for block in re.findall(r"```ya?ml\n(.*?)```", open(path).read(), re.S):
            try:
                docs = list(yaml.safe_load_all(block))
            except yaml.YAMLError:
                continue
            out += [d for d in docs if isinstance(d, dict) and d.get("kind") in ("Queue", "ResourceFlavor", "PodGroup")]
    return out


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    quantity_test = read("tests/unit/quantity_test.cc")
    for q in sorted(set(re.findall(r'"((?:[^"\\\n]|\\.)*)"', quantity_test))):
        write("quantity", unescape(q))

    snapshots = sorted(glob.glob(os.path.join(ROOT, "tests/replay/*.json")) +
                       glob.glob(os.path.join(ROOT, "tests/gpu/replay/*.json")))
    objects = []
    for path in snapshots:
        if path.endswith(".expected.json"):
            continue
        text = open(path).read()
        write("decode", text)
        try:
            items = json.loads(text).get("items", [])
        except (ValueError, AttributeError):
            continue
        for item in items:
            if isinstance(item, dict):
                objects.append(item)
    seen = set()
    for item in objects:
        text = json.dumps(item, sort_keys=True)
        if text not in seen:
            seen.add(text)
            write("decode", text)

    custom = [item for item in objects if item.get("kind") in ("Queue", "ResourceFlavor", "PodGroup", "Workload")]
    for doc in doc_samples():
        custom.append(doc)
    for item in custom:
        write("custom_objects", json.dumps(item, sort_keys=True))

    kubeconfig_test = read("tests/live/kubeconfig_test.cc")
    configs = re.findall(r'R"\((.*?)\)"', kubeconfig_test, re.S)
    # Adjacent C string literals ("a\n" "b\n") joined, as the compiler joins them.
    for run in re.findall(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', kubeconfig_test):
        configs.append(unescape("".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', run))))
    for config in configs:
        if "clusters" in config or "contexts" in config:
            write("kubeconfig", config)

    for name in ("corpus.txt", "edge_cases.txt", "unsupported.txt"):
        for line in read(os.path.join("tests/cel", name)).splitlines():
            if line.strip() and not line.startswith("#"):
                write("cel", line.replace("{NL}", "\n"))

    by_kind = {}
    for item in objects:
        by_kind.setdefault(item.get("kind", ""), []).append(item)
    for n, (kind, items) in enumerate(sorted(by_kind.items())):
        lines = []
        for i, item in enumerate(items[:20]):
            event = ["ADDED", "MODIFIED", "DELETED"][i % 3]
            lines.append(json.dumps({"type": event, "object": item}))
        lines.append(json.dumps({"type": "BOOKMARK", "object": {
            "kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "12345"}}}))
        lines.append(json.dumps({"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
            "reason": "Expired", "message": "too old resource version: 1 (2)"}}))
        write("watch_stream", ("\n".join(lines) + "\n").encode() + bytes([n + 1] * 8))


if __name__ == "__main__":
    main()
