#!/bin/bash
# run-delta.sh [PERIODS] [SIZES...]: a period's persistence cost against the
# state's size and the share of it changed a period, full snapshots against
# deltas (bench/DeltaBench.cs), store on tmpfs, one run side by side, in each
# of MODES (environment, default "stw incremental"; incremental with the
# default --sp-pause and --sp-period, --sp-busy=wait).  SHARES (environment, parts per million, default "1000 10000 100000
# 1000000": 0.1%, 1%, 10%, 100%) are the shares changed a period; sizes of
# 10,000,000 objects and more also run 100 ppm (1,000 objects of 10,000,000), and at most 10
# periods (a cycle of them takes seconds in incremental mode).  The first snapshot of each run (the base)
# is not counted; a delta chain's periodic new base is (it is part of what a
# period costs on average).  Writes bench/results/delta.csv and prints, per
# size and share, the median and max of SendPData as the program timed it
# and of the serialization alone, and the median bytes, full against delta.
# Each run is then restarted and its restored state checked against the
# last period's (DeltaBench.exe check) before its figures count.
# PROBE=1 (environment): the program's threads and the runtime's tasks on CPU
# 0, and a probe thread on CPU 1 reading the clock in a loop; it prints the
# longest gap the probe saw while each period persisted (a snapshot's instant
# stops every thread of the program) beside the longest it saw in a window as
# long right after it, nothing persisted (the floor, in the same run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
periods=${1:-50}; shift $(( $# < 1 ? $# : 1 ))
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000 10000000)
shares=(${SHARES:-1000 10000 100000 1000000})
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spdelta.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/DeltaBench.exe" "$here/DeltaBench.cs" "$here/Affinity.cs"
pin=(); probe=()
if [ -n "${PROBE:-}" ]; then
	[ "$(nproc)" -ge 2 ] || { echo "run-delta: PROBE needs two CPUs" >&2; exit 1; }
	pin=(taskset -c 0); probe=(env DELTA_PROBE_CPU=1)
fi
cp "$build/lib/SPersistence.dll" "$work/"
csv=$out/delta.csv
modes=(${MODES:-stw incremental})
echo "spmode,mode,n,ppm,period,send_ns,serialize_ns,bytes,objects,store_ns,probe_persist_ns,probe_floor_ns" > "$csv"
for spmode in "${modes[@]}"; do
for n in "${sizes[@]}"; do
	these=("${shares[@]}"); [ "$n" -ge 10000000 ] && these=(100 "${shares[@]}")
	# An incremental cycle of 10,000,000 objects takes about 5 s: at most 10 periods there.
	runs=$periods; [ "$n" -ge 10000000 ] && [ "$runs" -gt 10 ] && runs=10
	for pm in "${these[@]}"; do
		for mode in full delta; do
			rm -rf "$work/store"
			flag=off; [ $mode = delta ] && flag=on
			"${probe[@]}" "${pin[@]}" "$build/bin/spmono" --sp-store="$work/store" --sp-mode=$spmode --sp-busy=wait --sp-delta=$flag \
				"$work/DeltaBench.exe" "$n" "$pm" "$runs" | sed "s/^/$spmode,$mode,/" >> "$csv"
			# The figures count only if a restart finds the last period's state.
			"$build/bin/spmono" --sp-store="$work/store" --sp-delta=$flag "$work/DeltaBench.exe" check "$n" "$pm" "$runs" \
				|| { echo "run-delta: $spmode, $mode, $n objects, $pm ppm: the restored state is not the last period's" >&2; exit 1; }
		done
	done
done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r['spmode'], int(r['n']), int(r['ppm']), r['mode'])].append(r)
for spmode in sorted({k[0] for k in rows}, key=lambda m: m != 'stw'):
  print(f"--sp-mode={spmode}" + ("" if spmode == 'stw' else ": send = SendPData until durable; work = the cycle's increments"))
  print(f"{'objects':>10} {'changed':>8} | {'full: send med/max ms':>22} {'work med':>9} {'bytes':>11} | {'delta: send med/max ms':>23} {'work med':>9} {'bytes':>10} | {'speed-up':>8} {'work':>7} | {'stores: full':>8} {'delta':>8}")
  for n, pm in sorted({(k[1], k[2]) for k in rows if k[0] == spmode}):
    def fig(mode):
        rs = rows[(spmode, n, pm, mode)]
        send = [int(r['send_ns']) / 1e6 for r in rs]
        ser = [int(r['serialize_ns']) / 1e6 for r in rs]
        b = [int(r['bytes']) for r in rs]
        st = [int(r['store_ns']) / 1e6 for r in rs]
        return statistics.median(send), max(send), statistics.median(ser), statistics.median(b), statistics.mean(send), statistics.median(st)
    f, d = fig('full'), fig('delta')
    print(f"{n:>10} {pm / 10000:>7}% | {f[0]:>10.3f} / {f[1]:>9.3f} {f[2]:>9.3f} {f[3]:>11} | {d[0]:>10.3f} / {d[1]:>10.3f} {d[2]:>9.3f} {d[3]:>10} | {f[4] / d[4]:>7.1f}x {f[2] / d[2]:>6.1f}x | {f[5]:>8.3f} {d[5]:>8.3f}")
print("speed-up: mean send time with full snapshots over that with deltas (new bases included); work: of the medians")
print("last columns: the period's stores themselves, median ms, without barriers (full) and with deltas' barrier")
probed = [r for rs in rows.values() for r in rs if int(r['probe_floor_ns']) or int(r['probe_persist_ns'])]
if probed:
  print()
  print("The probe on CPU 1 (PROBE=1): its longest gap, us, while a period persisted, beside its longest in a window")
  print("as long right after, nothing persisted (the floor); median / max of the periods")
  for spmode in sorted({k[0] for k in rows}, key=lambda m: m != 'stw'):
    print(f"--sp-mode={spmode}")
    print(f"{'objects':>10} {'changed':>8} | {'full: persisting':>17} {'floor':>15} | {'delta: persisting':>18} {'floor':>15}")
    for n, pm in sorted({(k[1], k[2]) for k in rows if k[0] == spmode}):
      def gaps(mode):
        rs = rows[(spmode, n, pm, mode)]
        g = [int(r['probe_persist_ns']) / 1e3 for r in rs]
        fl = [int(r['probe_floor_ns']) / 1e3 for r in rs]
        return statistics.median(g), max(g), statistics.median(fl), max(fl)
      f, d = gaps('full'), gaps('delta')
      print(f"{n:>10} {pm / 10000:>7}% | {f[0]:>8.0f} / {f[1]:>6.0f} {f[2]:>7.0f} / {f[3]:>5.0f} | {d[0]:>9.0f} / {d[1]:>6.0f} {d[2]:>7.0f} / {d[3]:>5.0f}")
PY
