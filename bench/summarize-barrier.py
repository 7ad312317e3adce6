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
print(f"{'kernel':16} {'where':8} {'runtime':34} {'n':>3} {'min ns':>8} {'median':>8} {'max':>8} {'vs stock':>9} {'vs stw':>8}")
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
        print(f"{k:16} {w:8} {rt:34} {len(v):3} {min(v):8.3f} {med:8.3f} {max(v):8.3f} {vs_stock:>9} {vs_stw:>8}")
# One figure per runtime and kind of kernel (plain: stores in ordinary methods,
# which `annotating` leaves alone; guarded: in [SPersistentUpdate] methods of an
# [SPersistent] class, which every mode guards): the geometric mean of its ratios to
# the base, of medians and of minimums.  Whole processes run fast or slow
# (code placement, the machine's other tenants): the medians carry that noise,
# the minimums estimate the code's own cost.
for base in ("stock mono", "spmono stw (no barriers)"):
    for rt in runtimes:
        if rt == base:
            continue
        for where in ("plain", "guarded"):
            pairs = [(ns[(k, w, rt)], ns[(k, w, base)]) for k, w in kernels
                     if w == where and (k, w, rt) in ns and (k, w, base) in ns]
            if pairs:
                med = statistics.geometric_mean([statistics.median(a) / statistics.median(b) for a, b in pairs])
                low = statistics.geometric_mean([min(a) / min(b) for a, b in pairs])
                print(f"{rt} vs {base}, {len(pairs)} {where} kernels: medians {(med - 1) * 100:+.1f}%, "
                      f"minimums {(low - 1) * 100:+.1f}%")
