#!/usr/bin/env python3
"""summarize-control.py CSV POLICY: deadline misses and latency percentiles of
the 1 kHz control loop, per mechanism, CPU count and object count (N, or N/K:
N objects of which K are updated a period; min / median / max over the
repetitions)."""
import csv, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[(r["cpus"], r["n"], r["mechanism"])].append({k: int(v) for k, v in r.items() if k not in ("mechanism", "cpus", "n")})

def spread(values, scale=1.0):
    vals = [v / scale for v in values]
    return f"{min(vals):.0f} / {statistics.median(vals):.0f} / {max(vals):.0f}"

print(f"Control loop at 1 kHz, loop under {sys.argv[2]}; min / median / max over the repetitions")
print("| CPUs | objects (/ updated a period) | mechanism | periods | deadline misses | p50 latency (us) | p99 latency (us) | max latency (us) | periods not persisted (SendPData skipped) | cost model (SP incremental): cycle predicted / measured (ms), verdict |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
def order(key):
    cpus, n, mech = key
    total, _, touched = n.partition("/")
    return (cpus, int(total), int(touched or total), mech)

def model(rs):
    if not any(r.get("cycle_ns", 0) for r in rs):
        return ""
    pred = statistics.median(r["predicted_cycle_ns"] for r in rs) / 1e6
    meas = statistics.median(r["cycle_ns"] for r in rs) / 1e6
    warned = sum(1 for r in rs if r.get("warned", 0) > 0)
    verdict = "schedulable" if warned == 0 else f"unschedulable ({warned} of {len(rs)} runs warned)"
    return f"{pred:.2f} / {meas:.2f}, {verdict}"

for (cpus, n, mech), rs in sorted(runs.items(), key=lambda kv: order(kv[0])):
    print(f"| {cpus} | {n} | {mech} | {rs[0]['periods']} | {spread([r['misses'] for r in rs])} | "
          f"{spread([r['p50_ns'] for r in rs], 1e3)} | {spread([r['p99_ns'] for r in rs], 1e3)} | {spread([r['max_ns'] for r in rs], 1e3)} | "
          f"{spread([r['skipped'] for r in rs]) if 'skipped' in rs[0] and mech.startswith('sp-incremental') else ''} | {model(rs)} |")
