#!/bin/bash
# run-table2.sh [RUNS]: the paper's Table 2 (section 5.3): three threads each
# construct a 1326-object graph and mutate it; only the first graph is
# persistent, the second is of the same classes, the third of classes that
# are not [SPersistent] (bench/GraphBench.cs, "three").  Stop-the-world and
# the three barrier modes (500 us / 3 ms), RUNS processes each; every run's
# snapshot is restored in a fresh process and checked against the first graph
# at SendPData before its figures count.  Store on tmpfs.  Writes
# bench/results/table2.csv and prints the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
runs=${1:-40}
out=$here/results; mkdir -p "$out"
source "$here/graph-runs.sh"
csv=$out/table2.csv
echo "config,run,serialized,barrier_calls,barrier_writes,objects_total" > "$csv"
graph_runs three "$runs" "$csv"
python3 "$here/summarize-table2.py" "$csv"
