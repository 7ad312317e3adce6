#!/usr/bin/env python3
"""summarize-table1.py CSV: the rows of the paper's Table 1, one column per configuration.

Stop-the-world has no increments: its pause is the whole serialization (the
paper's STW columns), and it has no cycle length or barrier.
"""
import csv, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[r["config"]].append({k: int(v) for k, v in r.items() if k not in ("config",)})
configs = [c for c in ("stw", "annotating", "marking", "marking-v2") if c in runs]

def col(config, row):
    rs, stw = runs[config], config.split("@")[0] == "stw"
    mean = lambda k: statistics.mean(r[k] for r in rs)
    if row == "Max. pause time per increment (us)":
        return max(r["serialize_ns"] if stw else r["max_pause_ns"] for r in rs) / 1e3
    if row == "Avg. pause time per increment (us)":
        return (mean("serialize_ns") if stw else mean("avg_pause_ns")) / 1e3
    if row == "Avg. persistence cycle (ms)":
        return None if stw else mean("cycle_ns") / 1e6
    if row == "Max. serialization time (us)":
        return max(r["serialize_ns"] for r in rs) / 1e3
    if row == "Avg. serialization time (us)":
        return mean("serialize_ns") / 1e3
    if row == "Max. application exec. time (ms)":
        return max(r["app_ns"] for r in rs) / 1e6
    if row == "Avg. application exec. time (ms)":
        return mean("app_ns") / 1e6
    if row == "Avg. No. of Increments":
        return 1 if stw else mean("increments")
    if row == "Avg. No. of WB invocations":
        return 0 if stw else mean("barrier_calls")
    if row == "Avg. No. of WB Serializations":
        return 0 if stw else mean("barrier_writes")
    if row == "Objects / bytes persisted":
        return f"{rs[0]['objects']} / {rs[0]['bytes']}"
    if row == "Avg. commit (write, fsync, rename) (us)":
        return mean("commit_ns") / 1e3

rows = ["Max. pause time per increment (us)", "Avg. pause time per increment (us)", "Avg. persistence cycle (ms)",
        "Max. serialization time (us)", "Avg. serialization time (us)", "Max. application exec. time (ms)",
        "Avg. application exec. time (ms)", "Avg. No. of Increments", "Avg. No. of WB invocations",
        "Avg. No. of WB Serializations", "Objects / bytes persisted", "Avg. commit (write, fsync, rename) (us)"]
def print_table(configs, store):
    n = min(len(runs[c]) for c in configs)
    name = lambda c: c.split("@")[0]
    print(f"| Properties ({n} runs each{store}) | " + " | ".join(("stop-the-world" if name(c) == "stw" else name(c) + " 500us/3ms") for c in configs) + " |")
    print("|---|" + "---:|" * len(configs))
    for row in rows:
        cells = []
        for c in configs:
            v = col(c, row)
            cells.append("NA" if v is None else v if isinstance(v, str) else f"{v:.1f}" if isinstance(v, float) else str(v))
        print(f"| {row} | " + " | ".join(cells) + " |")

print_table(configs, "")
null_configs = [c + "@null" for c in ("stw", "annotating", "marking", "marking-v2") if c + "@null" in runs]
if null_configs:
    print()
    print_table(null_configs, ", null store: nothing written")
