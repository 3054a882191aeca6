#!/usr/bin/env python3
"""dashboard_eval.py: evaluates the Grafana dashboard's own PromQL over scrapes of every replica,
as Prometheus would see them, and compares the figures with the true ones.

    dashboard_eval.py --dashboard manifests/monitoring/dashboard.json \
        --scrape a=FILE --scrape b=FILE --truth truth.json [--var 'queue=(q1|q2)']

Each scrape is one replica's /metrics text; its series get the label instance=NAME, as a
Prometheus scrape adds it, and the expressions run over all of them together. The dashboard's
variables take their "All" value (allValue, `.*`) unless --var gives one.

The expressions are read from the dashboard JSON, not written here. Instant expressions over
gauges are evaluated: aggregations (sum, max, min, count, with `by (...)`) of a selector with
label matchers (=, !=, =~, !~), and a binary operator between two of them. Expressions over a
range (rate, increase, histogram_quantile of a rate) need samples over time, which one scrape
does not have; they are listed as not evaluated (they read counters, which each replica counts
for itself, so summing over replicas is already right for them).

truth.json maps a metric name to the true figure of each group of the expression that reads it
({"tessel_queue_pending_pods": {"queue=team-a": 3, ...}, "tessel_gpu_allocatable": {"": 8}}).
Every expression whose metric has a truth must give exactly it: a group missing, extra or with
another value is a failure, naming the panel. Exit 1 on any failure, or when no expression of
the truth was found in the dashboard.
"""

import argparse
import json
import re
import sys

sys.dont_write_bytecode = True

SERIES = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
AGG = re.compile(r'^(sum|max|min|count)\s*(?:by\s*\(([^)]*)\)\s*)?\((.*)\)$', re.S)
SELECTOR = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{(.*)\})?$', re.S)


class Unsupported(Exception):
    pass


def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse_labels(text):
    out, pos = [], 0
    text = text or ""
    while pos < len(text.strip()):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError("cannot read labels at %r" % text[pos:])
        out.append((m.group(1), m.group(2), unescape(m.group(3))))
        pos = m.end()
        if not text[pos:].strip():
            break
    return out


def parse_scrape(text, instance):
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SERIES.match(line)
        if not m:
            raise ValueError("not a sample line: %r" % line)
        labels = {k: v for k, _, v in parse_labels(m.group(2))}
        labels["instance"] = instance
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def split_top(expr, op):
    """expr split at a top-level binary operator `op` (outside brackets and quotes), or None."""
    depth, quoted = 0, False
    for i, ch in enumerate(expr):
        if ch == '"' and (i == 0 or expr[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch in "({[":
            depth += 1
        elif not quoted and ch in ")}]":
            depth -= 1
        elif not quoted and depth == 0 and ch == op:
            return expr[:i].strip(), expr[i + 1:].strip()
    return None


def evaluate(expr, samples):
    """An instant vector: {tuple of (label, value) pairs: value}."""
    expr = expr.strip()
    for op in "/*+-":
        parts = split_top(expr, op)
        if parts:
            left, right = evaluate(parts[0], samples), evaluate(parts[1], samples)
            out = {}
            for k, v in left.items():
                if k in right:
                    r = right[k]
                    out[k] = {"/": lambda a, b: a / b if b else float("nan"), "*": lambda a, b: a * b,
                              "+": lambda a, b: a + b, "-": lambda a, b: a - b}[op](v, r)
            return out
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    if "[" in unquoted:
        raise Unsupported("a range selector needs samples over time")
    m = AGG.match(expr)
    if m:
        fn, by, inner = m.group(1), m.group(2), m.group(3)
        keys = [k.strip() for k in by.split(",")] if by else []
        groups = {}
        for labels, v in evaluate(inner, samples).items():
            d = dict(labels)
            groups.setdefault(tuple((k, d.get(k, "")) for k in keys), []).append(v)
        agg = {"sum": sum, "max": max, "min": min, "count": len}[fn]
        return {k: float(agg(vs)) for k, vs in groups.items()}
    m = SELECTOR.match(expr)
    if not m or "(" in unquoted:
        raise Unsupported("not an aggregation of a selector")
    name, matchers = m.group(1), parse_labels(m.group(2))
    out = {}
    for n, labels, v in samples:
        if n != name:
            continue
        ok = True
        for k, op, want in matchers:
            have = labels.get(k, "")
            if op == "=":
                ok = have == want
            elif op == "!=":
                ok = have != want
            elif op == "=~":
                ok = re.fullmatch(want, have) is not None
            else:
                ok = re.fullmatch(want, have) is None
            if not ok:
                break
        if ok:
            out[tuple(sorted(labels.items()))] = v
    return out


def targets(dashboard):
    for panel in dashboard.get("panels", []):
        for t in panel.get("targets", []):
            if "expr" in t:
                yield panel.get("title", "?"), t["expr"]


def group_name(key):
    return ",".join("%s=%s" % kv for kv in key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--scrape", action="append", required=True, help="INSTANCE=FILE")
    ap.add_argument("--truth", required=True)
    ap.add_argument("--var", action="append", default=[],
                    help="NAME=VALUE: a dashboard variable's value, as Grafana substitutes it (else All)")
    a = ap.parse_args()
    dashboard = json.load(open(a.dashboard))
    defaults = {v["name"]: v.get("allValue", ".*") for v in dashboard.get("templating", {}).get("list", [])}
    for v in a.var:
        name, _, value = v.partition("=")
        if name not in defaults:
            print("FAIL: the dashboard has no variable %s" % name, file=sys.stderr)
            return 1
        defaults[name] = value
    samples = []
    for s in a.scrape:
        instance, _, path = s.partition("=")
        samples += parse_scrape(open(path).read(), instance)
    truth = json.load(open(a.truth))
    failures, checked, skipped = [], set(), []
    for title, expr in targets(dashboard):
        concrete = re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m.group(1), m.group(0)), expr)
        try:
            result = evaluate(concrete, samples)
        except Unsupported as e:
            skipped.append("%s: %s (%s)" % (title, expr, e))
            continue
        names = set(re.findall(r"\b(tessel_\w+|scheduler_\w+)", expr))
        got = {group_name(k): v for k, v in result.items()}
        name = names.pop() if len(names) == 1 else None
        if name not in truth:
            print("not compared (no true figure given for it): panel \"%s\": %s = %s" % (
                title, expr, json.dumps(got, sort_keys=True)))
            continue
        want = truth[name]
        checked.add(name)
        if got != {k: float(v) for k, v in want.items()}:
            failures.append("panel \"%s\": %s\n    gives %s\n    true  %s" % (
                title, expr, json.dumps(got, sort_keys=True), json.dumps(want, sort_keys=True)))
        else:
            print("ok: panel \"%s\": %s = %s" % (title, expr, json.dumps(got, sort_keys=True)))
    for s in skipped:
        print("not evaluated: " + s)
    missing = sorted(set(truth) - checked)
    if missing:
        failures.append("no dashboard expression reads %s" % ", ".join(missing))
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
