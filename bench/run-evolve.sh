#!/bin/bash
# run-evolve.sh [NODES] [PROCS] [REPS]: what a class change costs (issue 18).
# One tree of NODES nodes, persisted once by the version that writes it, is
# restored PROCS times by each of three versions, in turn (side by side, so
# the machine's noise falls on all three alike), each from its own copy of the
# store:
#   same      the version that wrote it (no change: the baseline);
#   changed   its node class changed: a field widened, one removed (carried as
#             unknown data), one added with a Default;
#   drop      the same change, the class saying DropUnknown.
# Each restore is then followed by REPS snapshots of the restored tree
# ("serialize": changed carries the removed field into them) and decodes of
# them from memory ("decode-own": changed's own snapshots describe the node
# class with the carried field, so they restore as changed too).
# Writes bench/results/evolve.csv (EVOLVE_CSV: another file), prints
# min/median/max per figure and each version's cost against same's, per node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
n=${1:-25000}; procs=${2:-5}; reps=${3:-5}
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spevolve.XXXXXX); trap 'rm -rf "$work"' EXIT
compile () { mcs -nologo -optimize+ -warnaserror ${2:+-define:$2} -r:"$build/lib/SPersistence.dll" -out:"$work/$1/EvolveBench.exe" "$here/EvolveBench.cs"; }
mkdir -p "$work/same" "$work/changed" "$work/drop"
compile same; compile changed CHANGED; compile drop DROP
csv=${EVOLVE_CSV:-$out/evolve.csv}
echo "version,operation,nodes,rep,ns" > "$csv"
"$build/bin/spmono" --sp-store="$work/store" --sp-keep=1 "$work/same/EvolveBench.exe" save "$n"
for p in $(seq "$procs"); do
	for v in same changed drop; do
		rm -rf "$work/copy"; cp -r "$work/store" "$work/copy"
		"$build/bin/spmono" --sp-store="$work/copy" --sp-keep=1 "$work/$v/EvolveBench.exe" load "$n" "$reps" 2>/dev/null |
			awk -F, -v p="$p" 'BEGIN{OFS=","} $2=="restore-cold" {$4=p} {print}' >> "$csv"
	done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r["operation"], r["version"], int(r["nodes"]))].append(int(r["ns"]) / 1e6)
print(f"{'operation':13} {'version':8} {'nodes':>8} {'n':>3} {'min ms':>9} {'median':>9} {'max':>9} {'vs same, ns/node (medians)':>28}")
for key in sorted(rows):
    v = rows[key]
    base = rows.get((key[0], "same", key[2]))
    extra = "" if key[1] == "same" or not base else f"{(statistics.median(v) - statistics.median(base)) * 1e6 / key[2]:+28.1f}"
    print(f"{key[0]:13} {key[1]:8} {key[2]:8} {len(v):3} {min(v):9.3f} {statistics.median(v):9.3f} {max(v):9.3f} {extra}")
PY
