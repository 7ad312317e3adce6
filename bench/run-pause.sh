#!/bin/bash
# run-pause.sh [INCREMENTS] [NODES] [LENGTH] [TARGETS...]: increment pauses of
# the SP task against the pause target, on a plant of NODES nodes (a tenth
# with a tag string) and an int[LENGTH], while a control loop updates 100
# nodes a millisecond.  The SP and writer tasks run under SCHED_FIFO
# (--sp-priority; root or CAP_SYS_NICE, else spmono warns and the figures say
# "normal policy").  Targets default to 100 and 500 us, with periods of 1 and
# 2.5 ms.  The store is on tmpfs.  The final snapshot is checked (restored in
# a fresh process and compared with the replayed updates) before any figure
# counts.  Writes bench/results/pause-<target>.csv (histogram: pause_us,count)
# and prints count, min, average, median, p99, p99.99, max and max/target.
# Then the same run with the null store (--sp-store=null:, nothing written:
# pause-<target>-null.csv), so that the writer's share shows; it has no
# snapshot to check, its twin above is checked.
# Beside each, the machine's floor: bench/ideal-increments.c runs as many
# increments of a perfectly divisible workload with the same target, period
# and policy, computing only, then also touching a 256 MB buffer at random
# (pause-<target>-ideal-<mb>mb.csv); what they overshoot by, timer ticks,
# interrupts and the hypervisor add to any implementation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
increments=${1:-10000}; nodes=${2:-100000}; length=${3:-10000000}
shift $(( $# < 3 ? $# : 3 ))
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(100 500)
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/sppause.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/PauseBench.exe" "$here/PauseBench.cs"
cc -std=c11 -O2 -o "$work/ideal-increments" "$here/ideal-increments.c"
sp=$build/bin/spmono
for target in "${targets[@]}"; do
	period=$(( target <= 100 ? 1000 : target * 5 ))
	rm -rf "$work/store"
	"$sp" --sp-store="$work/store" --sp-keep=1 --sp-mode=incremental --sp-pause="$target" --sp-period="$period" \
		--sp-priority=50 "$work/PauseBench.exe" run "$nodes" "$length" "$increments" > "$work/run.txt" 2> "$work/err.txt" \
		|| { cat "$work/err.txt" >&2; exit 1; }
	steps=$(awk -F, '$1 == "steps" { print $2 }' "$work/run.txt")
	"$sp" --sp-store="$work/store" "$work/PauseBench.exe" check "$nodes" "$length" "$steps" \
		|| { echo "pause target $target: the final snapshot does not check" >&2; exit 1; }
	policy="SCHED_FIFO"; grep -q "SCHED_FIFO" "$work/err.txt" && policy="normal policy (SCHED_FIFO refused)"
	awk -F, '$1 == "pause_us" { print $2 "," $3 }' "$work/run.txt" | { echo "pause_us,count"; cat; } > "$out/pause-$target.csv"
	cycles=$(grep -c '^cycle,' "$work/run.txt")
	python3 "$here/summarize-pause.py" "$out/pause-$target.csv" "$target" "$period" "$nodes" "$length" "$policy" "$cycles"
	"$sp" --sp-store=null: --sp-mode=incremental --sp-pause="$target" --sp-period="$period" \
		--sp-priority=50 "$work/PauseBench.exe" run "$nodes" "$length" "$increments" > "$work/run.txt" 2> "$work/err.txt" \
		|| { cat "$work/err.txt" >&2; exit 1; }
	awk -F, '$1 == "pause_us" { print $2 "," $3 }' "$work/run.txt" | { echo "pause_us,count"; cat; } > "$out/pause-$target-null.csv"
	echo -n "  the same with the null store: "
	python3 "$here/summarize-pause.py" "$out/pause-$target-null.csv" "$target" "$period" "$nodes" "$length" "$policy" \
		"$(grep -c '^cycle,' "$work/run.txt")" | sed 's/^target [0-9]* us, period [0-9]* us, [0-9]* nodes + int\[[0-9]*\], SP task [^:]*: //'
	count=$(awk -F, 'NR > 1 { n += $2 } END { print n }' "$out/pause-$target.csv")
	for mb in 0 256; do
		"$work/ideal-increments" "$target" "$period" "$count" "$mb" 2> /dev/null | awk -F, '{ print $2 "," $3 }' \
			| { echo "pause_us,count"; cat; } > "$out/pause-$target-ideal-${mb}mb.csv"
		[ "$mb" = 0 ] && what="computing only" || what="random accesses over $mb MB"
		echo -n "  the machine's floor ($what): "
		python3 "$here/summarize-pause.py" "$out/pause-$target-ideal-${mb}mb.csv" "$target" "$period" 0 0 "$policy" 0 \
			| sed 's/^target [0-9]* us, period [0-9]* us, 0 nodes + int\[0\], SP task [^:]*: //; s/ in 0 cycles//'
	done
done
