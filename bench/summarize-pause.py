#!/usr/bin/env python3
"""summarize-pause.py CSV TARGET_US PERIOD_US NODES LENGTH POLICY CYCLES: the pause distribution
(min, average, median, p99, p99.99, max)."""
import csv, sys

hist = [(int(r["pause_us"]), int(r["count"])) for r in csv.DictReader(open(sys.argv[1]))]
target, period, nodes, length, policy, cycles = sys.argv[2:8]
total = sum(c for _, c in hist)

def percentile(p):
    """Smallest bucket (whole microseconds, lower bound) holding the p-th percentile."""
    seen = 0
    for us, c in hist:
        seen += c
        if seen >= p / 100 * total:
            return us
    return hist[-1][0]

if total == 0:
    sys.exit("no increments recorded")
worst = hist[-1][0]
# The histogram's buckets are whole microseconds: each pause counts as its bucket's middle.
mean = sum((us + 0.5) * c for us, c in hist) / total
print(f"target {target} us, period {period} us, {nodes} nodes + int[{length}], SP task {policy}: "
      f"{total} increments in {cycles} cycles; pause min {hist[0][0]} us, average {mean:.1f} us, median {percentile(50)} us, "
      f"p99 {percentile(99)} us, p99.99 {percentile(99.99)} us, max {worst}-{worst + 1} us "
      f"({(worst + 1) / int(target):.3f}x the target at most)")
