#!/bin/bash
# run-suite.sh [--smoke]: the benchmark suite in one command.  Writes
# bench/results/: CSV files, PNG plots and report.md, which states the
# machine, the runtime versions, the repetitions and min/median/max of every
# figure.  --smoke: small sizes and few repetitions (a few minutes, what CI
# runs); without it, the full run (about two hours: 100-113 minutes on the
# Intel Xeon of sessions 54-55; parts.txt says where the time went).
#
#   serializers.csv   Figures 3-6 extended (bench/SerBench.cs): serialize and
#                     restore time and bytes against size, red-black tree of
#                     composite objects and int[], SP (stop-the-world, to the
#                     null store, tmpfs and disk; incremental in each barrier
#                     mode) against BinaryFormatter, DataContractSerializer and
#                     Newtonsoft.Json; and the machine's floor for an
#                     incremental cycle (the tree walked whole and in
#                     increments as long and as far apart as the SP task's)
#   tree-*.csv        issue 20's anchors (bench/run-tree.sh): SP beside a
#                     hand-written BinaryWriter/BinaryReader, a traversal and
#                     `new` (the floors), and the Java peers Apache Fory and
#                     Kryo (skipped with a note where Java or Maven is missing)
#   table1.csv        the paper's Table 1 (bench/run-table1.sh)
#   table2.csv        the paper's Table 2 (bench/run-table2.sh)
#   control.csv       a 1 kHz control loop persisting every period: deadline
#                     misses, latency percentiles (bench/run-control.sh)
#   recovery.csv      restore time and time to serve again after SIGKILL
#                     against object count (bench/run-recovery.sh)
#   delta.csv         a period's persistence cost against state size and
#                     share changed, full snapshots and deltas (bench/run-delta.sh)
#   fold.csv          folding a delta chain into a new base, off the program's
#                     path: fold times, the program's own full snapshots, the
#                     loop's misses and peak RSS against state size (bench/run-fold.sh)
#   pause-*.csv       increment pause histograms, targets 50, 100, 500 us
#                     (bench/run-pause.sh)
#   barrier.csv       the barrier's cost with no cycle (bench/run-barrier.sh)
#   mmu.csv           what the application loses by its own clock: gaps and
#                     minimum mutator utilization beside the machine's floor,
#                     one CPU and two (bench/run-mmu.sh)
#   longstore.csv     another thread's longest store while one thread's store
#                     copies a long array (bench/run-longstore.sh)
#   evolve.csv        a restart across a class change: restore, snapshots
#                     carrying unknown data, per node against no change
#                     (bench/run-evolve.sh)
#   replicated.csv    the replicated store (NATS JetStream, 3 nodes on loopback)
#                     against the file store: commit latency and throughput,
#                     a standby's time to serve (bench/run-replicated.sh)
#
# Every workload checks its own result before its figures count; a failed
# check stops the suite.  Table 1, the control loop and the pauses also run
# with the null store (nothing written, so nothing to check: their tmpfs
# twins are), which separates the serializer's cost from the storage's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1
out=$here/results; mkdir -p "$out"
sp=$build/bin/spmono
python=/usr/bin/python3; [ -x "$python" ] || python=python3
# The serializers' SP runs, against which an incremental cycle's work is judged
# (stop-the-world to the null store, the incremental cycles, the machine's floor
# for them), hold the CPUs' wake-up latency at CPU_LATENCY microseconds (default
# 0; empty: not held), as a real-time deployment does (--sp-cpu-latency,
# docs/INCREMENTAL.md): otherwise a vCPU halts while the SP task sleeps between
# increments and runs the next one slower.  Without write access to
# /dev/cpu_dma_latency spmono warns and runs without it; machine.txt says which.
cpu_latency=${CPU_LATENCY-0}
latency_opt=(); [ -z "$cpu_latency" ] || latency_opt=(--sp-cpu-latency="$cpu_latency")

if [ $smoke = 1 ]; then
	tree_sizes="5000 25000"; int_sizes="5000 25000 1000000"; reps=2; inc_rounds=1
	peer_runs=("2000 3 2")
	table1_runs=2; pause_args=(300 20000 1000000 50 100 500); barrier_args=(2000000 1)
	control_args=(200 1 1000 10000 10000/1000); recovery_args=(1 10000 100000)
	longstore_args=(1000000 10000 3); delta_args=(5 10000 100000); fold_args=(1500 10000 100000)
	evolve_runs=("25000 2 2"); replicated_args=(1 10000)
else
	tree_sizes="5000 10000 15000 20000 25000 100000 1000000"
	int_sizes="5000 10000 15000 20000 25000 100000 1000000 10000000"; reps=5; inc_rounds=3
	peer_runs=("25000 9 5" "1000000 3" "10000000 3")
	table1_runs=40; pause_args=(10000 100000 10000000 50 100 500); barrier_args=(100000000 5)
	control_args=(5000 3 1000 10000 100000 100000/1000); recovery_args=(3 10000 100000 1000000 10000000)
	longstore_args=(10000000 100000 9); delta_args=(30 10000 100000 1000000 10000000)
	fold_args=(3000 10000 100000 1000000 10000000)
	evolve_runs=("25000 7 5" "1000000 5 3"); replicated_args=(5 25000 100000 1000000)
fi

# Storage for SP: none (null:), tmpfs, and the disk the results are written on.
tmpfs=$(mktemp -d /dev/shm/spsuite.XXXXXX)
disk=$(mktemp -d "$out/.disk.XXXXXX")
trap 'rm -rf "$tmpfs" "$disk"' EXIT

newtonsoft=$(pkg-config --libs newtonsoft-json | sed 's/^-r://; s/ *$//')
cp "$build/lib/SPersistence.dll" "$newtonsoft" "$tmpfs/"
mcs -nologo -optimize+ -warnaserror -r:"$tmpfs/SPersistence.dll" -r:"$tmpfs/Newtonsoft.Json.dll" \
	-r:System.Runtime.Serialization.dll -out:"$tmpfs/SerBench.exe" "$here/SerBench.cs"
bench=$tmpfs/SerBench.exe

# Every part's wall time, to stderr as it ends and into parts.txt (the report's last section):
# what to shorten, and what a run on another machine should expect.
parts=$out/parts.txt; : > "$parts"
part () {   # part NAME COMMAND...: run COMMAND, note how long it took
	local name=$1 t0=$SECONDS; shift
	"$@"
	printf '%-28s %4d min %02d s\n' "$name" $(( (SECONDS - t0) / 60 )) $(( (SECONDS - t0) % 60 )) | tee -a "$parts" >&2
}

# ---- Figures 3-6: serializers --------------------------------------------------
csv=$out/serializers.csv
echo "structure,size,mechanism,operation,storage,rep,ns,bytes" > "$csv"
mean_increment_us () {   # mean_increment_us STRUCTURE SIZE STORAGE: the default barrier's mean increment in csv, us
	awk -F, -v s="$1" -v n="$2" -v st="$3" '$1 == s && $2 == n && $3 == "SP incremental (marking)" && $4 == "increment" \
		&& $5 == st { sum += $7; c++ } END { printf "%d", c ? sum / c / 1000 : 500 }' "$csv"
}
serializers () {   # serializers STRUCTURE SIZE
	local s=$1 n=$2
	echo "serializers: $s $n" >&2
	# The others need seconds to minutes an operation from a million objects on (BinaryFormatter's
	# restore of 1,000,000 nodes about 130 s on the Intel host): one repetition there, after the warm-up.
	local others_reps=$(( n >= 1000000 ? 1 : reps ))
	"$sp" --sp-store=null: "$bench" others "$s" "$n" "$others_reps" >> "$csv"
	"$sp" --sp-store=null: "${latency_opt[@]}" "$bench" sp "$s" "$n" "$reps" null >> "$csv"
	for storage in tmpfs disk; do
		local dir=$tmpfs; [ $storage = disk ] && dir=$disk
		rm -rf "$dir/store"
		"$sp" --sp-store="$dir/store" --sp-keep=1 "$bench" sp "$s" "$n" "$reps" $storage >> "$csv"
		# A warm restart is once per process: one process per repetition.
		for r in $(seq "$reps"); do
			"$sp" --sp-store="$dir/store" "$bench" sp-load "$s" "$n" $(( r == 1 ? reps : 0 )) $storage \
				| awk -F, -v r="$r" 'BEGIN { OFS = "," } $4 == "restore-cold" { $6 = r } { print }' >> "$csv"
		done
	done
	local period_us=3000
	cycles () {   # cycles BARRIER PERIOD_US LABEL: incremental cycles of 500 us increments, null store
		"$sp" --sp-store=null: "${latency_opt[@]}" --sp-mode=incremental --sp-barrier="$1" --sp-pause=500 \
			--sp-period="$2" "$bench" sp-cycle "$s" "$n" "$reps" "$3" >> "$csv"
	}
	for barrier in annotating marking-v2 marking; do cycles $barrier $period_us "SP incremental ($barrier)"; done
	# The default barrier again with 100 us between increments: the runtime's own extra work, without
	# what 2.5 ms of idleness does to the next increment on this machine (docs/INCREMENTAL.md).
	cycles marking 600 "SP incremental (marking at a 600 us period)"
	[ "$s" = rbtree ] || return 0
	# The machine's share of an incremental cycle's extra work: the same tree walked whole and
	# in increments as long as the default barrier's were (their mean), as far apart.
	floor_and_huge_arms
	# Large trees: stop-the-world, the default barrier's cycle and the floor again, in turn, for
	# inc_rounds rounds in all: each arm is a process of its own, and this VM's speed differs from
	# process to process (session 54: one process's ratio of SP to a peer 2.1-3.2x at 25,000 nodes),
	# so one process of each arm says little about the ratio of their medians.
	local round
	for (( round = 2; round <= (n >= 100000 ? inc_rounds : 1); round++ )); do
		"$sp" --sp-store=null: "${latency_opt[@]}" "$bench" sp "$s" "$n" "$reps" null >> "$csv"
		cycles marking $period_us "SP incremental (marking)"
		floor_and_huge_arms
	done
}
# The machine's floor beside the default barrier's cycle, then huge_arms.  Uses serializers' s, n and period_us.
floor_and_huge_arms () {
	"$sp" "${latency_opt[@]}" "$bench" floor-cycle "$s" "$n" "$reps" "$(mean_increment_us "$s" "$n" null)" "$period_us" >> "$csv"
	huge_arms
}
# Large trees (from 100,000 nodes) with the old generation in huge pages (--sp-heap=huge):
# stop-the-world, the default barrier's cycle and the machine's floor alike: an incremental
# cycle's walk misses the TLB far less there (mono/metadata/sp-heap.c); storage "null-huge"
# tells these rows apart.  Uses serializers' s, n and period_us.
huge_arms () {
	[ "$n" -ge 100000 ] || return 0
	local huge=(--sp-heap=huge "${latency_opt[@]}") as_huge=(awk -F, 'BEGIN { OFS = "," } { $5 = "null-huge"; print }')
	"$sp" --sp-store=null: "${huge[@]}" "$bench" sp "$s" "$n" "$reps" null | "${as_huge[@]}" >> "$csv"
	"$sp" --sp-store=null: "${huge[@]}" --sp-mode=incremental --sp-barrier=marking --sp-pause=500 \
		--sp-period="$period_us" "$bench" sp-cycle "$s" "$n" "$reps" "SP incremental (marking)" | "${as_huge[@]}" >> "$csv"
	"$sp" "${huge[@]}" "$bench" floor-cycle "$s" "$n" "$reps" "$(mean_increment_us "$s" "$n" null-huge)" "$period_us" \
		| "${as_huge[@]}" >> "$csv"
}
for n in $tree_sizes; do part "serializers rbtree $n" serializers rbtree "$n"; done
for n in $int_sizes; do part "serializers ints $n" serializers ints "$n"; done

# ---- SP beside the peers and the floors (issue 20) --------------------------------
: > "$out/tree.txt"
for run in "${peer_runs[@]}"; do
	set -- $run
	TREE_CSV="$out/tree-$1.csv" part "tree $1" bash "$here/run-tree.sh" "$@" >> "$out/tree.txt"
done

# ---- Tables 1 and 2, pauses, barrier cost (their own scripts and checks) -----
part table1 bash "$here/run-table1.sh" "$table1_runs" > "$out/table1.txt"
part table2 bash "$here/run-table2.sh" "$table1_runs" > "$out/table2.txt"
part control bash "$here/run-control.sh" "${control_args[@]}" > "$out/control.txt"
part recovery bash "$here/run-recovery.sh" "${recovery_args[@]}" > "$out/recovery.txt"
part delta bash "$here/run-delta.sh" "${delta_args[@]}" > "$out/delta.txt"
part fold bash "$here/run-fold.sh" "${fold_args[@]}" > "$out/fold.txt"
part pause bash "$here/run-pause.sh" "${pause_args[@]}" > "$out/pause.txt"
part barrier bash "$here/run-barrier.sh" "${barrier_args[@]}" > "$out/barrier.txt"
if [ $smoke = 1 ]; then part mmu bash "$here/run-mmu.sh" --smoke > "$out/mmu.txt"; else part mmu bash "$here/run-mmu.sh" > "$out/mmu.txt"; fi
part longstore bash "$here/run-longstore.sh" "${longstore_args[@]}" > "$out/longstore.txt"
: > "$out/evolve.txt"; : > "$out/evolve.csv.all"
for run in "${evolve_runs[@]}"; do
	EVOLVE_CSV="$out/evolve-part.csv" part "evolve ${run%% *}" bash "$here/run-evolve.sh" $run >> "$out/evolve.txt"
	tail -n +$([ -s "$out/evolve.csv.all" ] && echo 2 || echo 1) "$out/evolve-part.csv" >> "$out/evolve.csv.all"
done
mv "$out/evolve.csv.all" "$out/evolve.csv"; rm -f "$out/evolve-part.csv"
part replicated bash "$here/run-replicated.sh" "${replicated_args[@]}" > "$out/replicated.txt"

# ---- the machine, the runtimes --------------------------------------------------
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "run: $([ $smoke = 1 ] && echo smoke || echo full), $reps repetitions per figure, 1 for BinaryFormatter, DataContractSerializer and Newtonsoft.Json from 1,000,000 objects (a rep 0 before, the JIT's warm-up, not counted)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
	echo "mono (stock): $(mono --version | head -1)"
	echo "spmono: $("$sp" --version | head -1) (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown))"
	echo "mcs: $(mcs --version)"
	echo "Newtonsoft.Json: $(dpkg-query -W -f '${Version}' libnewtonsoft-json-cil-dev 2>/dev/null || echo unknown)"
	if [ -z "$cpu_latency" ]; then
		echo "cpu latency: not held (CPU_LATENCY empty)"
	elif [ -w /dev/cpu_dma_latency ]; then
		echo "cpu latency: held at $cpu_latency us (--sp-cpu-latency) in the serializers' SP runs (stop-the-world to the null store, incremental cycles, their floor)"
	else
		echo "cpu latency: asked for ($cpu_latency us) but not held: no write access to /dev/cpu_dma_latency"
	fi
	echo "wall time: $(( SECONDS / 60 )) min (each part's: the report's last section)"
	echo "storage: tmpfs $(df -h /dev/shm | awk 'NR == 2 { print $1 }'), disk $(df -h "$out" | awk 'NR == 2 { print $1 " (" $2 ")" }')"
} > "$out/machine.txt"

"$python" "$here/report.py" "$out"
echo "report: $out/report.md"
