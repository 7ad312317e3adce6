#!/bin/bash
# run-barrier.sh [ITERATIONS] [ROUNDS]: the store barrier's cost with no cycle
# running, Debian's stock mono against spmono without barriers (stw) and with
# each barrier mode (incremental, and stop-the-world with deltas, whose
# barrier stays armed between snapshots), and in each mode again with persistence cycles running
# back to back over everything the kernels store into, in one run: the
# runtimes take turns, ROUNDS times, each
# measuring every kernel 3 times, each round with the kernels' code placed
# elsewhere.  Writes bench/results/barrier.csv and prints
# min/median/max ns per iteration and each median's ratio to stock mono's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
iterations=${1:-100000000}; rounds=${2:-5}
out=$here/results; mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$build/lib/SPersistence.dll" "$work/"
mcs -nologo -optimize+ -warnaserror -r:"$work/SPersistence.dll" -out:"$work/BarrierBench.exe" "$here/BarrierBench.cs"
csv=$out/barrier.csv
echo "runtime,kernel,where,rep,ns" > "$csv"
sp=$build/bin/spmono
for round in $(seq "$rounds"); do
	# Each round the kernels land at other addresses (BarrierBench.cs, ShiftCode).
	export BARRIER_BENCH_SHIFT=$(( (round - 1) % 9 ))
	mono "$work/BarrierBench.exe" "stock mono" "$iterations" 3 >> "$csv"
	"$sp" "$work/BarrierBench.exe" "spmono stw (no barriers)" "$iterations" 3 >> "$csv"
	for mode in annotating marking-v2 marking; do
		"$sp" --sp-mode=incremental --sp-barrier=$mode "$work/BarrierBench.exe" "spmono $mode" "$iterations" 3 >> "$csv"
		# Delta snapshots (stop-the-world): the barrier stays armed between snapshots, none taken while measuring.
		rm -rf "$work/deltastore"
		"$sp" --sp-delta=on --sp-store="$work/deltastore" --sp-barrier=$mode "$work/BarrierBench.exe" "spmono $mode + deltas" "$iterations" 3 >> "$csv"
		# The same with cycles back to back over everything the kernels store into (null store: no I/O).
		"$sp" --sp-mode=incremental --sp-barrier=$mode --sp-store=null: "$work/BarrierBench.exe" "spmono $mode + cycles" \
			"$iterations" 3 cycles >> "$csv" 2> "$work/cycles.txt"
		grep -q " [1-9][0-9]* cycles while measuring" "$work/cycles.txt" || { echo "no cycle ran during $mode: $(cat "$work/cycles.txt")" >&2; exit 1; }
	done
done
python3 "$here/summarize-barrier.py" "$csv"
