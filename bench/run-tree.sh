#!/bin/bash
# run-tree.sh [NODES] [REPS] [PROCESSES]: SP vs BinaryFormatter on a tree of composite nodes,
# beside the peers a user would write (hand-written BinaryWriter/BinaryReader),
# the floors (a traversal, the same nodes made with new), and the Java peers
# (Apache Fory, Kryo: bench/run-java.sh, skipped with a note where Java or
# Maven is missing; BinaryFormatter is left out above 2,000,000 nodes, where
# one of its runs takes minutes).  Writes bench/results/tree.csv (TREE_CSV: another file)
# and prints min/median/max per figure and the ratios.
# The store is on tmpfs (/dev/shm) so "serialize" and "commit" are told apart.
# Restore is measured two ways, each the same for both mechanisms:
#   restore       from bytes in memory, in a warm process, heap collected first;
#                 that process runs with --sp-heap=keep, as a JVM keeps its heap,
#                 so SP, the BinaryReader and `new` all fill memory the process
#                 already has, as Fory and Kryo do (SP_HEAP=return: Mono's default);
#   restore-cold  the first thing a fresh process does, from storage (for SP its
#                 warm restart: open the store, map, validate, construct, fix up).
# Serializing runs in PROCESSES processes (default 1) of REPS repetitions each,
# numbered p * 1000 + rep in the CSV, so that SP and the peers in its process
# still pair by repetition and summarize.py also gives each process's ratio: at
# 25,000 nodes one process's SP/traversal ratio ranged 2.1-3.2x from process
# to process on one host, minutes apart (session 54), so one process alone
# says little about the median.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
n=${1:-25000}; reps=${2:-5}; processes=${3:-1}
[ "$reps" -lt 1000 ] || { echo "run-tree.sh: at most 999 repetitions a process" >&2; exit 2; }
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spbench.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/TreeBench.exe" "$here/TreeBench.cs"
csv=${TREE_CSV:-$out/tree.csv}
echo "mechanism,operation,nodes,rep,ns,bytes" > "$csv"
for p in $(seq "$processes"); do
	rm -rf "$work/store"    # each process starts cold: a warm one would restore the last tree beside its own
	"$build/bin/spmono" --sp-store="$work/store" --sp-keep=1 "$work/TreeBench.exe" save "$n" "$reps" "$work/tree.bf" \
		| awk -F, -v p="$p" 'BEGIN{OFS=","} {$4 = p * 1000 + $4; print}' >> "$csv"
done
for r in $(seq "$reps"); do
	rows=$("$build/bin/spmono" --sp-store="$work/store" --sp-heap="${SP_HEAP:-keep}" "$work/TreeBench.exe" load "$n" "$reps")
	echo "$rows" | awk -F, -v r="$r" 'BEGIN{OFS=","} $2=="restore-cold" {$4=r; print}' >> "$csv"
	[ "$r" -gt 1 ] || echo "$rows" | grep -v ',restore-cold,' >> "$csv"
	[ ! -f "$work/tree.bf" ] || "$build/bin/spmono" "$work/TreeBench.exe" bf-cold "$n" "$work/tree.bf" | awk -F, -v r="$r" 'BEGIN{OFS=","} {$4=r; print}' >> "$csv"
done
# The peers' skip note is printed under the summary too, so that it lands in the suite's report.
java_note=$(bash "$here/run-java.sh" "$n" "$reps" 2>&1 >> "$csv") || { echo "$java_note" >&2; exit 1; }
python3 "$here/summarize.py" "$csv"
echo "warm restores (restore) ran in a process with --sp-heap=${SP_HEAP:-keep}; restore-cold in fresh processes"
[ -z "$java_note" ] || echo "$java_note"
