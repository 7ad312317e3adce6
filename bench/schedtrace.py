"""schedtrace.py: the kernel scheduler's account of a run, as perf records it.

Recorded with `perf record -k mono -e sched:sched_switch [-e sched:sched_wakeup]`
and printed with `perf script -F pid,tid[,cpu],time,event,trace --ns`: the clock is
CLOCK_MONOTONIC, the programs' own (bench/MmuBench.cs, bench/ControlBench.cs) and
SPMONO_TRACE's.  A line's pid/tid columns name the task running when the event
fired: for a switch, the task switched off.  Used by summarize-mmu.py (who had
the probe's CPU during each gap) and summarize-control.py (whose time made a
control period late).
"""
import re

EVENT = re.compile(r"^\s*(-?\d+)/(-?\d+)\s+(?:\[(\d+)\]\s+)?([\d.]+):\s+sched:(sched_switch|sched_wakeup):\s+(.*)$")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=-?\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
WAKEUP = re.compile(r"comm=(.*?) pid=(\d+) prio=-?\d+ target_cpu=(\d+)")


def parse(path):
    """(switches, wakeups), each sorted by time.  A switch: (time, cpu, pid, tid, comm, state,
    next_tid) of the task switched off (state: S or D asleep, R or R+ preempted) and the one
    switched on; a wake-up: (time, tid, target_cpu).  cpu is None where the output has no cpu
    column (then every switch is taken as on one CPU)."""
    switches, wakeups = [], []
    for line in open(path):
        m = EVENT.match(line)
        if not m:
            continue
        t, cpu = round(float(m.group(4)) * 1e9), int(m.group(3)) if m.group(3) is not None else None
        if m.group(5) == "sched_switch":
            s = SWITCH.match(m.group(6))
            if s:
                switches.append((t, cpu, int(m.group(1)), int(m.group(2)), s.group(1), s.group(3), int(s.group(5))))
        else:
            w = WAKEUP.match(m.group(6))
            if w:
                wakeups.append((t, int(w.group(2)), int(w.group(3))))
    switches.sort(key=lambda e: e[0])
    wakeups.sort()
    return switches, wakeups


def runs(switches):
    """Who ran on each CPU: (start, end, pid, tid, comm, cpu) for each stretch from one switch to
    the next on that CPU.  The task is the one the next switch takes off, whose process the
    event's pid column gives (the switch onto it names its thread only)."""
    last, out = {}, []
    for sw in switches:
        t, cpu, pid, tid, comm = sw[:5]
        if cpu in last:
            out.append((last[cpu], t, pid, tid, comm, cpu))
        last[cpu] = t
    out.sort()
    return out
