#!/bin/bash
# run-control.sh [PERIODS] [REPS] [SIZES...]: a control loop at 1 kHz updating
# N persistent objects (a size N/K: N objects, K of them updated a period) and
# persisting them every period (bench/ControlBench.cs),
# with SP incremental, SP stop-the-world, SP with deltas (sp-delta:
# stop-the-world, sp-incremental-delta; not in the default MECHS),
# BinaryFormatter in the loop, and no
# persistence (the loop's own cost); pinned to one CPU
# (taskset -c 0, as in the paper) and on two.  The loop runs under
# SCHED_FIFO 60 (chrt), the SP and writer tasks under SCHED_FIFO 50
# (--sp-priority), so the loop preempts them; SP incremental: --sp-pause=200 (SP_PAUSE sets it)
# --sp-period=1000.  Stores and files on tmpfs; SP also with the null store
# (sp-stw-null, sp-incremental-null: nothing written, so the storage's share
# shows; nothing to check either, their tmpfs twins are).  Each run's
# persisted state is checked (the last period's) before its row counts.  Writes
# bench/results/control.csv and prints deadline misses and latency p50/p99/max.
# Where perf can trace the scheduler (Debian's linux-perf; SCHED=0 leaves it
# out), each miss is also put to whose time made it, in the scheduler's account
# of the run (summarize-control.py --account): the runtime's (its tasks, the
# loop blocked in it, the loop's own SendPData), the machine's (the loop's
# timer late on an idle CPU: the hypervisor's wake-up; other processes), or the
# loop's own (its update; a hypervisor's stall inside it looks the same).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
periods=${1:-5000}; reps=${2:-3}; shift $(( $# < 2 ? $# : 2 ))
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000 100000/1000)
out=$here/results; mkdir -p "$out"
work=$(mktemp -d /dev/shm/spcontrol.XXXXXX); trap 'rm -rf "$work"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/ControlBench.exe" "$here/ControlBench.cs"
sp=$build/bin/spmono
rt=(); chrt -f 60 true 2>/dev/null && rt=(chrt -f 60)
csv=$out/control.csv
echo "mechanism,cpus,n,rep,periods,misses,p50_ns,p99_ns,max_ns,mean_ns,unschedulable,predicted_cycle_ns,cycle_ns,skipped,warned,runtime_misses,machine_misses,program_misses,model_cycles,model_within" > "$csv"
sched=0
if [ "${SCHED:-1}" != 0 ] && command -v perf > /dev/null && perf record -q -e sched:sched_switch -o "$work/probe.data" -- true > /dev/null 2>&1; then
	sched=1
else
	echo "(no perf, or no right to trace the scheduler: misses are not put to whose time made them)"
fi
# MECHS and CPUS narrow the run (e.g. MECHS=sp-incremental CPUS=0 for the issue's 10 runs on one CPU).
# SP_OPTS: more spmono options for every run (e.g. --sp-cpu-latency=0).
# CONTROL_STORE=PREFIX: SP's store is PREFIX<run> instead of a directory on tmpfs, a new one each run
# (e.g. nats://127.0.0.1:14222,127.0.0.1:14223,127.0.0.1:14224/ctl, the replicated store).
run_id=0
for cpus in ${CPUS:-0 0,1}; do
	for n in "${sizes[@]}"; do
		for mech in ${MECHS:-none sp-incremental sp-stw sp-incremental-null sp-stw-null bf}; do
			for rep in $(seq "$reps"); do
				run_id=$((run_id + 1)); store=$work/store
				[ -z "${CONTROL_STORE:-}" ] || store=$CONTROL_STORE$run_id
				opts=(--sp-store="$store" --sp-keep=1 ${SP_OPTS:-})
				case $mech in
				sp-incremental*) opts+=(--sp-mode=incremental --sp-pause=${SP_PAUSE:-200} --sp-period=1000 --sp-priority=50) ;;
				esac
				case $mech in *delta*) opts+=(--sp-delta=on) ;; esac     # sp-delta: stop-the-world, each period a delta
				case $mech in *-null) opts[0]=--sp-store=null: ;; esac
				rm -rf "$work/store" "$work/state.bf"
				prog=${mech%%-*}
				# perf itself on the last CPU, every CPU traced (a wake-up may come from either).
				recorder=(); [ $sched = 1 ] && recorder=(taskset -c 1 perf record -q -k mono -a -e sched:sched_switch -e sched:sched_wakeup -o "$work/sched.data" --)
				rm -f "$work/sptrace.csv"
				row=$(SPMONO_TRACE=$work/sptrace.csv CONTROL_TRACE=$work/periods.csv "${recorder[@]}" taskset -c "$cpus" "${rt[@]}" "$sp" "${opts[@]}" "$work/ControlBench.exe" run "$prog" "$n" "$periods" "$work/state.bf" 2> "$work/stderr")
				whose=,,
				if [ $sched = 1 ]; then
					perf script -i "$work/sched.data" -F pid,tid,cpu,time,event,trace --ns > "$work/sched.txt" 2> /dev/null
					whose=$(python3 "$here/summarize-control.py" --account "$work/periods.csv" "$work/sched.txt" 2> "$work/whose")
					sed "s#^#  $mech, $n objects, CPUs $cpus, run $rep: #" "$work/whose" >&2
				fi
				# The schedulability warnings, as the user sees them (each said once on stderr): calls
				# sooner than the cycles the model learned, or a cycle that cannot finish.
				warned=$(grep -c -E "SendPData calls came while a cycle ran|cannot finish" "$work/stderr" || true)
				if [ "$prog" != none ] && [ "${mech%-null}" = "$mech" ]; then
					last=last; case $mech in sp-incremental*) last=any ;; esac
					"$sp" --sp-store="$store" "$work/ControlBench.exe" check "$prog" "$n" "${row%%,*}" "$work/state.bf" $last > /dev/null \
						|| { echo "$mech, $n objects, cpus $cpus: check failed" >&2; exit 1; }
				fi
				# The cost model's accuracy over every cycle of the run (SPMONO_TRACE's cycles and predictions).
				accuracy=,
				case $mech in sp-incremental*) [ -s "$work/sptrace.csv" ] && accuracy=$(python3 "$here/summarize-control.py" --model "$work/sptrace.csv") ;; esac
				echo "$mech,$(( ${#cpus} > 1 ? 2 : 1 )),$n,$rep,$row,$warned,$whose,$accuracy" >> "$csv"
			done
		done
	done
done
python3 "$here/summarize-control.py" "$csv" "$([ ${#rt[@]} -gt 0 ] && echo "SCHED_FIFO 60" || echo "normal policy (chrt refused)")"
