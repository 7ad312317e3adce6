#!/usr/bin/env python3
"""summarize.py CSV: min/median/max of every (mechanism, operation, size) and SP's advantage."""
import csv, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
by_rep = defaultdict(dict)   # key -> rep -> ms (a repetition's row; restore-cold has one a process)
size = {}
for r in csv.DictReader(open(sys.argv[1])):
    key = (r["mechanism"], r["operation"], int(r["nodes"]))
    rows[key].append(int(r["ns"]) / 1e6)
    by_rep[key][int(r["rep"])] = int(r["ns"]) / 1e6
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
def paired(op, peer, n):
    """SP/peer repetition by repetition, for peers that take turns with SP in its process (TreeBench.cs):
    the text, and with several processes (run-tree.sh numbers a repetition p * 1000 + rep) the median
    of each process's ratio of medians, else None."""
    sp, other = by_rep.get(("SP", op, n), {}), by_rep.get((peer, op, n), {})
    reps = sorted(r for r in sp.keys() & other.keys() if other[r] > 0)
    if not reps:
        return "", None
    ratios = sorted(sp[r] / other[r] for r in reps)
    text = f"repetition by repetition: median {statistics.median(ratios):.2f}, {ratios[0]:.2f}-{ratios[-1]:.2f}"
    processes = sorted({r // 1000 for r in reps})
    if len(processes) < 2:
        return f" ({text})", None
    each = sorted(statistics.median([sp[r] for r in reps if r // 1000 == p]) /
                  statistics.median([other[r] for r in reps if r // 1000 == p]) for p in processes)
    text += f"; process by process: {', '.join(f'{x:.2f}' for x in each)}"
    return f" ({text})", statistics.median(each)
for n in sorted({k[2] for k in rows}):
    sp_ser, sp_res = med("SP", "serialize", n), med("SP", "restore", n)
    for label, peer_name, kind in (("serialize", "BinaryWriter", "hand-written BinaryWriter"),
                                   ("serialize", "Traversal", "traversal floor"),
                                   ("restore", "BinaryReader", "hand-written BinaryReader"),
                                   ("restore", "New", "`new` floor"),
                                   ("serialize", "Fory", "Apache Fory (Java)"),
                                   ("restore", "Fory", "Apache Fory (Java)"),
                                   ("serialize", "Kryo", "Kryo (Java)"),
                                   ("restore", "Kryo", "Kryo (Java)")):
        sp, peer = (sp_ser if label == "serialize" else sp_res), med(peer_name, label, n)
        if sp and peer:
            same_process = peer_name in ("BinaryWriter", "Traversal", "BinaryReader", "New")
            pairs, of_processes = paired(label, peer_name, n) if same_process else ("", None)
            # Several processes: the median of their ratios (their medians pooled would pair one process's
            # SP with another's peer, and a VM's speed differs from process to process).
            ratio = f"{of_processes:.2f}, the median of the processes' ratios" if of_processes else f"{sp / peer:.2f}"
            print(f"{n} nodes: SP {label} {sp:.3f} ms, {kind} {peer:.3f} ms: SP/peer {ratio}{pairs}")
n = max(k[2] for k in rows)
if ("SP", "serialize", n) in size and ("BinaryFormatter", "serialize", n) in size:
    b, s = size[("BinaryFormatter", "serialize", n)], size[("SP", "serialize", n)]
    print(f"size {n} nodes: SP {s} bytes, BinaryFormatter {b} bytes ({b / s:.1f}x larger)")
