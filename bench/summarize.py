#!/usr/bin/env python3
"""summarize.py CSV: min/median/max of every (mechanism, operation, size) and SP's advantage."""
import csv, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
size = {}
for r in csv.DictReader(open(sys.argv[1])):
    key = (r["mechanism"], r["operation"], int(r["nodes"]))
    rows[key].append(int(r["ns"]) / 1e6)
    size[key] = int(r["bytes"])
print(f"{'mechanism':16} {'operation':12} {'nodes':>8} {'n':>3} {'min ms':>9} {'median':>9} {'max':>9} {'bytes':>10}")
for key in sorted(rows):
    v = rows[key]
    print(f"{key[0]:16} {key[1]:12} {key[2]:8} {len(v):3} {min(v):9.3f} {statistics.median(v):9.3f} {max(v):9.3f} {size[key]:10}")
for bf_op, sp_op in (("serialize", "serialize"), ("restore", "restore"), ("restore-cold", "restore-cold")):
    for n in sorted({k[2] for k in rows}):
        bf, sp = rows.get(("BinaryFormatter", bf_op, n)), rows.get(("SP", sp_op, n))
        if bf and sp:
            print(f"{n} nodes: SP {sp_op} is {statistics.median(bf) / statistics.median(sp):.1f}x faster than BinaryFormatter {bf_op} (medians)")
# Issue 20's anchors: SP against what a user writes by hand, and against the floors (medians).
def med(mech, op, n):
    v = rows.get((mech, op, n))
    return statistics.median(v) if v else None
for n in sorted({k[2] for k in rows}):
    sp_ser, sp_res = med("SP", "serialize", n), med("SP", "restore", n)
    for label, sp, peer, kind in (("serialize", sp_ser, med("BinaryWriter", "serialize", n), "hand-written BinaryWriter"),
                                  ("serialize", sp_ser, med("Traversal", "serialize", n), "traversal floor"),
                                  ("restore", sp_res, med("BinaryReader", "restore", n), "hand-written BinaryReader"),
                                  ("restore", sp_res, med("New", "restore", n), "`new` floor"),
                                  ("serialize", sp_ser, med("Fory", "serialize", n), "Apache Fory (Java)"),
                                  ("restore", sp_res, med("Fory", "restore", n), "Apache Fory (Java)"),
                                  ("serialize", sp_ser, med("Kryo", "serialize", n), "Kryo (Java)"),
                                  ("restore", sp_res, med("Kryo", "restore", n), "Kryo (Java)")):
        if sp and peer:
            print(f"{n} nodes: SP {label} {sp:.3f} ms, {kind} {peer:.3f} ms: SP/peer {sp / peer:.2f}")
n = max(k[2] for k in rows)
if ("SP", "serialize", n) in size and ("BinaryFormatter", "serialize", n) in size:
    b, s = size[("BinaryFormatter", "serialize", n)], size[("SP", "serialize", n)]
    print(f"size {n} nodes: SP {s} bytes, BinaryFormatter {b} bytes ({b / s:.1f}x larger)")
