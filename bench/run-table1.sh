#!/bin/bash
# run-table1.sh [RUNS]: the paper's Table 1 (directed weighted graph of 1326
# persistent objects; 500 us pause target, 3 ms period) for stop-the-world and
# the three barrier modes, RUNS processes each (the paper ran 40).  Every run's
# snapshot is restored in a fresh process and checked against the graph at
# SendPData before its figures count.  Store on tmpfs.  Writes
# bench/results/table1.csv and prints the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
runs=${1:-40}
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/sptable1.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/GraphBench.exe" "$here/GraphBench.cs"
csv=$out/table1.csv
echo "config,run,app_ns,serialize_ns,commit_ns,increments,max_pause_ns,avg_pause_ns,cycle_ns,barrier_calls,barrier_writes,bytes,objects" > "$csv"
sp=$build/bin/spmono
for run in $(seq "$runs"); do
	for config in stw annotating marking marking-v2; do
		opts=()
		[ "$config" = stw ] || opts=(--sp-mode=incremental --sp-barrier="$config" --sp-pause=500 --sp-period=3000)
		rm -rf "$work/store"
		row=$("$sp" --sp-store="$work/store" "${opts[@]}" "$work/GraphBench.exe" run "$run")
		"$sp" --sp-store="$work/store" "$work/GraphBench.exe" check "$run" || { echo "run $run, $config: check failed" >&2; exit 1; }
		echo "$config,$run,$row" >> "$csv"
	done
done
python3 "$here/summarize-table1.py" "$csv"
