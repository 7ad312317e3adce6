#!/usr/bin/env python3
"""summarize-barrier.py CSV: ns per iteration by kernel and runtime, and ratios to stock mono."""
import csv, statistics, sys
from collections import defaultdict

ns = defaultdict(list)
runtimes = []
for r in csv.DictReader(open(sys.argv[1])):
    ns[(r["kernel"], r["where"], r["runtime"])].append(float(r["ns"]))
    if r["runtime"] not in runtimes:
        runtimes.append(r["runtime"])
kernels = sorted({(k, w) for k, w, _ in ns})
print(f"{'kernel':16} {'where':8} {'runtime':26} {'n':>3} {'min ns':>8} {'median':>8} {'max':>8} {'vs stock':>9} {'vs stw':>8}")
for k, w in kernels:
    stock = ns.get((k, w, "stock mono"))
    stw = ns.get((k, w, "spmono stw (no barriers)"))
    for rt in runtimes:
        v = ns.get((k, w, rt))
        if not v:
            continue
        med = statistics.median(v)
        vs_stock = f"{(med / statistics.median(stock) - 1) * 100:+8.1f}%" if stock else ""
        vs_stw = f"{(med / statistics.median(stw) - 1) * 100:+7.1f}%" if stw else ""
        print(f"{k:16} {w:8} {rt:26} {len(v):3} {min(v):8.3f} {med:8.3f} {max(v):8.3f} {vs_stock:>9} {vs_stw:>8}")
# One figure per runtime: the geometric mean of its median ratios over every kernel.
for base in ("stock mono", "spmono stw (no barriers)"):
    for rt in runtimes:
        if rt == base:
            continue
        ratios = [statistics.median(ns[(k, w, rt)]) / statistics.median(ns[(k, w, base)])
                  for k, w in kernels if (k, w, rt) in ns and (k, w, base) in ns]
        if ratios:
            print(f"{rt} vs {base}: geometric mean of median ratios over {len(ratios)} kernels {(statistics.geometric_mean(ratios) - 1) * 100:+.1f}%")
