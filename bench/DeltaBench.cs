// DeltaBench: what a period's persistence costs when a share of the state
// changed, with full snapshots (--sp-delta=off) or deltas (--sp-delta=on),
// in either mode (issue 17, item 4).
//
//   DeltaBench.exe N PPM PERIODS
//       N cells (a value and a link each) under one root; the first SendPData
//       persists them whole; then PERIODS periods, each changing PPM per
//       million of the cells (at least one; random cells, their value), then
//       SendPData and WaitPersisted, timed by the program's own Stopwatch
//       (stop-the-world: SendPData's time; incremental: from SendPData until
//       the snapshot is durable, in the SP task's periods).  One CSV line a
//       period: n,ppm,period,send_ns,serialize_ns,bytes,objects,store_ns,
//       probe_persist_ns,probe_floor_ns
//       (store_ns: the period's stores themselves; with deltas the first
//       store into each object in a period takes the barrier's slow path)
//       (serialize_ns, bytes and objects from SPStats: what the snapshot
//       wrote, and the serializer's work: stop-the-world, its time;
//       incremental, the cycle's increments and its start; a delta writes
//       the changed cells, a full snapshot all of them).
//       With DELTA_PROBE_CPU=C (environment), a probe thread pinned to CPU C
//       (the program's own threads elsewhere, e.g. taskset -c 0) reads the
//       clock in a loop and keeps its longest gap between two reads, which
//       is time it did not run: two more columns, probe_persist_ns (while
//       SendPData and WaitPersisted ran: a snapshot's instant stops every
//       thread of the program, this one too) and probe_floor_ns (the floor
//       in the same run: right after, as long again, the program spinning
//       on the clock and nothing persisted; a longer window meets more of
//       the machine's own stalls, so the floor lasts as long).  Without it
//       both are 0.
//   DeltaBench.exe check N PPM PERIODS
//       (a warm restart after a run) the restored cells hold what the run's
//       last period left, replayed from the same random sequence; exits 1
//       with "CHECK FAILED" otherwise.
using System;
using System.Diagnostics;
using System.Threading;
using SPersistence;

[SPersistent]
class Cell
{
	[SPersistentField] public long Value;
	[SPersistentField] public Cell Next;
}

[SPersistent]
class State
{
	[SPersistentField] public Cell [] Cells;
}

static class DeltaBench
{
	static int Check (int n, int ppm, int periods)
	{
		var expected = new long [n];
		for (int i = 0; i < n; i++)
			expected [i] = i;
		int changes = Math.Max (1, (int)((long)n * ppm / 1000000));
		var r = new Random (n + ppm);
		for (int p = 1; p <= periods; p++)
			for (int k = 0; k < changes; k++)
				expected [r.Next (n)] = p;
		var s = SPC.IsWarmRestart () ? (State)SPC.RecvPData (1) : null;
		if (s == null || s.Cells.Length != n) {
			Console.WriteLine ("CHECK FAILED: no state, or not {0} cells", n);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (s.Cells [i].Value != expected [i] || s.Cells [i].Next != s.Cells [(i + 1) % n]) {
				Console.WriteLine ("CHECK FAILED: cell {0} is {1}, not {2} (or its link is wrong)", i, s.Cells [i].Value, expected [i]);
				return 1;
			}
		}
		return 0;
	}

	// The probe's longest gap in each phase (0: anything else, 1: persisting, 2: the floor), in Stopwatch
	// ticks.  Static fields: the JIT puts no store barrier before stsfld, where a store into an array
	// (its first in a period) takes the barrier's slow path, which in stop-the-world mode with deltas
	// waits for sp_lock while SendPData serializes: the probe would time its own wait.
	static long gapOther, gapPersist, gapFloor;
	static volatile int probePhase;
	static volatile bool probeStop;

	static void Probe (int cpu)
	{
		string error = Affinity.Pin (Affinity.CurrentThread (), cpu);
		if (error != null) {
			Console.Error.WriteLine ("DeltaBench: " + error);
			Environment.Exit (2);
		}
		long last = Stopwatch.GetTimestamp ();
		while (!probeStop) {
			long now = Stopwatch.GetTimestamp (), gap = now - last;
			last = now;
			switch (probePhase) {
			case 1: if (gap > gapPersist) gapPersist = gap; break;
			case 2: if (gap > gapFloor) gapFloor = gap; break;
			default: if (gap > gapOther) gapOther = gap; break;
			}
		}
	}

	// The longest gap of phase since the last call, in ns; it starts again.
	static long TakeGap (int phase)
	{
		long ticks;
		if (phase == 1) {
			ticks = gapPersist;
			gapPersist = 0;
		} else {
			ticks = gapFloor;
			gapFloor = 0;
		}
		return (long)(ticks * (1e9 / Stopwatch.Frequency));
	}

	static int Main (string [] args)
	{
		if (args [0] == "check")
			return Check (int.Parse (args [1]), int.Parse (args [2]), int.Parse (args [3]));
		int n = int.Parse (args [0]), ppm = int.Parse (args [1]), periods = int.Parse (args [2]);
		var s = new State { Cells = new Cell [n] };
		for (int i = 0; i < n; i++)
			s.Cells [i] = new Cell { Value = i };
		for (int i = 0; i < n; i++)
			s.Cells [i].Next = s.Cells [(i + 1) % n];
		SPC.AddRoot (s);
		SPC.SendPData ();
		SPC.WaitPersisted ();
		int changes = Math.Max (1, (int)((long)n * ppm / 1000000));
		var r = new Random (n + ppm);
		var sw = new Stopwatch ();
		var stores = new Stopwatch ();
		string probeCpu = Environment.GetEnvironmentVariable ("DELTA_PROBE_CPU");
		Thread probe = null;
		if (!string.IsNullOrEmpty (probeCpu)) {
			probe = new Thread (() => Probe (int.Parse (probeCpu)));
			probe.Start ();
		}
		for (int p = 1; p <= periods; p++) {
			stores.Restart ();
			for (int k = 0; k < changes; k++)
				s.Cells [r.Next (n)].Value = p;
			stores.Stop ();
			TakeGap (1);
			probePhase = 1;
			sw.Restart ();
			SPC.SendPData ();
			SPC.WaitPersisted ();
			sw.Stop ();
			probePhase = 0;
			long persistGap = TakeGap (1), floorGap = 0;
			if (probe != null) {
				TakeGap (2);
				probePhase = 2;
				for (var floor = Stopwatch.StartNew (); floor.Elapsed < sw.Elapsed; )
					;
				probePhase = 0;
				floorGap = TakeGap (2);
			}
			SPStats st = SPC.GetStats ();
			Console.WriteLine ("{0},{1},{2},{3},{4},{5},{6},{7},{8},{9}", n, ppm, p, (long)(sw.Elapsed.TotalMilliseconds * 1e6),
				st.LastSerializeNs, st.LastBytes, st.LastObjects, (long)(stores.Elapsed.TotalMilliseconds * 1e6),
				persistGap, floorGap);
		}
		probeStop = true;
		if (probe != null)
			probe.Join ();
		return 0;
	}
}
