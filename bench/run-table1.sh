#!/bin/bash
# run-table1.sh [RUNS]: the paper's Table 1 (directed weighted graph of 1326
# persistent objects; 500 us pause target, 3 ms period) for stop-the-world and
# the three barrier modes, RUNS processes each (the paper ran 40).  Every run's
# snapshot is restored in a fresh process and checked against the graph at
# SendPData before its figures count.  Store on tmpfs, and again with the
# null store (nothing written: the storage's share of the times; nothing to
# check).  Writes bench/results/table1.csv and prints the two tables.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
runs=${1:-40}
out=$here/results; mkdir -p "$out"
source "$here/graph-runs.sh"
csv=$out/table1.csv
echo "config,run,app_ns,serialize_ns,commit_ns,increments,max_pause_ns,avg_pause_ns,cycle_ns,barrier_calls,barrier_writes,bytes,objects" > "$csv"
graph_runs run "$runs" "$csv" "tmpfs null"
python3 "$here/summarize-table1.py" "$csv"
