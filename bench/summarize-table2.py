#!/usr/bin/env python3
"""summarize-table2.py CSV: the rows of the paper's Table 2, one column per configuration.

The persistent graph has 1326 objects (checked by every run's restore); any
object serialized beyond those belongs to the other two threads' graphs and
was written by a barrier while the cycle's marking ran (it lands in the
snapshot unreferenced; a reader creates it and the GC collects it).
"""
import csv, statistics, sys
from collections import defaultdict

PERSISTENT = 1326
runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[r["config"]].append({k: int(v) for k, v in r.items() if k != "config"})
configs = [c for c in ("stw", "annotating", "marking", "marking-v2") if c in runs]

def stat(config, key):
    values = [r[key] for r in runs[config]]
    return f"{statistics.mean(values):.0f} ({min(values)}-{max(values)})"

rows = [("Total objects (3 threads)", lambda c: str(runs[c][0]["objects_total"])),
        ("Avg. No. of persistent objs", lambda c: str(PERSISTENT)),
        ("Avg. No. of serialized objs (min-max)", lambda c: stat(c, "serialized")),
        ("Avg. No. of WB invocations (min-max)", lambda c: stat(c, "barrier_calls")),
        ("Avg. No. of WB serializations (min-max)", lambda c: stat(c, "barrier_writes"))]
n = min(len(runs[c]) for c in configs)
print(f"| Properties ({n} runs each) | " + " | ".join(("stop-the-world" if c == "stw" else c + " 500us/3ms") for c in configs) + " |")
print("|---|" + "---:|" * len(configs))
for name, f in rows:
    print(f"| {name} | " + " | ".join(f(c) for c in configs) + " |")
