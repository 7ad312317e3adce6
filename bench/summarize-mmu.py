#!/usr/bin/env python3
"""summarize-mmu.py OUT LABEL PAUSE_US PERIOD_US CPUS CSV [TRACE] [PNG]

What the application lost, from MmuBench's output OUT (its own clock): for the
idle phase (the machine's floor, measured in the same run) and the persistence
phase, the longest gap, the 99.9th percentile of the probe's intervals, the
time lost, and the minimum mutator utilization (MMU: over every window of
length w placed anywhere in the phase, the smallest fraction of it not lost
to gaps; Cheng and Blelloch, PLDI 2001) at w = the SP period, 10 periods and
100 ms (empty when the phase is shorter than the window; a p99.9 under the
2 us recording threshold is written 2.0).  Appends a row a phase to CSV, prints the issue's targets met or not
(one CPU: max gap <= pause + the idle floor's max gap, MMU(period) >= 1 -
pause/period - 0.05; two CPUs: max gap within the idle floor's), and, with
the SPMONO_TRACE file TRACE, what overlapped the longest gaps.  PNG: MMU
against the window, idle and persistence.

The kernel's account: the probe records, for each gap, whether the kernel took
it off its CPU meanwhile (getrusage's context switches).  Persistence's tasks
can only take the probe's CPU that way; a gap with the probe on its CPU went
to interrupts or to the hypervisor stopping the virtual CPU (perf sched on
this VM: runs of 1-3.5 ms with no task switch and no interrupt in the guest).
The same figures and targets are printed again counting only the gaps with
the probe off its CPU, beside the same split of the floor.

The scheduler's account (SCHED, a `perf script` of sched:sched_switch on the
probe's CPU, recorded by run-mmu.sh with perf on the kernel's monotonic
clock): each gap's time by who had the CPU.  The runtime's: another thread of
the process (the SP and writer tasks, the collector), the CPU idle while the
probe waited, or a world stopped as SPMONO_TRACE says (the only use of our own
trace here, and it can only add to the runtime's share).  The machine's: the
probe on its CPU but not running (the hypervisor, interrupts), other tasks.
The targets are printed a last time on the runtime's time alone, beside the
floor's full gaps (the same stall can stretch a run of the SP task).

    summarize-mmu.py --self-test    checks the MMU computation on hand-made cases
"""
import bisect
import csv
import os
import sys

import schedtrace


def parse(path):
    """The run's segments by phase, gaps by phase, cycle rows, placing notes, and `about`: the
    process's pid and the probe's tid (for the scheduler's account; None in older output) and
    the collections during each phase's segments ([minor, major])."""
    phases, gaps, cycles, placing = {}, {}, [], []
    about = {"process": None, "collections": {}}
    policies = {"0": "SCHED_OTHER", "1": "SCHED_FIFO", "2": "SCHED_RR"}
    for line in open(path):
        f = line.strip().split(",")
        if f[0] == "phase":     # a phase is one or more segments (the floor and the cycles alternate)
            phases.setdefault(f[1], []).append({"start": int(f[2]), "duration": int(f[3]), "reads": int(f[4]), "gaps": int(f[5])})
        elif f[0] == "gap":     # switched: 1 unless the probe stayed on its CPU (older output: 1)
            gaps.setdefault(f[1], []).append((int(f[2]), int(f[3]), int(f[4]) if len(f) > 4 else 1))
        elif f[0] == "cycle":
            cycles.append([int(x) for x in f[1:]])
        elif f[0] == "cpus":
            placing.append(f"CPUs: probe {f[1]}, SP tasks {f[2]}, driver {f[3]}")
        elif f[0] == "task":
            placing.append(f"{f[1]} {policies.get(f[3], f[3])}")
        elif f[0] == "full":
            placing.append(f"GAP ARRAY FULL in {f[1]}: gaps after the first {f[2]} not recorded, figures too low")
        elif f[0] == "collections":     # the collector's during a segment: minor, major
            c = about["collections"].setdefault(f[1], [0, 0])
            c[0] += int(f[2])
            c[1] += int(f[3])
        elif f[0] == "process":
            about["process"] = (int(f[1]), int(f[2]))
        elif f[0] == "probe" and f[1] == "sp" and not any(p.startswith("probe ") for p in placing):
            placing.append(f"probe {policies.get(f[2], f[2])}")
    return phases, gaps, cycles, placing, about


class Lost:
    """Gaps (start, length), sorted and disjoint, and the time they cover in any interval."""

    def __init__(self, gaps):
        self.gaps = sorted(gaps)
        self.starts = [s for s, _ in self.gaps]
        self.ends = [s + l for s, l in self.gaps]
        self.prefix = [0]
        for _, l in self.gaps:
            self.prefix.append(self.prefix[-1] + l)

    def within(self, a, b):
        """Time lost in [a, b)."""
        if b <= a or not self.gaps:
            return 0
        i = bisect.bisect_right(self.ends, a)      # first gap ending after a
        j = bisect.bisect_left(self.starts, b)     # gaps before j start before b
        if i >= j:
            return 0
        total = self.prefix[j] - self.prefix[i]
        total -= max(0, a - self.starts[i])           # the first may start before a
        total -= max(0, self.ends[j - 1] - b)         # the last may end after b
        return total


def mmu(lost, t0, t1, w):
    """Minimum over windows [t, t+w) within [t0, t1) of the fraction not lost; the worst window
    starts at a gap's start or ends at a gap's end (or is at an end of the phase).  None when
    no window of w fits in the phase."""
    if t1 - t0 < w:
        return None
    return 1 - worst_window(lost, t0, t1, w)[1] / w


def mmu_of(lost, segments, w):
    """MMU over a phase of segments: the worst of the windows of w that fit in one segment (a
    window does not span two: the time between them belongs to the other phase).  None when
    no segment is w long."""
    found = worst_of(lost, segments, w)
    return None if found is None else 1 - found[1] / w


def worst_of(lost, segments, w):
    """(start, time lost) of the worst window of w within one of the segments, or None."""
    found = [worst_window(lost, g["start"], g["start"] + g["duration"], w) for g in segments if g["duration"] >= w]
    return max(found, key=lambda f: f[1], default=None)


def worst_window(lost, t0, t1, w):
    """(start, time lost) of a window of w within [t0, t1) that loses the most."""
    candidates = [t0, t1 - w]
    for s, e in zip(lost.starts, lost.ends):
        candidates += [s, e - w]
    worst = (t0, -1)
    for t in candidates:
        t = min(max(t, t0), t1 - w)
        within = lost.within(t, t + w)
        if within > worst[1]:
            worst = (t, within)
    return worst


def percentile_interval(phase, gaps, q):
    """The q-quantile of all the probe's intervals: those not recorded are under 2 us."""
    n = phase["reads"] if isinstance(phase, dict) else sum(g["reads"] for g in phase)
    rank = int(q * n)
    short = n - len(gaps)
    if rank < short:
        return None                                   # below the recording threshold
    lengths = sorted(l for _, l in gaps)
    return lengths[min(len(lengths) - 1, rank - short)]


def figures(segments, gaps, period_ns):
    lost = Lost(gaps)
    p999 = percentile_interval(segments, gaps, 0.999)
    return {
        "max_gap_us": max((l for _, l in gaps), default=0) / 1e3,
        "p999_us": p999 / 1e3 if p999 is not None else 2.0,
        "p999_below_2us": p999 is None,
        "lost_ms": lost.prefix[-1] / 1e6,
        "duration_ms": sum(g["duration"] for g in segments) / 1e6,
        "segments": len(segments),
        "mmu_period": mmu_of(lost, segments, period_ns),
        "mmu_10periods": mmu_of(lost, segments, 10 * period_ns),
        "mmu_100ms": mmu_of(lost, segments, 100_000_000),
    }, lost


def sched_runs(path):
    """The probe's CPU as the kernel's scheduler saw it (schedtrace.py: sched:sched_switch on that
    CPU): (start, end, pid, tid, comm) of each stretch a task ran, from one switch to the next."""
    return [r[:5] for r in schedtrace.runs(schedtrace.parse(path)[0])]


STOPPED = "(world stopped)"


def split_at_stops(runs, stopped):
    """runs with the stretches of a stopped world cut out of them and put in, as STOPPED's."""
    if not stopped:
        return runs
    stops = sorted(stopped)
    out, j = [], 0
    for a, b, rpid, tid, comm in runs:
        while j < len(stops) and stops[j][1] <= a:
            j += 1
        k, t = j, a
        while k < len(stops) and stops[k][0] < b:
            sa, sb = max(stops[k][0], a), min(stops[k][1], b)
            if sa > t:
                out.append((t, sa, rpid, tid, comm))
            out.append((sa, sb, -1, -1, STOPPED))
            t = sb
            k += 1
        if t < b:
            out.append((t, b, rpid, tid, comm))
    return out


def world_stops(trace_path):
    if not trace_path or not os.path.exists(trace_path):
        return []
    stops = []
    for line in open(trace_path):
        what, a, b = line.strip().split(",")[:3]
        if what == "world-stopped":
            stops.append((int(a), int(b)))
    return stops


def attribute(gaps, runs, pid, probe_tid, stopped=()):
    """Each gap's time by who had the probe's CPU: 'runtime' (another thread of the process: the SP
    and writer tasks, the collector; or no one, the probe waiting with the CPU idle: a stopped
    world), 'stalled' (the probe itself, on its CPU but not running: the hypervisor, interrupts),
    'others' (other processes, kernel threads).  A stopped world (`stopped`: SPMONO_TRACE's
    world-stopped stretches) is the runtime's whoever the scheduler shows: a thread being stopped
    spins for a start's short stop (runtime patch 0010), on its CPU.  The trace can only add to the
    runtime's share, never take from it.  Returns the runtime's stretches (start, length) and the
    time by kind and by comm, and each stretch's time by comm."""
    runs = split_at_stops(runs, stopped)
    starts = [r[0] for r in runs]
    runtime, parts, by_kind, by_comm = [], [], {"runtime": 0, "stalled": 0, "others": 0}, {}
    for s, l in gaps:
        e = s + l
        i = max(0, bisect.bisect_right(starts, s) - 1)
        covered = 0
        while i < len(runs) and runs[i][0] < e:
            a, b, rpid, tid, comm = runs[i]
            a, b = max(a, s), min(b, e)
            i += 1
            if b <= a:
                continue
            covered += b - a
            kind = "runtime" if rpid == pid and tid != probe_tid or tid == 0 or comm == STOPPED else \
                "stalled" if tid == probe_tid else "others"
            by_kind[kind] += b - a
            by_comm[comm] = by_comm.get(comm, 0) + b - a
            if kind == "runtime":       # one stretch from the task to the next of the process
                if runtime and runtime[-1][0] + runtime[-1][1] == a:
                    runtime[-1] = (runtime[-1][0], b - runtime[-1][0])
                else:
                    runtime.append((a, b - a))
                    parts.append({})
                parts[-1][comm] = parts[-1].get(comm, 0) + b - a
        by_kind["stalled"] += l - covered        # before the trace's first switch or after its last
    longest = sorted(zip(runtime, parts), key=lambda x: -x[0][1])[:3]
    by_kind["longest"] = [(l, ", ".join(f"{c} {t / 1e3:.0f}" for c, t in p.items())) for (_, l), p in longest]
    return runtime, by_kind, by_comm, parts


def fmt(u, digits=4):
    return "" if u is None else f"{u:.{digits}f}"


def cpu_taken(a, b, cpu):
    """A run's CPU time, said when the CPU was taken from it for a tenth of it or more."""
    return f" ({cpu / 1e3:.0f} of CPU)" if cpu is not None and cpu < 0.9 * (b - a) else ""


def trace_runs(trace_path):
    """SPMONO_TRACE's runs (start, end, what, CPU time or None) and long units (start, end, kind,
    CPU time or None), each sorted by start."""
    runs, units = [], []
    for line in open(trace_path):
        f = line.strip().split(",")
        what, a, b = f[:3]
        cpu = int(f[3]) if len(f) > 3 else None
        # A long unit inside an increment, or an SP task's run long outside its increments: said, not counted again.
        if what.startswith("unit-") or what == "awake":
            units.append((int(a), int(b), what.removeprefix("unit-"), cpu))
        elif what not in ("cycle", "predicted"):    # spans of a whole cycle (the cost model's), not runs
            runs.append((int(a), int(b), what, cpu))
    return sorted(runs), sorted(units)


def explain(trace_path, gaps, top=5, window=None):
    """What persistence and the collector ran in the longest gaps (start, length, switched), or in
    those of the window (start, end)."""
    runs, units = trace_runs(trace_path)
    starts = [r[0] for r in runs]
    out = []
    chosen = sorted(gaps, key=lambda g: -g[1])[:top]
    if window:      # the gaps of the worst window instead, in time order
        chosen = [g for g in gaps if g[0] + g[1] > window[0] and g[0] < window[1]]
    for s, l, switched in chosen:
        e = s + l
        i = bisect.bisect_left(starts, s - 50_000_000)
        inside = [r for r in runs[i:] if r[0] < e and r[1] > s]
        covered = sum(min(b, e) - max(a, s) for a, b, _, _ in inside)
        parts = " ".join(f"{w} {(b - a) / 1e3:.0f}{cpu_taken(a, b, c)}" for a, b, w, c in inside[:14])
        if len(inside) > 14:
            parts += f" and {len(inside) - 14} more runs"  # the whole count says whether a budget was overrun
        long_units = [u for u in units if u[0] < e and u[1] > s]
        if long_units:
            parts += "; long units: " + ", ".join(f"{k} {(b - a) / 1e3:.0f}{cpu_taken(a, b, c)}" for a, b, k, c in long_units[:4])
        where = "" if switched else ", the probe on its CPU"
        out.append(f"    gap {l / 1e3:.0f} us{where}: persistence and collections ran {covered / 1e3:.0f} us of it ({parts or 'nothing traced'})")
    return out


def runtime_window(segments, stretches, parts, lost, period_ns, trace_path):
    """The worst window of a period on the runtime's time (the scheduler's account): each of its
    stretches, from the window's start, by who ran, and what SPMONO_TRACE says ran in it."""
    found = worst_of(lost, segments, period_ns)
    if found is None or found[1] <= 0:
        return []
    t, worst = found
    out = [f"  the runtime's worst window of a period, at {(t - segments[0]['start']) / 1e6:.1f} ms, held {worst / 1e3:.0f} us:"]
    for (s, l), p in zip(stretches, parts):
        if s + l > t and s < t + period_ns:
            who = ", ".join(f"{c} {n / 1e3:.0f}" for c, n in p.items())
            out.append(f"    at +{(s - t) / 1e3:5.0f} us: {l / 1e3:4.0f} us ({who})")
    if trace_path and os.path.exists(trace_path):
        runs, units = trace_runs(trace_path)
        awake = [u for u in units if u[2] == "awake"]
        ran = [f"{w} +{(a - t) / 1e3:.0f}..+{(b - t) / 1e3:.0f}{cpu_taken(a, b, c)}" for a, b, w, c in sorted(runs + awake)
               if b > t and a < t + period_ns]
        if ran:
            out.append("    traced: " + ", ".join(ran[:20]))
    return out


def met(ok):
    return "met" if ok else "NOT met"


def targets(rows, cpus, pause_ns, period_ns, what):
    """The issue's targets on the figures of both phases: one CPU, max gap <= pause + the floor's,
    MMU(period) >= 1 - pause/period - 0.05, and that MMU beside the floor's; two CPUs, max gap
    within the floor's."""
    idle, sp = rows["idle"], rows["sp"]
    if cpus != "1":
        return f"  {what}, max gap within the idle floor's ({idle['max_gap_us']:.0f} us): {met(sp['max_gap_us'] <= idle['max_gap_us'])}"
    bar = 1 - pause_ns / period_ns - 0.05
    gap_ok = sp["max_gap_us"] <= pause_ns / 1e3 + idle["max_gap_us"]
    mmu_ok = sp["mmu_period"] is not None and sp["mmu_period"] >= bar
    floor_bar = idle["mmu_period"] - pause_ns / period_ns - 0.05 if idle["mmu_period"] is not None else None
    floor_ok = mmu_ok or (sp["mmu_period"] is not None and floor_bar is not None and sp["mmu_period"] >= floor_bar)
    return (f"  {what}, max gap <= pause + idle max ({pause_ns / 1e3 + idle['max_gap_us']:.0f} us): {met(gap_ok)}; "
            f"MMU(period) >= {bar:.3f}: {met(mmu_ok)}; beside the floor, MMU(period) >= the idle one's - pause/period - 0.05 "
            f"({fmt(floor_bar, 3) or '-'}): {met(floor_ok)}")


def plot(png, curves, label):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("    (no matplotlib: no plot)")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curves.items():
        ax.plot([w / 1e6 for w, _ in points], [u for _, u in points], label=name)
    ax.set_xscale("log")
    ax.set_xlabel("window (ms)")
    ax.set_ylabel("minimum mutator utilization")
    ax.set_ylim(0, 1.02)
    ax.set_title(label, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main():
    out, label, pause_us, period_us, cpus, csv_path = sys.argv[1:7]
    trace = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] else None
    png = sys.argv[8] if len(sys.argv) > 8 and sys.argv[8] else None
    sched = sys.argv[9] if len(sys.argv) > 9 and sys.argv[9] and os.path.exists(sys.argv[9]) else None
    pause_ns, period_ns = int(pause_us) * 1000, int(period_us) * 1000
    phases, gaps, cycles, placing, about = parse(out)
    rows, lost_by, off = {}, {}, {}
    for name in ("idle", "sp"):
        rows[name], lost_by[name] = figures(phases[name], [(s, l) for s, l, _ in gaps.get(name, [])], period_ns)
        # Only the gaps in which the kernel took the probe off its CPU: another thread ran.
        off[name], _ = figures(phases[name], [(s, l) for s, l, switched in gaps.get(name, []) if switched], period_ns)
    accounts = {}
    if sched and about["process"]:
        runs, stops = sched_runs(sched), world_stops(trace)
        for name in ("idle", "sp"):
            mine, by_kind, by_comm, parts = attribute([(s, l) for s, l, _ in gaps.get(name, [])], runs, *about["process"], stops)
            row, lost = figures(phases[name], mine, period_ns)
            accounts[name] = (row, by_kind, by_comm, mine, parts, lost)
    new = not os.path.exists(csv_path)
    with open(csv_path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["label", "phase", "duration_ms", "max_gap_us", "p999_us", "lost_ms", "mmu_period", "mmu_10periods", "mmu_100ms",
                        "offcpu_max_gap_us", "offcpu_lost_ms", "offcpu_mmu_period",
                        "runtime_max_gap_us", "runtime_lost_ms", "runtime_mmu_period", "runtime_mmu_10periods"])
        for name, r in rows.items():
            o = off[name]
            k = accounts[name][0] if name in accounts else None
            w.writerow([label, name, f"{r['duration_ms']:.1f}", f"{r['max_gap_us']:.1f}", f"{r['p999_us']:.1f}", f"{r['lost_ms']:.3f}",
                        fmt(r["mmu_period"]), fmt(r["mmu_10periods"]), fmt(r["mmu_100ms"]),
                        f"{o['max_gap_us']:.1f}", f"{o['lost_ms']:.3f}", fmt(o["mmu_period"])]
                       + ([f"{k['max_gap_us']:.1f}", f"{k['lost_ms']:.3f}", fmt(k["mmu_period"]), fmt(k["mmu_10periods"])] if k else ["", "", "", ""]))
    idle, sp = rows["idle"], rows["sp"]
    print(f"{label}:  ({', '.join(placing)})")
    for name, r in rows.items():
        p999 = "< 2" if r["p999_below_2us"] else f"{r['p999_us']:.0f}"
        print(f"  {name:4}: {r['duration_ms']:8.0f} ms in {r['segments']}, max gap {r['max_gap_us']:7.0f} us, p99.9 {p999:>5} us, lost {r['lost_ms']:7.2f} ms, "
              f"MMU {fmt(r['mmu_period'], 3) or '-'} (period) {fmt(r['mmu_10periods'], 3) or '-'} (10 periods) "
              f"{fmt(r['mmu_100ms'], 3) or '-'} (100 ms)")
    if about["collections"]:
        print("  collections during the segments: " + "; ".join(f"{n} {c[0]} minor, {c[1]} major"
                                                          for n, c in about["collections"].items() if n != "warm"))
    if any(r[k] is None for r in rows.values() for k in ("mmu_period", "mmu_10periods", "mmu_100ms")):
        print("  (-: no segment of the phase is as long as the window; more cycles make them longer)")
    print("  the kernel's account of those gaps: with the probe off its CPU (another thread ran) / on it (interrupts, the hypervisor):")
    for name, r in rows.items():
        o = off[name]
        print(f"    {name:4}: off {o['lost_ms']:7.2f} ms, longest {o['max_gap_us']:5.0f} us, MMU {fmt(o['mmu_period'], 3) or '-'} (period); "
              f"on {r['lost_ms'] - o['lost_ms']:7.2f} ms")
    if cycles:
        ns = [c[2] for c in cycles]
        pred = [c[3] for c in cycles if c[3]]
        # The cost model's error on each cycle it predicted; the target is within 25%.
        errors = [p / m - 1 for p, m in zip([c[3] for c in cycles], ns) if p]
        print(f"  cycles: {len(cycles)}, {min(ns) / 1e6:.1f}-{max(ns) / 1e6:.1f} ms, {cycles[-1][4]} bytes, increments "
              f"{min(c[0] for c in cycles)}-{max(c[0] for c in cycles)}, longest {max(c[1] for c in cycles) / 1e3:.0f} us"
              + (f"; predicted {min(pred) / 1e6:.1f}-{max(pred) / 1e6:.1f} ms (error {min(errors) * 100:+.0f}% to "
                 f"{max(errors) * 100:+.0f}%, within 25% in {sum(abs(e) <= 0.25 for e in errors)} of {len(errors)})"
                 if pred else ""))
    print(targets(rows, cpus, pause_ns, period_ns, "target"))
    print(targets(off, cpus, pause_ns, period_ns, "counting only the gaps with the probe off its CPU"))
    if accounts:
        print("  the scheduler's account of those gaps (perf, sched_switch on the probe's CPU): the process's other threads, or the CPU idle "
              "while the probe waited (the runtime's) / the probe on its CPU but stalled / other tasks:")
        for name, (k, by_kind, by_comm, _, _, _) in accounts.items():
            top = ", ".join(f"{c} {t / 1e6:.2f}" for c, t in sorted(by_comm.items(), key=lambda x: -x[1])[:4])
            print(f"    {name:4}: runtime {by_kind['runtime'] / 1e6:7.2f} ms, longest {k['max_gap_us']:5.0f} us, MMU "
                  f"{fmt(k['mmu_period'], 3) or '-'} (period) {fmt(k['mmu_10periods'], 3) or '-'} (10 periods); stalled "
                  f"{by_kind['stalled'] / 1e6:7.2f} ms; others {by_kind['others'] / 1e6:7.2f} ms ({top})")
            if by_kind["longest"]:
                print("          the runtime's longest: " + "; ".join(f"{l / 1e3:.0f} us ({what})" for l, what in by_kind["longest"]))
        print(targets({"idle": rows["idle"], "sp": accounts["sp"][0]}, cpus, pause_ns, period_ns,
                      "counting only the runtime's time in the scheduler's account, beside the floor's every gap"))
        print("\n".join(runtime_window(phases["sp"], *accounts["sp"][3:], period_ns, trace)))
    if trace and os.path.exists(trace):
        print("  the longest gaps, beside SPMONO_TRACE:")
        print("\n".join(explain(trace, gaps.get("sp", []))))
        found = worst_of(lost_by["sp"], phases["sp"], period_ns)
        if found is not None:
            t, worst = found
            print(f"  the worst window of a period, at {(t - phases['sp'][0]['start']) / 1e6:.1f} ms, lost {worst / 1e3:.0f} us:")
            print("\n".join(explain(trace, gaps.get("sp", []), window=(t, t + period_ns))))
    if png:
        windows = [int(100_000 * 10 ** (k / 4)) for k in range(17)]   # 100 us .. 1 s
        curves = {}
        for name in ("idle", "sp"):
            points = [(w, mmu_of(lost_by[name], phases[name], w)) for w in windows]
            curves[name] = [(w, u) for w, u in points if u is not None]
        plot(png, curves, label)


def self_test():
    # One gap of 1 ms in a phase of 10 ms: windows of 1 ms can be all lost, of 2 ms half.
    lost = Lost([(2_000_000, 1_000_000)])
    assert lost.within(0, 10_000_000) == 1_000_000
    assert lost.within(2_500_000, 2_700_000) == 200_000
    assert abs(mmu(lost, 0, 10_000_000, 1_000_000) - 0.0) < 1e-9
    assert abs(mmu(lost, 0, 10_000_000, 2_000_000) - 0.5) < 1e-9
    assert abs(mmu(lost, 0, 10_000_000, 10_000_000) - 0.9) < 1e-9
    assert mmu(lost, 0, 10_000_000, 10_000_001) is None           # no window fits
    t, worst = worst_window(lost, 0, 10_000_000, 2_000_000)     # any start in [1 ms, 2 ms]
    assert worst == 1_000_000 and 1_000_000 <= t <= 2_000_000
    # Two gaps of 300 us, 1 ms apart (start to start): a 1.3 ms window holds both.
    lost = Lost([(1_000_000, 300_000), (2_000_000, 300_000)])
    assert abs(mmu(lost, 0, 5_000_000, 1_300_000) - (1 - 600_000 / 1_300_000)) < 1e-9
    assert abs(mmu(lost, 0, 5_000_000, 1_000_000) - 0.7) < 1e-9
    # A gap at the phase's start, partly before it counts only inside.
    lost = Lost([(0, 500_000)])
    assert abs(mmu(lost, 0, 4_000_000, 1_000_000) - 0.5) < 1e-9
    # No gap: full utilization; percentile below the threshold.
    assert mmu(Lost([]), 0, 1_000_000, 100_000) == 1
    assert percentile_interval({"reads": 100000}, [(0, 5000)], 0.999) is None
    assert percentile_interval({"reads": 1000}, [(0, 5000), (10, 7000)], 0.999) == 7000
    # The kernel's account: a gap's switched flag is read (1 when an older output lacks it), and the
    # targets judged on the gaps off the CPU only can be met where those on every gap are not.
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("phase,idle,0,3000000,100000,1\nphase,sp,0,3000000,100000,3\ngap,idle,0,100000,0\n"
                "gap,sp,0,500000,1\ngap,sp,600000,400000,0\ngap,sp,2000000,5000\n")
    phases, gaps, _, _, _ = parse(f.name)
    os.unlink(f.name)
    assert gaps["sp"] == [(0, 500000, 1), (600000, 400000, 0), (2000000, 5000, 1)]
    every = {n: figures(phases[n], [(s, l) for s, l, _ in gaps[n]], 3_000_000)[0] for n in ("idle", "sp")}
    off = {n: figures(phases[n], [(s, l) for s, l, sw in gaps[n] if sw], 3_000_000)[0] for n in ("idle", "sp")}
    assert off["idle"]["lost_ms"] == 0 and abs(off["sp"]["lost_ms"] - 0.505) < 1e-9
    assert "MMU(period) >= 0.783: NOT met" in targets(every, "1", 500_000, 3_000_000, "t")   # 905 us lost of 3 ms
    assert "MMU(period) >= 0.783: met" in targets(off, "1", 500_000, 3_000_000, "t")         # 505 us
    assert "max gap within the idle floor's (100 us): NOT met" in targets(every, "2", 500_000, 3_000_000, "t")
    # Segments: the floor and the cycles alternate, and a window stays within one segment.  Two
    # gaps of 400 us, one ending one segment and one starting the next: a 1 ms window would
    # hold both if it could span the 2 ms between the segments; within one it holds one.
    segments = [{"start": 0, "duration": 3_000_000, "reads": 10, "gaps": 1},
                {"start": 5_000_000, "duration": 3_000_000, "reads": 10, "gaps": 1}]
    lost = Lost([(2_600_000, 400_000), (5_000_000, 400_000)])
    assert abs(mmu_of(lost, segments, 1_000_000) - 0.6) < 1e-9
    assert mmu_of(lost, segments, 3_000_001) is None                  # no segment is that long
    assert mmu_of(lost, segments[:1] + [{"start": 5_000_000, "duration": 4_000_000}], 3_500_000) is not None
    r = figures(segments, [(2_600_000, 400_000), (5_000_000, 400_000)], 1_000_000)[0]
    assert r["duration_ms"] == 6 and r["segments"] == 2 and r["max_gap_us"] == 400
    # The scheduler's account: a gap of 1000 (0..1000) while the probe (tid 11 of process 10) ran
    # until 100 (stalled), the SP task (12) until 600, another process's task (99) until 700, the
    # CPU idle until 900 (the probe waiting), the probe again to 1000; a world stop traced over
    # 950..1000 turns that last part into the runtime's.
    runs = [(0, 100, 10, 11, "probe"), (100, 600, 10, 12, "sp-task"), (600, 700, 99, 99, "kworker"),
            (700, 900, 0, 0, "swapper/0"), (900, 1000, 10, 11, "probe")]
    mine, by_kind, _, parts = attribute([(0, 1000)], runs, 10, 11)
    assert parts == [{"sp-task": 500}, {"swapper/0": 200}]
    assert mine == [(100, 500), (700, 200)] and by_kind["runtime"] == 700 and by_kind["stalled"] == 200 and by_kind["others"] == 100
    mine, by_kind, _, _ = attribute([(0, 1000)], runs, 10, 11, [(950, 1000)])
    assert mine == [(100, 500), (700, 200), (950, 50)] and by_kind["runtime"] == 750 and by_kind["stalled"] == 150
    assert split_at_stops([(0, 10, 1, 1, "a")], [(2, 4), (6, 12)]) == [
        (0, 2, 1, 1, "a"), (2, 4, -1, -1, STOPPED), (4, 6, 1, 1, "a"), (6, 10, -1, -1, STOPPED)]
    # SPMONO_TRACE: a long unit (4 columns) is said beside its increment, not counted twice; the
    # cost model's spans are not runs; world stops are read from the same file.
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("cycle,0,10000000\npredicted,0,9000000\nincrement,1000000,1600000,250000\n"
                "unit-mark,1100000,1500000\nincrement,1700000,1800000,98000\nawake,1700000,1950000,120000\n"
                "world-stopped,2000000,2000050\n")
    said = explain(f.name, [(900_000, 1_000_000, 1)])
    stops = world_stops(f.name)
    # The runtime's worst window of a period: its stretches from the window's start, and the traced runs in it.
    segments = [{"start": 0, "duration": 10_000_000}]
    shown = runtime_window(segments, [(1_000_000, 600_000), (5_000_000, 10_000)], [{"sp-task": 600_000}, {"sp-writer": 10_000}],
                           Lost([(1_000_000, 600_000), (5_000_000, 10_000)]), 1_000_000, f.name)
    os.unlink(f.name)
    assert said == ["    gap 1000 us: persistence and collections ran 700 us of it "
                    "(increment 600 (250 of CPU) increment 100; long units: mark 400, awake 250 (120 of CPU))"], said
    assert stops == [(2_000_000, 2_000_050)]
    assert shown[0].endswith("held 600 us:") and shown[1] == "    at +    0 us:  600 us (sp-task 600)", shown
    assert len(shown) == 3 and shown[2] == ("    traced: increment +0..+600 (250 of CPU), increment +700..+800, "
                                            "awake +700..+950 (120 of CPU)"), shown
    # Random disjoint gaps on a small integer time line against brute force: every unit of time
    # marked lost or not, every integer window start tried (the lost time is piecewise linear
    # in the start, with its breaks at integers here, so the integers hold its maximum).
    import random
    rng = random.Random(16)
    for case in range(2000):
        t0, t1 = 0, rng.randint(1, 200)
        gaps, t = [], rng.randint(-10, 20)
        while t < t1 + 10:
            length = rng.randint(1, 15)
            gaps.append((t, length))
            t += length + rng.randint(1, 30)
        covered = [any(s <= u < s + l for s, l in gaps) for u in range(t0, t1)]
        lost = Lost(gaps)
        for w in (1, 2, 3, 7, 10, 25, 60, 199, 250):
            if w > t1 - t0:
                want = None
            else:
                want = 1 - max(sum(covered[a:a + w]) for a in range(0, t1 - t0 - w + 1)) / w
            got = mmu(lost, t0, t1, w)
            assert (got is None) == (want is None) and (got is None or abs(got - want) < 1e-9), (case, gaps, t1, w, got, want)
    print("summarize-mmu self-test ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        main()
