#!/usr/bin/env python3
"""Differential test of Tessel's CEL selector evaluator against the reference.

The reference is Kubernetes' k8s.io/dynamic-resource-allocation/cel v0.37.2 (cel-go with the DRA
environment), built by reference/build.sh. Both evaluators get the same JSON lines: the corpus of
public selectors (corpus.txt) and seeded random expressions over random devices (ints near the
int64 limits, strings, versions, quantities with every suffix, missing domains and names, mixed
types). Every outcome (true / false / error / compile_error) must be the same.

  tests/cel/differential.py --tessel build/bin/tessel_cel_eval [--seed 39] [--count 4000]
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

DOMAINS = ["gpu.example.com", "gpu.nvidia.com", "dra.example.com", "other.example.com"]
NAMES = ["model", "type", "index", "driverVersion", "productName", "name", "services", "a", "b",
         "memory", "cores", "count", "missing"]  # "missing" is never published
INTS = [0, 1, -1, 2, 7, 42, 100, -100, 2**31, 2**62, 2**63 - 1, -2**63, -2**63 + 1, 2**63 - 2,
        4611686018427387904, 3037000499, 3037000500]
STRINGS = ["", "a", "A100", "nvidia-a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", "gpu", "mig",
           " padded ", "Ampere", "straße", "日本語", "a.b.c", "1.2.3", "42", "-7", "true", "x/y",
           "10Gi", "1.5", "sym", "example-sym"]
VERSIONS = ["1.0.0", "0.0.1", "1.2.3", "1.2.3-rc.1", "1.2.3-rc.10", "1.2.3-alpha", "1.2.3+build.5",
            "550.54.15", "8.0.0", "10.20.30", "1.0.0-0.3.7", "1.0.0-x.7.z.92", "2.0.0-beta.2"]
BAD_VERSIONS = ["1.2", "v1.2.3", "01.2.3", "1.2.3-", "1.2.3-01"]
VERSION_TEXTS = VERSIONS + BAD_VERSIONS + ["v1", "v1.2", "1", "01.02.03", "v01.2.3-rc.1", "1.2-rc"]
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e3", "E-2", "e+5", "e-12", "e18", "e40", "e-30", "K", "Ki2", "e"]


def rand_quantity(r, valid=True):
    sign = r.choice(["", "", "", "-", "+"])
    digits = r.choice(["0", "1", "2", "5", "10", "40", "80", "100", "1000", "1536", "999999999999999999",
                       "9223372036854775807", "12345678901234567890", "8",
                       "123456789012345678901234567890123456789012345"])
    frac = r.choice(["", "", "", ".5", ".25", ".000000001", ".0000000001", ".1234567890123",
                     ".00000000000000000000000000000000000000000001"])
    suffixes = SUFFIXES[:-3] if valid else SUFFIXES
    return sign + digits + frac + r.choice(suffixes)


def rand_device(r):
    dev = {"driver": r.choice(DOMAINS), "attributes": {}, "capacity": {},
           "allowMultipleAllocations": r.random() < 0.3}
    seen = set()
    for _ in range(r.randint(0, 14)):
        domain = r.choice(DOMAINS[:2] if r.random() < 0.7 else DOMAINS)
        name = r.choice(NAMES[:-1])
        key = name if domain == dev["driver"] and r.random() < 0.5 else f"{domain}/{name}"
        if (domain, name) in seen:
            continue  # a slice cannot publish one attribute twice ("name" and "driver/name")
        seen.add((domain, name))
        kind = r.choice(["int", "int", "bool", "string", "string", "version"])
        if kind == "int":
            value = r.choice(INTS)
        elif kind == "bool":
            value = r.random() < 0.5
        elif kind == "string":
            value = r.choice(STRINGS)
        else:
            value = r.choice(VERSIONS if r.random() < 0.97 else BAD_VERSIONS)
        dev["attributes"][key] = {kind: value}
    for _ in range(r.randint(0, 3)):
        domain = r.choice(DOMAINS)
        name = r.choice(["memory", "cores", "count", "name"])
        key = name if domain == dev["driver"] and r.random() < 0.5 else f"{domain}/{name}"
        if ("capacity", domain, name) not in seen:
            seen.add(("capacity", domain, name))
            dev["capacity"][key] = rand_quantity(r)
    return dev


# Devices as the public drivers publish them (attribute and capacity names of their
# ResourceSlices), so that the corpus selectors also meet devices they select.
def driver_devices():
    def attrs(**kv):
        return {k: ({"int": v} if isinstance(v, int) and not isinstance(v, bool) else
                    {"bool": v} if isinstance(v, bool) else
                    {"version": v[1:]} if isinstance(v, str) and v.startswith("=") else {"string": v})
                for k, v in kv.items()}
    nvidia = {"driver": "gpu.nvidia.com", "attributes": attrs(
        type="gpu", productName="NVIDIA A100-SXM4-80GB", brand="Nvidia", architecture="Ampere",
        uuid="GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", index=0, minor=0, numaNode=0, memoryGiB=80,
        driverVersion="=550.54.15", cudaComputeCapability="=8.0.0", cudaDriverVersion="=12.4.0"),
        "capacity": {"memory": "80Gi"}}
    mig = {"driver": "gpu.nvidia.com", "attributes": attrs(
        type="mig", productName="NVIDIA A100-SXM4-40GB", profile="3g.40gb", migProfile="3g.40gb",
        uuid="MIG-1f2a", parentIndex=0, index=1, driverVersion="=550.54.15"),
        "capacity": {"memory": "40Gi", "multiprocessors": "98", "copyEngines": "3"}}
    rtx = {"driver": "gpu.nvidia.com", "attributes": attrs(
        type="gpu", productName="NVIDIA GeForce RTX 3090 Ti", architecture="Ampere", numaNode=1,
        memoryGiB=24, driverVersion="=535.161.7"), "capacity": {"memory": "24Gi"}}
    channel = {"driver": "compute-domain.nvidia.com", "attributes": attrs(type="channel", id=0)}
    example = {"driver": "gpu.example.com", "attributes": attrs(
        model="LATEST-GPU-MODEL", index=0, uuid="gpu-18db0e85", driverVersion="=1.0.0", memoryGiB=80),
        "capacity": {"memory": "80Gi"}}
    h100 = {"driver": "gpu.example.com", "attributes": attrs(model="H100", index=1),
            "capacity": {"memory": "16Gi"}}
    amd = {"driver": "gpu.amd.com", "attributes": attrs(
        type="amdgpu", deviceID="0x74a1", targetGfxVersion="gfx942", numaNode=0, productName="MI300X",
        **{"resource.kubernetes.io/pciBusID": "0000:03:00.0"}), "capacity": {"memory": "192Gi"}}
    amd_partition = {"driver": "gpu.amd.com", "attributes": attrs(
        type="amdgpu-partition", deviceID="0x74a1", targetGfxVersion="gfx942", numaNode=1,
        **{"resource.kubernetes.io/pciBusID": "0000:03:00.0"}), "capacity": {"memory": "24Gi"}}
    intel = {"driver": "gpu.intel.com", "attributes": attrs(pciId="0xe223", model="Arc B580", family="Arc"),
             "capacity": {"memory": "12Gi", "millicores": "1000m"}}
    dra = {"driver": "dra.example.com", "attributes": attrs(
        name="fish", services="example-sym", a=True, b=True, c=False),
        "capacity": {"name": "2Ki", "memory": "1Gi"}}
    return [nvidia, mig, rtx, channel, example, h100, amd, amd_partition, intel, dra]


def q(s):
    """A CEL string literal."""
    return json.dumps(s, ensure_ascii=False)


class Gen:
    """A seeded random grammar over the supported subset, mostly well-typed."""

    def __init__(self, r):
        self.r = r

    def attr(self):
        r = self.r
        d = r.choice(DOMAINS[:2] if r.random() < 0.7 else DOMAINS)
        n = r.choice(NAMES[:6] if r.random() < 0.6 else NAMES)
        return r.choice([f"device.attributes[{q(d)}].{n}", f"device.attributes[{q(d)}][{q(n)}]"])

    def cap(self):
        d, n = self.r.choice(DOMAINS), self.r.choice(["memory", "cores", "count", "name", "missing"])
        return f"device.capacity[{q(d)}].{n}"

    def pick(self, depth, options):
        weights = [w if depth > 0 or leaf else 0 for (w, leaf, _) in options]
        return self.r.choices(options, weights)[0][2]()

    def int_(self, depth):
        r = self.r
        d = depth - 1
        return self.pick(depth, [
            (4, True, lambda: str(r.choice(INTS)) if r.choice(INTS) != -2**63 else "-9223372036854775808"),
            (3, True, self.attr),
            (3, False, lambda: f"({self.int_(d)} {r.choice(['+', '-', '*', '/', '%'])} {self.int_(d)})"),
            (1, False, lambda: f"-{self.int_(d)}"),
            (1, False, lambda: f"size({self.str_(d)})"),
            (1, False, lambda: f"{self.str_(d)}.size()"),
            (1, False, lambda: f"{self.str_(d)}.indexOf({self.str_(d)})"),
            (1, False, lambda: f"{self.str_(d)}.lastIndexOf({self.str_(d)})"),
            (1, False, lambda: f"{self.qty(d)}.compareTo({self.qty(d)})"),
            (1, False, lambda: f"{self.qty(d)}.asInteger()"),
            (1, False, lambda: f"sign({self.qty(d)})"),
            (1, False, lambda: f"{self.ver(d)}.{r.choice(['major', 'minor', 'patch'])}()"),
            (1, False, lambda: f"{self.ver(d)}.compareTo({self.ver(d)})"),
            (1, False, lambda: f"int({r.choice([self.str_(d), self.uint(d), self.dbl(d)])})"),
            (1, False, lambda: f"({self.bool_(d)} ? {self.int_(d)} : {self.int_(d)})"),
            (1, False, lambda: f"{self.list_(d)}.size()"),
            (1, False, lambda: f"{self.list_(d)}.{r.choice(['sum', 'min', 'max'])}()"),
            (1, False, lambda: f"{self.list_(d)}.{r.choice(['indexOf', 'lastIndexOf'])}({self.int_(d)})"),
        ])

    def uint(self, depth):
        r = self.r
        return self.pick(depth, [
            (3, True, lambda: f"{r.choice([0, 1, 2, 42, 2**63, 2**64 - 1])}u"),
            (1, False, lambda: f"uint({self.int_(depth - 1)})"),
            (1, False, lambda: f"({self.uint(depth - 1)} {r.choice(['+', '-', '*', '/', '%'])} {self.uint(depth - 1)})"),
        ])

    def dbl(self, depth):
        r = self.r
        return self.pick(depth, [
            (3, True, lambda: r.choice(["0.0", "1.5", "-2.5", "1e3", "9.2e18", "-9.3e18", "1.8e19", ".5"])),
            (1, False, lambda: f"double({r.choice([self.int_(depth - 1), self.uint(depth - 1)])})"),
            (1, False, lambda: f"({self.dbl(depth - 1)} {r.choice(['+', '-', '*'])} {self.dbl(depth - 1)})"),
        ])

    def str_(self, depth):
        r = self.r
        d = depth - 1
        return self.pick(depth, [
            (4, True, lambda: q(r.choice(STRINGS))),
            (2, True, lambda: "device.driver"),
            (3, True, self.attr),
            (1, False, lambda: f"({self.str_(d)} + {self.str_(d)})"),
            (1, False, lambda: f"{self.str_(d)}.{r.choice(['lowerAscii', 'upperAscii', 'trim'])}()"),
            (1, False, lambda: f"{self.str_(d)}.replace({self.str_(d)}, {self.str_(d)})"),
            (1, False, lambda: f"{self.str_(d)}.replace({self.str_(d)}, {self.str_(d)}, {r.choice([-1, 0, 1, 2])})"),
            (1, False, lambda: f"{self.str_(d)}.substring({r.choice([0, 1, 2, 5, -1])})"),
            (1, False, lambda: f"{self.str_(d)}.substring({r.choice([0, 1, 2])}, {r.choice([0, 2, 3, 40])})"),
            (1, False, lambda: f"{self.str_(d)}.charAt({r.choice([0, 1, 3, -1, 30])})"),
            (1, False, lambda: f"string({r.choice([self.int_(d), self.uint(d), self.dbl(d), self.bool_(d)])})"),
            (1, False, lambda: f"{self.str_(d)}.split({q(r.choice(['', '.', '-', ' ', 'a']))}).join({q(r.choice(['', '/']))})"),
            (1, False, lambda: f"{self.str_(d)}.split({q(r.choice(['.', '-']))}, {r.choice([0, 1, 2, -1])}).join()"),
        ])

    def qty(self, depth):
        r = self.r
        d = depth - 1
        return self.pick(depth, [
            (3, True, lambda: f"quantity({q(rand_quantity(r, valid=r.random() < 0.9))})"),
            (3, True, self.cap),
            (1, False, lambda: f"{self.qty(d)}.{r.choice(['add', 'sub'])}({self.qty(d)})"),
            (1, False, lambda: f"{self.qty(d)}.{r.choice(['add', 'sub'])}({self.int_(d)})"),
        ])

    def ver(self, depth):
        r = self.r
        return self.pick(depth, [
            (3, True, lambda: f"semver({q(r.choice(VERSION_TEXTS))})"),
            (1, True, lambda: f"semver({q(r.choice(VERSION_TEXTS))}, {r.choice(['true', 'false'])})"),
            (3, True, self.attr),
        ])

    def list_(self, depth):
        r = self.r
        d = depth - 1
        return self.pick(depth, [
            (2, True, lambda: "[" + ", ".join(str(r.choice(INTS[:10])) for _ in range(r.randint(0, 4))) + "]"),
            (1, True, lambda: "[" + ", ".join(q(r.choice(STRINGS)) for _ in range(r.randint(1, 3))) + "]"),
            (1, False, lambda: f"{self.str_(d)}.split({q(r.choice(['.', '-', '']))})"),
            (1, False, lambda: f"[{self.int_(d)}, {self.int_(d)}].map(x, x {r.choice(['+', '*', '-'])} {self.int_(d)})"),
            (1, False, lambda: f"[{self.int_(d)}, {self.int_(d)}, {self.int_(d)}].filter(x, x > {self.int_(d)})"),
            (1, False, lambda: f"({self.list_(d)} + {self.list_(d)})"),
        ])

    def bool_(self, depth):
        r = self.r
        d = depth - 1
        cmp = lambda: r.choice(["==", "!=", "<", "<=", ">", ">="])
        return self.pick(depth, [
            (2, True, lambda: r.choice(["true", "false"])),
            (2, True, self.attr),
            (1, True, lambda: "device.allowMultipleAllocations"),
            (4, False, lambda: f"{self.int_(d)} {cmp()} {self.int_(d)}"),
            (2, False, lambda: f"{self.str_(d)} {cmp()} {self.str_(d)}"),
            (2, False, lambda: f"{self.attr()} {r.choice(['==', '!='])} {r.choice([self.int_(d), self.str_(d), 'true', 'null', self.qty(d), self.ver(d)])}"),
            (1, False, lambda: f"{r.choice([self.int_(d), self.uint(d), self.dbl(d)])} {cmp()} {r.choice([self.uint(d), self.dbl(d), self.attr()])}"),
            (3, False, lambda: f"({self.bool_(d)} {r.choice(['&&', '||'])} {self.bool_(d)})"),
            (1, False, lambda: f"!{self.bool_(d)}"),
            (1, False, lambda: f"({self.bool_(d)} ? {self.bool_(d)} : {self.bool_(d)})"),
            (2, False, lambda: f"{self.str_(d)}.{r.choice(['startsWith', 'endsWith', 'contains'])}({self.str_(d)})"),
            (1, False, lambda: f"{self.str_(d)}.matches({q(r.choice(['^a', 'a100$', '(?i)nvidia', '[0-9]+', '^$', '.*', 'sym$']))})"),
            (2, False, lambda: f"{self.qty(d)}.{r.choice(['isGreaterThan', 'isLessThan'])}({self.qty(d)})"),
            (1, False, lambda: f"{self.qty(d)} == {self.qty(d)}"),
            (1, False, lambda: f"{self.qty(d)}.isInteger()"),
            (1, False, lambda: f"isQuantity({q(rand_quantity(r, valid=r.random() < 0.7))})"),
            (2, False, lambda: f"{self.ver(d)}.{r.choice(['isGreaterThan', 'isLessThan'])}({self.ver(d)})"),
            (1, False, lambda: f"{self.ver(d)} == {self.ver(d)}"),
            (1, False, lambda: f"isSemver({q(r.choice(VERSION_TEXTS))}{r.choice(['', ', true', ', false'])})"),
            (2, False, lambda: f"{q(r.choice(DOMAINS))} in device.{r.choice(['attributes', 'capacity'])}"),
            (2, False, lambda: f"{q(r.choice(NAMES))} in device.attributes[{q(r.choice(DOMAINS))}]"),
            (2, False, lambda: f"has({self.attr().replace('[' + q(r.choice(NAMES)) + ']', '.x') if False else 'device.attributes[' + q(r.choice(DOMAINS)) + '].' + r.choice(NAMES)})"),
            (1, False, lambda: f"{self.int_(d)} in {self.list_(d)}"),
            (2, False, lambda: f"{self.list_(d)}.{r.choice(['all', 'exists', 'exists_one'])}(x, x {cmp()} {self.int_(d)})"),
            (1, False, lambda: f"device.attributes[{q(r.choice(DOMAINS))}].{r.choice(['all', 'exists', 'exists_one'])}(k, k.startsWith({q(r.choice(['m', 'n', 'a', '']))}))"),
            (1, False, lambda: f"cel.bind(v, {self.attr()}, v == {self.int_(d)} || v == {self.str_(d)})"),
            (1, False, lambda: f"{self.list_(d)} == {self.list_(d)}"),
            (1, False, lambda: f"{self.list_(d)}.isSorted()"),
            (1, False, lambda: f"{r.choice([self.attr(), self.list_(d)])}.includes({r.choice([self.int_(d), self.str_(d)])})"),
            (1, False, lambda: f"[{self.dbl(d)}, {self.dbl(d)}].{r.choice(['sum', 'min', 'max'])}() {cmp()} {self.dbl(d)}"),
            (1, False, lambda: f"[{self.str_(d)}, {self.str_(d)}].{r.choice(['min', 'max'])}() {cmp()} {self.str_(d)}"),
            # Values hidden behind dyn(): the run-time dispatch across int, uint, double, string.
            (2, False, lambda: f"dyn({self.any_(d)}) {cmp()} dyn({self.any_(d)})"),
            (1, False, lambda: f"(dyn({self.any_(d)}) {r.choice(['+', '-', '*', '/', '%'])} dyn({self.any_(d)})) {cmp()} {self.any_(d)}"),
            (1, False, lambda: f"dyn({self.any_(d)}) in [{self.any_(d)}, {self.any_(d)}].map(x, dyn(x))"),
            (1, False, lambda: f"has(device.capacity[{q(r.choice(DOMAINS))}].{r.choice(['memory', 'cores', 'missing'])})"),
            (1, False, lambda: f"device.capacity[{q(r.choice(DOMAINS))}].{r.choice(['all', 'exists', 'exists_one'])}(k, device.capacity[{q(r.choice(DOMAINS))}][k].sign() >= 0)"),
            (1, False, lambda: f"[{self.qty(d)}, {self.qty(d)}].exists(x, x.isLessThan({self.qty(d)}))"),
            (1, False, lambda: f"{self.list_(d)}.exists_one(x, {self.int_(d)} / x > 0)"),
            (1, False, lambda: f"cel.bind(a, {self.int_(d)}, cel.bind(b, {self.str_(d)}, b.size() < a || a == {self.int_(d)}))"),
            (1, False, lambda: f"{self.dbl(d)} / {self.dbl(d)} {cmp()} {self.dbl(d)}"),
        ])

    def any_(self, depth):
        """A value of any of the primitive types."""
        r = self.r
        return r.choice([self.int_, self.uint, self.dbl, self.str_, self.bool_])(max(depth - 1, 0))


def expressions(name):
    """The expressions of a case file: one a line, # comments, {NL} is a newline."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [line.rstrip("\n").replace("{NL}", "\n") for line in f
                if line.strip() and not line.startswith("#")]


def corpus():
    return expressions("corpus.txt") + expressions("edge_cases.txt")


def run(binary, lines):
    out = subprocess.run([binary], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        sys.exit(f"{binary} failed ({out.returncode}): {out.stderr.strip()}")
    results = out.stdout.split("\n")[: len(lines)]
    if len(results) != len(lines):
        sys.exit(f"{binary} printed {len(results)} results for {len(lines)} cases")
    return [tuple(r.split("\t", 1)) for r in results]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessel", required=True, help="tessel_cel_eval binary")
    ap.add_argument("--reference", help="cel-reference binary (default: built by reference/build.sh)")
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--count", type=int, default=4000, help="generated expressions")
    ap.add_argument("--devices", type=int, default=3, help="devices per generated expression")
    args = ap.parse_args()
    reference = args.reference or subprocess.run(
        [os.path.join(HERE, "reference", "build.sh")], capture_output=True, text=True, check=True).stdout.strip()

    r = random.Random(args.seed)
    devices = driver_devices() + [rand_device(r) for _ in range(30)]
    cases = [{"expr": e, "device": d} for e in corpus() for d in devices]
    cases += [{"expr": e, "device": devices[0]} for e in expressions("cost_cases.txt")]
    gen = Gen(r)
    for _ in range(args.count):
        expr = gen.bool_(r.randint(1, 4))
        cases += [{"expr": expr, "device": rand_device(r)} for _ in range(args.devices)]
    unsupported = expressions("unsupported.txt")
    lines = [json.dumps(c, ensure_ascii=False) for c in cases]
    lines_unsupported = [json.dumps({"expr": e, "device": devices[0]}, ensure_ascii=False) for e in unsupported]
    want, got = run(reference, lines), run(args.tessel, lines)
    # Outside the subset: Tessel must refuse each, at compile time, saying "unsupported".
    refused = run(args.tessel, lines_unsupported)
    accepted_upstream = sum(1 for w in run(reference, lines_unsupported) if w[0] != "compile_error")
    not_refused = [(e, g) for e, g in zip(unsupported, refused)
                   if g[0] != "compile_error" or "unsupported" not in g[-1]]

    mismatches = [(c, w, g) for c, w, g in zip(cases, want, got) if w[0] != g[0]]
    kinds = {}
    for w in want:
        kinds[w[0]] = kinds.get(w[0], 0) + 1
    print(f"{len(cases)} cases ({len(corpus())} corpus expressions, {args.count} generated); "
          f"reference outcomes: {dict(sorted(kinds.items()))}; mismatches: {len(mismatches)}")
    by_expr = {}
    for c, w, g in mismatches:
        by_expr.setdefault(c["expr"], []).append((c, w, g))
    for expr, cases_of in list(by_expr.items())[:25]:
        c, w, g = cases_of[0]
        print(f"\nexpr:      {expr}   ({len(cases_of)} devices)\n"
              f"device:    {json.dumps(c['device'], ensure_ascii=False)}\n"
              f"reference: {' '.join(w)}\ntessel:    {' '.join(g)}")
    print(f"unsupported.txt: {len(unsupported)} expressions ({accepted_upstream} valid upstream), "
          f"{len(unsupported) - len(not_refused)} refused as unsupported")
    for e, g in not_refused:
        print(f"\nnot refused as unsupported: {e}\ntessel:    {' '.join(g)}")
    return 1 if mismatches or not_refused else 0


if __name__ == "__main__":
    sys.exit(main())
