#!/bin/bash
# run-recovery.sh [REPS] [SIZES...]: how fast a killed application serves
# again (bench/RecoveryBench.cs, after J-NVM's TPC-B-like test): the
# application (a ring of N accounts; every 1 ms period moves money and
# persists) is started cold, killed with SIGKILL once it serves, restarted,
# and timed from the restart's exec to its first completed period; its
# restore alone is reported too (SP: SPStats.RestoreNs of the warm restart;
# BinaryFormatter: reading and deserializing its file).  Then it is killed
# again and the persisted state checked whole (money conserved).  SP stop-the-
# world with full snapshots (sp) and with deltas (sp-delta: --sp-delta=on, the
# first period after the restart persists a delta on the restored chain), SP
# incremental without and with deltas (sp-incremental, sp-incremental-delta;
# not in the default MECHS; served once the first period is durable), and
# BinaryFormatter (up to BF_MAX objects, 1,000,000 unless set: at
# 10,000,000 its first persist alone had not finished after 11.5 minutes),
# store and file on tmpfs.
# Writes bench/results/recovery.csv and prints min/median/max.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
reps=${1:-3}; shift $(( $# < 1 ? $# : 1 ))
bf_max=${BF_MAX:-1000000}
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000 10000000)
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/sprecovery.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/RecoveryBench.exe" "$here/RecoveryBench.cs"
sp=$build/bin/spmono
csv=$out/recovery.csv
echo "mechanism,n,rep,restore_ns,serve_ns" > "$csv"

mechs=(${MECHS:-sp sp-delta bf})
# The program's mechanism (sp or bf) and spmono's options for MECH.
program_mech () { [ "$1" = bf ] && echo bf || echo sp; }
options () {
	case $1 in
	sp-delta) echo "--sp-delta=on" ;;
	sp-incremental) echo "--sp-mode=incremental --sp-delta=off" ;;
	sp-incremental-delta) echo "--sp-mode=incremental --sp-delta=on" ;;
	*) echo "--sp-delta=off" ;;
	esac
}
# serve MECH N: start the application in the background (stdout on fd 3); sets pid.
serve () {
	rm -f "$work/out.fifo"; mkfifo "$work/out.fifo"
	"$sp" --sp-store="$work/store" --sp-keep=1 $(options "$1") "$work/RecoveryBench.exe" serve "$(program_mech "$1")" "$2" "$work/state.bf" > "$work/out.fifo" &
	pid=$!
	exec 3< "$work/out.fifo"
}
# expect_line WORD: the next line of the application, which must start with WORD; sets line.
expect_line () {
	read -r -u 3 line || { echo "recovery: the application ended before '$1'" >&2; exit 1; }
	case $line in "$1"*) ;; *) echo "recovery: expected '$1', got '$line'" >&2; exit 1 ;; esac
}
stop () { kill -9 "$pid"; wait "$pid" 2>/dev/null || true; exec 3<&-; }

for n in "${sizes[@]}"; do
	for mech in "${mechs[@]}"; do
		[ $mech = bf ] && [ "$n" -gt "$bf_max" ] && continue
		for rep in $(seq "$reps"); do
			rm -rf "$work/store" "$work/state.bf"
			serve $mech "$n"; expect_line "start cold"; expect_line served; stop
			t0=$(date +%s%N)
			serve $mech "$n"; expect_line "start warm"; restore_ns=${line##* }; expect_line served
			t1=$(date +%s%N)
			stop
			"$sp" --sp-store="$work/store" $(options $mech) "$work/RecoveryBench.exe" check "$(program_mech $mech)" "$n" "$work/state.bf" \
				|| { echo "recovery: $mech, $n objects: the state after the kill is not whole" >&2; exit 1; }
			echo "$mech,$n,$rep,$restore_ns,$(( t1 - t0 ))" >> "$csv"
		done
	done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[(int(r["n"]), r["mechanism"])].append((int(r["restore_ns"]) / 1e6, int(r["serve_ns"]) / 1e6))
def spread(v):
    return f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
print("Recovery after SIGKILL, ms (min / median / max)")
print("| objects | mechanism | restore | restart to first served period |")
print("|---:|---|---:|---:|")
for (n, mech), rs in sorted(runs.items()):
    name = {'sp': 'SP', 'sp-delta': 'SP, deltas', 'sp-incremental': 'SP incremental',
            'sp-incremental-delta': 'SP incremental, deltas', 'bf': 'BinaryFormatter'}.get(mech, mech)
    print(f"| {n} | {name} | {spread([r[0] for r in rs])} | {spread([r[1] for r in rs])} |")
PY
