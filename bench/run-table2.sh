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
work=$(mktemp -d /dev/shm/sptable2.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/GraphBench.exe" "$here/GraphBench.cs"
csv=$out/table2.csv
echo "config,run,serialized,barrier_calls,barrier_writes,objects_total" > "$csv"
sp=$build/bin/spmono
for run in $(seq "$runs"); do
	for config in stw annotating marking marking-v2; do
		opts=()
		[ "$config" = stw ] || opts=(--sp-mode=incremental --sp-barrier="$config" --sp-pause=500 --sp-period=3000)
		rm -rf "$work/store"
		row=$("$sp" --sp-store="$work/store" "${opts[@]}" "$work/GraphBench.exe" three "$run")
		"$sp" --sp-store="$work/store" "$work/GraphBench.exe" check "$run" || { echo "run $run, $config: check failed" >&2; exit 1; }
		echo "$config,$run,$row" >> "$csv"
	done
done
python3 "$here/summarize-table2.py" "$csv"
