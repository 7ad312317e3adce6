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
//       probe_persist_ns,probe_stores_ns
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
//       thread of the program, this one too) and probe_stores_ns (while the
//       period's stores ran, nothing persisted: the floor in the same run).
//       Without it both are 0.
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

	// The probe's longest gap in each phase (0: the period's stores, 1: persisting), in Stopwatch ticks.
	static long [] probeGap = new long [2];
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
			long now = Stopwatch.GetTimestamp ();
			int phase = probePhase;
			if (now - last > Volatile.Read (ref probeGap [phase]))
				Volatile.Write (ref probeGap [phase], now - last);
			last = now;
		}
	}

	// The longest gap of phase since the last call, in ns; it starts again.
	static long TakeGap (int phase)
	{
		return (long)(Interlocked.Exchange (ref probeGap [phase], 0) * (1e9 / Stopwatch.Frequency));
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
			probePhase = 0;
			TakeGap (0);
			stores.Restart ();
			for (int k = 0; k < changes; k++)
				s.Cells [r.Next (n)].Value = p;
			stores.Stop ();
			probePhase = 1;
			long storesGap = TakeGap (0);
			TakeGap (1);
			sw.Restart ();
			SPC.SendPData ();
			SPC.WaitPersisted ();
			sw.Stop ();
			long persistGap = TakeGap (1);
			SPStats st = SPC.GetStats ();
			Console.WriteLine ("{0},{1},{2},{3},{4},{5},{6},{7},{8},{9}", n, ppm, p, (long)(sw.Elapsed.TotalMilliseconds * 1e6),
				st.LastSerializeNs, st.LastBytes, st.LastObjects, (long)(stores.Elapsed.TotalMilliseconds * 1e6),
				persistGap, storesGap);
		}
		probeStop = true;
		if (probe != null)
			probe.Join ();
		return 0;
	}
}
