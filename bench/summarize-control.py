#!/usr/bin/env python3
"""summarize-control.py CSV POLICY: deadline misses and latency percentiles of
the 1 kHz control loop, per mechanism, CPU count and object count (N, or N/K:
N objects of which K are updated a period; min / median / max over the
repetitions).

summarize-control.py --model TRACE: the cost model's accuracy over one run's
cycles, from SPMONO_TRACE (its "cycle" and "predicted" runs), printed as
"cycles,within": the cycles after the first two (the model learns from them)
and how many were predicted within 25% of their length.

summarize-control.py --account PERIODS SCHED: one run's deadline misses by whose
time made them (the scheduler's account), printed as "runtime,machine,program"
counts; PERIODS is the loop's CONTROL_TRACE (bench/ControlBench.cs), SCHED perf's
sched_switch and sched_wakeup of the run (schedtrace.py).
"""
import bisect, csv, statistics, sys
from collections import defaultdict

import schedtrace

PERIOD_NS = 1_000_000


def read_periods(path):
    """The loop's thread id, its update's CPU time with no cycle running (None if not given), and
    its periods: (release, woke, updated, latency, update's CPU time or None), in ns, the middle
    three after the release."""
    loop, baseline, periods = None, None, []
    for line in open(path):
        f = line.strip().split(",")
        if f[0] == "loop":
            loop = int(f[1])
        elif f[0] == "baseline":
            baseline = int(f[1])
        elif len(f) in (4, 5):
            periods.append(tuple(int(x) for x in f) + ((None,) if len(f) == 4 else ()))
    return loop, baseline, periods


def loop_states(switches, wakeups, tid):
    """The loop thread's states from the scheduler's events: (start, end, state, cpu), state
    "run" (on cpu), "sleep" (blocked: a timer, a lock, a stopped world) or "wait" (runnable, queued
    on cpu: woken and not yet switched in, or preempted)."""
    events = [(t, "run", cpu) for t, cpu, _, _, _, _, nxt in switches if nxt == tid]
    events += [(t, "wait" if state.startswith("R") else "sleep", cpu) for t, cpu, _, prev, _, state, _ in switches if prev == tid]
    events += [(t, "woken", cpu) for t, who, cpu in wakeups if who == tid]
    events.sort(key=lambda e: e[0])
    states, current = [], None
    for t, what, cpu in events:
        if what == "woken":
            if current is None or current[1] != "sleep":
                continue            # a wake-up of a running or queued thread changes nothing
            what = "wait"
            # The wake-up names its target CPU; a trace without the cpu column has one CPU.
            cpu = cpu if current[2] is not None else None
        if current is not None and t > current[0]:
            states.append((current[0], t, current[1], current[2]))
        current = (t, what, cpu)
    return states


def split_update(ran, cpu, baseline, shares, parts):
    """The loop's running time `ran` until its update ended: the program's, but for what the
    update's CPU time `cpu` says about it (when given): running time beyond it was taken by the
    hypervisor (the machine's), and CPU time beyond the update's with no cycle (`baseline`) went to
    the barriers' slow paths in its stores (the runtime's)."""
    if cpu is None or baseline is None:
        shares["program"] += ran
        return
    stolen = max(0, ran - cpu)
    barriers = max(0, min(cpu, ran) - baseline)
    shares["machine"] += stolen
    shares["runtime"] += barriers
    parts["barriers"] = parts.get("barriers", 0) + barriers
    shares["program"] += ran - stolen - barriers


def account(periods, switches, wakeups, loop, pid, period_ns=PERIOD_NS, baseline=None):
    """Each late period's time by whose it was, and so whose miss it is.  Within the period (its
    release to the end of its work; time the previous period's work overran into it is that
    period's, counted as that period was judged):
      - the runtime's: other threads of the process running while the loop was queued (the SP
        and writer tasks, the collector), the loop blocked after it woke (a lock, a stopped
        world), and the loop's own persisting (SendPData, or BinaryFormatter: its time after the update);
      - the machine's: the loop asleep past its release (the timer came late: the hypervisor's
        wake-up of an idle CPU), or queued behind an idle CPU or another process's task;
      - the program's: the loop's own update, and time the trace does not cover.  With the
        update's CPU time and its CPU time with no cycle (`baseline`), the update's running time
        beyond its CPU time is the machine's (the hypervisor took it), and its CPU time beyond
        the baseline the runtime's (the barriers' slow paths in the loop's own stores).
    A miss is the program's when the deadline would have been missed without both the
    machine's and the runtime's shares; else it is put to the larger of the two.  (Put to the
    runtime whenever its share was needed, a miss would follow the machine's stalls: a timer
    990 us late leaves no room for any SendPData, and this VM's floor has such stalls.)
    Returns a list of (period index, latency, shares, class) for the misses."""
    states = loop_states(switches, wakeups, loop)
    starts = [s[0] for s in states]
    by_cpu = defaultdict(list)
    for r in schedtrace.runs(switches):
        by_cpu[r[5]].append(r)
    cpu_starts = {c: [r[0] for r in rs] for c, rs in by_cpu.items()}

    def whose_cpu(cpu, a, b, shares, parts):
        rs, i = by_cpu.get(cpu, []), max(0, bisect.bisect_right(cpu_starts.get(cpu, []), a) - 1)
        covered = 0
        while i < len(rs) and rs[i][0] < b:
            x, y = max(rs[i][0], a), min(rs[i][1], b)
            if y > x:
                mine = rs[i][2] == pid and rs[i][3] not in (loop, 0)
                shares["runtime" if mine else "machine"] += y - x
                if mine:
                    parts[rs[i][4]] = parts.get(rs[i][4], 0) + y - x
                covered += y - x
            i += 1
        shares["program"] += (b - a) - covered

    misses, prev_end, prev_class = [], 0, "program"
    for k, (r, woke, updated, latency, update_cpu) in enumerate(periods):
        end, own = r + latency, max(r, prev_end)
        shares = {"runtime": 0, "machine": 0, "program": 0}
        parts = {}           # the runtime's share by what took it: a thread's name, persisting (the loop's SendPData, or BinaryFormatter), blocked, barriers, carried
        update_ran = 0
        shares[prev_class] += own - r
        if prev_class == "runtime" and own > r:
            parts["carried"] = own - r          # the previous period's, late by the runtime
        i, t = max(0, bisect.bisect_right(starts, own) - 1), own
        while t < end:
            if i >= len(states) or states[i][0] >= end:
                shares["program"] += end - t
                break
            a, b, state, cpu = states[i]
            i += 1
            a, b = max(a, t), min(b, end)
            if b <= a:
                continue
            if a > t:
                shares["program"] += a - t
            cut = r + (updated if state == "run" else woke)      # the update's end, or the loop's wake
            if state == "wait":
                whose_cpu(cpu, a, b, shares, parts)
            elif state == "run":
                update_ran += max(0, min(b, cut) - a)
                parts["persisting"] = parts.get("persisting", 0) + max(0, b - max(a, cut))
            else:
                shares["machine"] += max(0, min(b, cut) - a)        # the timer late
                parts["blocked"] = parts.get("blocked", 0) + max(0, b - max(a, cut))
            t = b
        shares["runtime"] += parts.get("persisting", 0) + parts.get("blocked", 0)
        split_update(update_ran, update_cpu, baseline, shares, parts)
        cls = "program"
        if latency > period_ns:
            cls = "program" if latency - shares["machine"] - shares["runtime"] > period_ns else \
                "runtime" if shares["runtime"] >= shares["machine"] else "machine"
            misses.append((k, latency, shares, cls, {w: ns for w, ns in parts.items() if ns}))
        prev_end, prev_class = end, cls
    return misses


def account_main(periods_path, sched_path):
    loop, baseline, periods = read_periods(periods_path)
    switches, wakeups = schedtrace.parse(sched_path)
    misses = account(periods, switches, wakeups, loop, loop, baseline=baseline)   # the loop is the process's main thread
    counts = {c: sum(1 for m in misses if m[3] == c) for c in ("runtime", "machine", "program")}
    print(f"{counts['runtime']},{counts['machine']},{counts['program']}")
    # The runtime's misses first (what the target is about), then the longest of the others.
    for k, latency, shares, cls, parts in sorted(misses, key=lambda m: (m[3] != "runtime", -m[1]))[:4]:
        print(f"period {k}: {latency / 1e3:.0f} us late by " + ", ".join(f"{c} {v / 1e3:.0f}" for c, v in shares.items())
              + " us (the runtime's: " + (", ".join(f"{w} {ns / 1e3:.0f}" for w, ns in parts.items()) or "none")
              + f"): the {cls}'s", file=sys.stderr)


def model_accuracy(trace_path, learning=2):
    """(cycles judged, cycles predicted within 25%) of one run's SPMONO_TRACE."""
    cycles, predicted = {}, {}
    for row in csv.reader(open(trace_path)):
        if row[0] in ("cycle", "predicted"):
            (cycles if row[0] == "cycle" else predicted)[int(row[1])] = int(row[2]) - int(row[1])
    judged = [(predicted[k], cycles[k]) for k in sorted(cycles)[learning:] if predicted.get(k) and cycles[k]]
    return len(judged), sum(1 for p, c in judged if abs(p / c - 1) <= 0.25)


def self_test():
    # One CPU, a period of 1000; the loop is thread 10 of process 10, the SP task thread 12.
    # Period 0 (released at 0): the loop's timer comes late (its wake-up at 1100, the CPU idle
    # since -500), it runs 1110-1170, its update ending at 1150: the machine's miss.
    # Period 1 (released at 2000): woken on time but queued behind the SP task until 3100: the
    # runtime's.  Period 2 (released at 3000, while period 1 ran to 3170): its update alone ran
    # to 4100; the 170 carried over from period 1 is the runtime's, and decides it.
    switches = [(-500, 0, 10, 10, "loop", "S", 0), (1110, 0, 0, 0, "swapper/0", "R", 10),
                (1170, 0, 10, 10, "loop", "S", 12), (3100, 0, 10, 12, "sp-task", "S", 10),
                (4120, 0, 10, 10, "loop", "S", 0), (6000, 0, 0, 0, "swapper/0", "R", 99)]
    wakeups = [(1100, 10, 0), (2000, 10, 0), (3120, 10, 0)]       # the last while running: no change
    periods = [(0, 1120, 1150, 1170, None), (2000, 1110, 1150, 1170, None), (3000, 170, 1100, 1120, None), (5000, 10, 40, 60, None)]
    assert loop_states(switches, wakeups, 10) == [(-500, 1100, "sleep", 0), (1100, 1110, "wait", 0), (1110, 1170, "run", 0),
                                                  (1170, 2000, "sleep", 0), (2000, 3100, "wait", 0), (3100, 4120, "run", 0)]
    got = account(periods, switches, wakeups, 10, 10, period_ns=1000)
    assert [(k, cls) for k, _, _, cls, _ in got] == [(0, "machine"), (1, "runtime"), (2, "runtime")], got
    assert got[0][2] == {"runtime": 20, "machine": 1110, "program": 40}
    assert got[1][2] == {"runtime": 1120, "machine": 0, "program": 50}
    assert got[2][2] == {"runtime": 190, "machine": 0, "program": 930}
    assert got[1][4] == {"sp-task": 1100, "persisting": 20}
    # Queued behind another process's task, or its own update too long: not the runtime's.
    other = [s if s[0] != 3100 else (3100, 0, 99, 99, "kworker", "S", 10) for s in switches]
    assert [cls for _, _, _, cls, _ in account(periods[:2], other, wakeups, 10, 10, period_ns=1000)] == ["machine", "machine"]
    running = [(4900, 0, 0, 0, "swapper/0", "R", 10), (6220, 0, 10, 10, "loop", "S", 0), (7000, 0, 0, 0, "swapper/0", "R", 99)]
    got = account([(5000, 10, 1200, 1220, None)], running, [(4890, 10, 0)], 10, 10, period_ns=1000)
    assert got[0][3] == "program" and got[0][2] == {"runtime": 20, "machine": 0, "program": 1200}, got
    # The same update with its CPU time: 1190 of its 1200 of running was CPU time, 40 of it the
    # update's with no cycle: the barriers' 1150 make it the runtime's.  With 300 of CPU time, the
    # hypervisor took 900 of the run: the machine's.
    got = account([(5000, 10, 1200, 1220, 1190)], running, [(4890, 10, 0)], 10, 10, period_ns=1000, baseline=40)
    assert got[0][3] == "runtime" and got[0][2] == {"runtime": 1170, "machine": 10, "program": 40}, got
    got = account([(5000, 10, 1200, 1220, 300)], running, [(4890, 10, 0)], 10, 10, period_ns=1000, baseline=40)
    assert got[0][3] == "machine" and got[0][2] == {"runtime": 280, "machine": 900, "program": 40}, got
    # The machine's 600 (the timer late) and the runtime's 920 (queued behind the SP task): the
    # runtime's, the larger.
    both = [(-500, 0, 10, 10, "loop", "S", 0), (550, 0, 0, 0, "swapper/0", "R", 12),
            (1500, 0, 10, 12, "sp-task", "S", 10), (1570, 0, 10, 10, "loop", "S", 0), (2000, 0, 0, 0, "swapper/0", "R", 99)]
    got = account([(0, 1520, 1550, 1570, None)], both, [(600, 10, 0)], 10, 10, period_ns=1000)
    assert got[0][3] == "runtime" and got[0][2] == {"runtime": 920, "machine": 600, "program": 50}, got
    # The loop blocked after it woke (a lock, a stopped world) is the runtime's.
    blocked = [(0, 0, 0, 0, "swapper/0", "R", 10), (100, 0, 10, 10, "loop", "D", 0), (1200, 0, 0, 0, "swapper/0", "R", 10),
               (1300, 0, 10, 10, "loop", "S", 0)]
    got = account([(0, 50, 80, 1300, None)], blocked, [(1190, 10, 0)], 10, 10, period_ns=1000)
    assert got[0][3] == "runtime" and got[0][2]["runtime"] >= 1090, got
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as t:
        # Two learning cycles, then 100 -> 120 (within), 100 -> 60 (not), 100 -> 130 (not); a skip between.
        t.write("cycle,0,100\npredicted,0,0\ncycle,1000,1100\npredicted,1000,1100\n"
                "cycle,2000,2100\npredicted,2000,2120\nskip,2500,2500\ncycle,3000,3100\npredicted,3000,3060\n"
                "cycle,4000,4100\npredicted,4000,4130\n")
    assert model_accuracy(t.name) == (3, 1), model_accuracy(t.name)
    print("summarize-control self-test ok")


def spread(values, scale=1.0):
    vals = [v / scale for v in values]
    return f"{min(vals):.0f} / {statistics.median(vals):.0f} / {max(vals):.0f}"


def order(key):
    cpus, n, mech = key
    total, _, touched = n.partition("/")
    return (cpus, int(total), int(touched or total), mech)


def model(rs):
    if not any(r.get("cycle_ns", 0) for r in rs):
        return ""
    pred = statistics.median(r["predicted_cycle_ns"] for r in rs) / 1e6
    meas = statistics.median(r["cycle_ns"] for r in rs) / 1e6
    warned = sum(1 for r in rs if r.get("warned", 0) > 0)
    verdict = "schedulable" if warned == 0 else f"unschedulable ({warned} of {len(rs)} runs warned)"
    accuracy = ""
    if all(r.get("model_cycles") for r in rs):
        shares = [r["model_within"] / r["model_cycles"] for r in rs]
        accuracy = (f"; cycles within 25%: {min(shares) * 100:.0f} / {statistics.median(shares) * 100:.0f} / "
                    f"{max(shares) * 100:.0f}% of {sum(r['model_cycles'] for r in rs)}")
    return f"{pred:.2f} / {meas:.2f}, {verdict}{accuracy}"


def misses(rs):
    """All misses; with the scheduler's account, the runtime's and the machine's beside them."""
    text = spread([r["misses"] for r in rs])
    if all("runtime_misses" in r for r in rs):
        text += f" (runtime's {spread([r['runtime_misses'] for r in rs])}; machine's {spread([r['machine_misses'] for r in rs])})"
    return text


def summary(csv_path, policy):
    runs = defaultdict(list)
    for r in csv.DictReader(open(csv_path)):
        runs[(r["cpus"], r["n"], r["mechanism"])].append(
            {k: int(v) for k, v in r.items() if k not in ("mechanism", "cpus", "n") and v not in ("", None)})
    print(f"Control loop at 1 kHz, loop under {policy}; min / median / max over the repetitions")
    print("| CPUs | objects (/ updated a period) | mechanism | periods | deadline misses | p50 latency (us) | p99 latency (us) | "
          "max latency (us) | periods not persisted (SendPData skipped) | cost model (SP incremental): last cycle predicted / measured (ms), verdict; every cycle's prediction within 25% |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for (cpus, n, mech), rs in sorted(runs.items(), key=lambda kv: order(kv[0])):
        print(f"| {cpus} | {n} | {mech} | {rs[0]['periods']} | {misses(rs)} | "
              f"{spread([r['p50_ns'] for r in rs], 1e3)} | {spread([r['p99_ns'] for r in rs], 1e3)} | {spread([r['max_ns'] for r in rs], 1e3)} | "
              f"{spread([r['skipped'] for r in rs]) if 'skipped' in rs[0] and mech.startswith('sp-incremental') else ''} | {model(rs)} |")
    # The target: no miss of the runtime's in a run the cost model called schedulable.
    judged = [(key, r) for key, rs in runs.items() if key[2].startswith("sp-incremental") for r in rs
              if r.get("warned", 0) == 0 and "runtime_misses" in r]
    if judged:
        bad = [f"{k[0]} CPU(s), {k[1]} objects, {k[2]} run {r['rep']}: {r['runtime_misses']}" for k, r in judged if r["runtime_misses"]]
        print(f"Target, 0 misses of the runtime's in every SP incremental run the model called schedulable (no warning): "
              f"{'met' if not bad else 'NOT met'} ({len(judged) - len(bad)} of {len(judged)} runs)" + ("; " + "; ".join(bad) if bad else ""))


if __name__ == "__main__":
    if sys.argv[1] == "--account":
        account_main(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--model":
        print("%d,%d" % model_accuracy(sys.argv[2]))
    elif sys.argv[1] == "--self-test":
        self_test()
    else:
        summary(sys.argv[1], sys.argv[2])
