#!/usr/bin/env python3
"""Runs `tessel-bench throughput` over cluster sizes and thread counts and prints a Markdown table
of medians and an ASCII plot of decisions/s against nodes (docs/bench.md shows its output), with
the machine's load average before and after (the figures are only comparable at like loads).

  bench/throughput/sweep.py --bench build/bin/tessel-bench [--nodes 1000,2000,5000,10000]
      [--threads 1,2] [--pods-per-node 2] [--repeats 3]
"""
import argparse
import json
import statistics
import subprocess


def run(bench, nodes, pods, threads):
    out = subprocess.run([bench, "throughput", "--nodes", str(nodes), "--pods", str(pods),
                          "--threads", str(threads), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--nodes", default="1000,2000,5000,10000")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pods-per-node", type=float, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    load_before = load_average()
    rows = {}
    for n in sizes:
        for t in threads:
            runs = [run(args.bench, n, int(n * args.pods_per_node), t) for _ in range(args.repeats)]
            rows[(n, t)] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_average()}")
    print()
    print("| nodes | threads | decisions/s | p50 µs | p99 µs | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for (n, t), r in rows.items():
        print(f"| {n:,} | {t} | {r['decisions_per_s']:,.0f} | {r['p50_us']:.1f} | {r['p99_us']:,.0f} "
              f"| {r['peak_rss_mib']:.0f} |")
    print()
    top = max(r["decisions_per_s"] for r in rows.values())
    width = 50
    print("decisions/s (median of %d runs)" % args.repeats)
    for (n, t), r in rows.items():
        bar = "#" * max(1, round(r["decisions_per_s"] / top * width))
        print(f"{n:>6} nodes, {t} thr | {bar} {r['decisions_per_s']:,.0f}")


if __name__ == "__main__":
    main()
