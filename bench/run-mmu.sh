#!/bin/bash
# run-mmu.sh [--smoke] [ROUNDS] [SIZES...]: what the application loses while its
# state is persisted, by its own clock (bench/MmuBench.cs): an application
# thread spinning on the clock records every gap, in ROUNDS rounds (default 5)
# of a segment with no persistence (the machine's floor, in the same process
# and run, as long as the segment after it) and a segment of whole cycles
# back to back (the commit included, 300 ms at least).  Reports the longest
# gap, p99.9, the time lost and the minimum mutator utilization at windows of one period, ten
# periods and 100 ms, beside the floor, and whether the targets are met
# (issue 16): one CPU, the application on the CPU of the SP and writer tasks
# under SCHED_FIFO (--sp-priority): max gap <= pause + the floor's max gap,
# MMU(period) >= 1 - pause/period - 0.05; two CPUs, the application on the
# other CPU: max gap within the floor's.  Each gap is also split by the
# kernel's account (did it take the probe off its CPU: another thread ran; or
# not: interrupts, the hypervisor), and the targets are printed again counting
# only the gaps with the probe off its CPU, and, where perf can trace the
# scheduler (SCHED=0 leaves it out), a last time on the runtime's time alone:
# who had the probe's CPU in each gap (summarize-mmu.py says how it is split).
#
# SIZES: OBJECTS or OBJECTS+ARRAY (small objects, and an int[ARRAY]); default
# 25000 100000 100000+10000000 1000000.  Stores: tmpfs, the disk bench/results
# is on, and the null store; placements: 1cpu, 2cpu (STORES and PLACEMENTS
# narrow them, e.g. STORES=tmpfs for 10,000,000 objects).  The driver (updates,
# SendPData, WaitPersisted) runs on the CPU the probe is not on; DRIVER_CPU
# places it elsewhere (0: with the SP tasks).  SP_PAUSE, SP_PERIOD
# (default 500 / 3000 us) and SP_OPTS (more spmono options) apply to every run.
# Each run's snapshot is restored and checked (not the null store's).  Writes
# bench/results/mmu.csv, mmu-<size>-<store>-<placement>.png, and with
# SPMONO_TRACE, what persistence and the collector ran during the longest gaps.
# Prints the machine's first-touch floor first (bench/touch-floor.c).
# --smoke: small sizes, 2 rounds, 1 s of floor (what CI runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
smoke=0
[ "${1:-}" = "--smoke" ] && { smoke=1; shift; }
if [ $smoke = 1 ]; then
	cycles=${1:-2}; idle=1; sizes=(2000 2000+100000)
else
	cycles=${1:-5}; idle=3; shift $(( $# > 0 ? 1 : 0 ))
	sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(25000 100000 100000+10000000 1000000)
fi
pause=${SP_PAUSE:-500}; period=${SP_PERIOD:-3000}
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spmmu.XXXXXX); disk=$(mktemp -d "$out/.mmu-disk.XXXXXX")
trap 'rm -rf "$work" "$disk"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/MmuBench.exe" "$here/MmuBench.cs" "$here/Affinity.cs"
sp=$build/bin/spmono
python=/usr/bin/python3; [ -x "$python" ] || python=python3   # Debian's, with python3-matplotlib for the plots
csv=$out/mmu.csv; rm -f "$csv"
# The scheduler's account (SCHED=0 leaves it out): perf records every task switch on the probe's
# CPU, on the kernel's monotonic clock, and the summary says whose time each gap was (the process's
# other threads, or the CPU idle while the probe waited: the runtime's; the probe stalled on its
# CPU; other tasks).  Needs perf (Debian's linux-perf) and the right to trace the scheduler.
sched=0
if [ "${SCHED:-1}" != 0 ] && command -v perf > /dev/null && perf record -q -e sched:sched_switch -o "$work/probe.data" -- true > /dev/null 2>&1; then
	sched=1
else
	echo "(no perf, or no right to trace the scheduler: the scheduler's account is left out)"
fi
echo "MMU benchmark: --sp-pause=$pause --sp-period=$period --sp-priority=50, $cycles rounds of floor and cycles a run, the floor ${idle} s at least; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The machine's first-touch floor (bench/touch-floor.c): a first cycle over a new state touches
# pages for the first time, and on some VMs a first touch waits for the host (hundreds of us).
cc -std=c11 -O2 -Wall -Wextra -o "$work/touch-floor" "$here/touch-floor.c"
echo "First-touch floor, 64 MB of fresh pages on CPU 0, nothing of spmono: $(taskset -c 0 "$work/touch-floor" 64 $([ $smoke = 1 ] && echo 1 || echo 4) 50)"
for size in "${sizes[@]}"; do
	objects=${size%%+*}; array=0; [ "$size" != "$objects" ] && array=${size#*+}
	for store in ${STORES:-tmpfs disk null}; do
		for placement in ${PLACEMENTS:-1cpu 2cpu}; do
			case $store in
			tmpfs) loc=$work/store ;;
			disk) loc=$disk/store ;;
			null) loc=null: ;;
			esac
			rm -rf "$work/store" "$disk/store"
			# The probe ("the application") on CPU 0 with the tasks, or on CPU 1 without them; the driver
			# (updates, SendPData, WaitPersisted: the program's own work) on the CPU the probe is not on.
			# DRIVER_CPU overrides (DRIVER_CPU=0: with the SP tasks, on the probe's CPU in 1cpu).
			app=0; driver=1; [ $placement = 2cpu ] && { app=1; driver=0; }
			driver=${DRIVER_CPU:-$driver}
			label="$size objects, $store, $placement"
			# perf itself on the driver's CPU, the program free to run anywhere until it pins its threads.
			recorder=()
			[ $sched = 1 ] && recorder=(taskset -c "$driver" perf record -q -k mono -e sched:sched_switch -C "$app" -o "$work/sched.data"
				-- taskset -c "0-$(( $(nproc) - 1 ))")
			rm -f "$work/sched.txt"
			"${recorder[@]}" env MMU_APP_CPU=$app MMU_SP_CPU=0 MMU_DRIVER_CPU=$driver SPMONO_TRACE="$work/trace.csv" "$sp" --sp-mode=incremental --sp-barrier=marking \
				--sp-pause="$pause" --sp-period="$period" --sp-priority=50 --sp-store="$loc" ${SP_OPTS:-} \
				"$work/MmuBench.exe" run "$objects" "$array" "$cycles" "$idle" > "$work/run.txt" 2> "$work/err.txt" \
				|| { cat "$work/err.txt" >&2; echo "$label: the run failed" >&2; exit 1; }
			[ $sched = 1 ] && perf script -i "$work/sched.data" -F pid,tid,time,event,trace --ns > "$work/sched.txt" 2> /dev/null
			if [ $store != null ]; then
				"$sp" --sp-store="$loc" "$work/MmuBench.exe" check "$objects" "$array" "$(sed -n 's/^last,//p' "$work/run.txt")" > /dev/null \
					|| { echo "$label: the persisted state does not check" >&2; exit 1; }
			fi
			"$python" "$here/summarize-mmu.py" "$work/run.txt" "$label" "$pause" "$period" "${placement%cpu}" "$csv" \
				"$work/trace.csv" "$out/mmu-$size-$store-$placement.png" "$work/sched.txt"
		done
	done
done
