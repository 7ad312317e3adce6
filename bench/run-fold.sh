#!/bin/bash
# run-fold.sh [PERIODS] [SIZES...]: what folding a delta chain costs, as the
# program runs it (docs/FORMAT.md, "Folded snapshots"): the 1 kHz loop of
# bench/ControlBench.cs updating 1,000 of N objects a period with
# --sp-delta=on, the ratio set so that a fold comes about every 550 periods
# at any N (50 * 1,000,000 / N percent), the store on tmpfs, --sp-keep=1,
# the loop under SCHED_FIFO 60 when chrt allows.  Reports, per N, the folds'
# times as the fold task measured them (--sp-verbose), how many full
# snapshots the program wrote itself (its first, and any when folds fell
# behind), the loop's deadline misses, and the process's peak RSS beside a
# run without deltas (full snapshots every period are too slow to compare
# at 1 kHz, so that run persists nothing: the heap's own size).  Each run's
# persisted state is checked (its last period) before its row counts.
# Writes bench/results/fold.csv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
periods=${1:-3000}; shift $(( $# < 1 ? $# : 1 ))
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000 10000000)
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spfold.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/ControlBench.exe" "$here/ControlBench.cs"
sp=$build/bin/spmono
rt=(); chrt -f 60 true 2>/dev/null && rt=(chrt -f 60)
csv=$out/fold.csv
echo "n,ratio,periods,folds,fold_min_ms,fold_median_ms,fold_max_ms,full_snapshots,misses,rss_kb,rss_none_kb" > "$csv"
for n in "${sizes[@]}"; do
	ratio=$(( 50000000 / n )); [ "$ratio" -lt 1 ] && ratio=1; [ "$ratio" -gt 10000 ] && ratio=10000
	rm -rf "$work/store"
	/usr/bin/time -f "%M" -o "$work/rss" "${rt[@]}" "$sp" --sp-store="$work/store" --sp-keep=1 --sp-delta=on \
		--sp-delta-ratio="$ratio" --sp-verbose "$work/ControlBench.exe" run sp "$n/1000" "$periods" "$work/state.bf" \
		> "$work/row" 2> "$work/stderr"
	ran=$(cut -d, -f1 "$work/row")
	"$sp" --sp-store="$work/store" "$work/ControlBench.exe" check sp "$n/1000" "$ran" "$work/state.bf" last > /dev/null \
		|| { echo "run-fold: $n objects: the restored state is not the last period's" >&2; exit 1; }
	/usr/bin/time -f "%M" -o "$work/rss-none" "$sp" "$work/ControlBench.exe" run none "$n/1000" "$periods" "$work/state.bf" > /dev/null
	folds=$(sed -n 's/^spmono: chain folded .* in \([0-9.]*\) ms, off.*/\1/p' "$work/stderr" | sort -n)
	count=$(printf '%s\n' "$folds" | grep -c . || true)
	stats="0,0,0"
	[ "$count" -gt 0 ] && stats=$(printf '%s\n' "$folds" | awk '{ v [NR] = $1 } END { printf "%s,%s,%s", v [1], v [int ((NR + 1) / 2)], v [NR] }')
	full=$(grep -c "^spmono: snapshot " "$work/stderr" || true)
	echo "$n,$ratio,$ran,$count,$stats,$full,$(cut -d, -f2 "$work/row"),$(tail -1 "$work/rss"),$(tail -1 "$work/rss-none")" >> "$csv"
done
echo "Folding a delta chain (1 kHz loop, 1,000 objects updated a period, $periods periods; fold times as the fold task measured them)"
echo "| objects | --sp-delta-ratio | folds | fold min / median / max (ms) | full snapshots by the program | deadline misses | peak RSS (MB), and persisting nothing |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
tail -n +2 "$csv" | awk -F, '{ printf "| %d | %d | %d | %s / %s / %s | %d | %d | %.0f, %.0f |\n", $1, $2, $4, $5, $6, $7, $8, $9, $10 / 1024, $11 / 1024 }'
