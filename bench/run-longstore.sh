#!/bin/bash
# run-longstore.sh [ELEMENTS NODES REPS]: does a store into a long array make
# other threads wait (bench/LongStoreBench.cs)?  Thread A's store into an
# int[ELEMENTS] copies the part of it the cycle has not written yet; thread B
# stores into NODES small objects meanwhile and records its longest store.
# Prints min/median/max of B's longest store with no cycle (the floor), in a
# cycle, and in a cycle while A's copy runs, and A's store (the copy: its own
# cost).  A and the SP tasks run on CPU 0, B on CPU 1: B's longest store is
# what it waits for.  Target (issue 16, item 1): B's longest store while A
# copies within twice B's longest in a cycle without the copy (the SP task's
# units), and far under the copy: nobody waits for it.  Default 10,000,000 elements, 100,000 nodes, 9 reps.
# Writes bench/results/longstore.csv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
elements=${1:-10000000}; nodes=${2:-100000}; reps=${3:-9}
if [ "$(nproc)" -lt 2 ]; then
	echo "long-array stores: skipped: the benchmark keeps the storing threads on two CPUs, this machine has $(nproc)"
	exit 0
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/LongStoreBench.exe" "$here/LongStoreBench.cs" "$here/Affinity.cs"
out=$here/results; mkdir -p "$out"
csv=$out/longstore.csv
"$build/bin/spmono" --sp-store=null: --sp-mode=incremental --sp-barrier=marking --sp-pause=500 --sp-period=3000 --sp-priority=50 \
	"$work/LongStoreBench.exe" "$elements" "$nodes" "$reps" > "$csv"
echo "long-array stores: int[$elements], $nodes small objects, $reps repetitions, --sp-pause=500 --sp-period=3000 --sp-priority=50, $(nproc) CPUs"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def mmm(vals):
    return "%.1f / %.1f / %.1f" % (min(vals), statistics.median(vals), max(vals))
for case in ("floor", "cycle", "long-store"):
    r = [x for x in rows if x["case"] == case]
    print("  %-10s B's longest store (us, min/median/max): %-26s A's store (ms): %s" % (
        case, mmm([float(x["b_longest_us"]) for x in r]), mmm([float(x["a_store_ms"]) for x in r])))
cyc = statistics.median(float(x["b_longest_us"]) for x in rows if x["case"] == "cycle")
lng = statistics.median(float(x["b_longest_us"]) for x in rows if x["case"] == "long-store")
copy = statistics.median(float(x["a_store_ms"]) for x in rows if x["case"] == "long-store") * 1000
print("  target, B's median longest store while A copies (%.0f us) within 2x its median in a cycle without the copy (%.0f us), "
      "and well under A's copy (%.0f us): %s" % (lng, cyc, copy, "met" if lng <= 2 * cyc and lng < copy / 4 else "NOT met"))
PY
