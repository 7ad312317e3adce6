// ControlBench: a control loop at 1 kHz that updates N persistent objects and
// persists them every period (issue 4, item 5).  N may be written N/K: the
// state is N objects, of which each period updates K (a window that moves
// round the sensors by K a period), as a loop that touches part of its state.
//
//   ControlBench.exe run MECH N PERIODS FILE   MECH: sp (SendPData, in whatever
//       --sp-mode the runtime was given), bf (BinaryFormatter into FILE, written
//       and flushed every period), none (no persistence: the loop's own cost).
//       Before the first period: one update and one persistence (warm-up:
//       the JIT, and the runtime's first cycle growing its tables).
//       Periods are released at absolute times (clock_nanosleep, no drift); a
//       period's latency is from its release to the end of its work (update and
//       persist); a deadline miss is a latency over the period.  A loop that
//       has run 10 s stops early (BinaryFormatter on a large graph falls ever
//       further behind), and says how many periods ran.  Prints one CSV row:
//       periods,misses,p50_ns,p99_ns,max_ns,mean_ns,unschedulable,predicted_cycle_ns,cycle_ns
//       (the last three: the cost model's count of SendPData calls sooner than a
//       cycle completes, its prediction and the cycle's length, of the last cycle;
//       0 unless SP incremental).
//   ControlBench.exe check MECH N PERIODS FILE [last]   the persisted state is
//       one period's, whole: every object updated as often, and last in the
//       period, that the period's number says (sp: a warm restart; bf: FILE
//       deserialized); with "last",
//       the last period's (stop-the-world SP and BinaryFormatter persist every
//       period; incremental SP skips a SendPData made while a cycle is being
//       written).  Exits 1 otherwise.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.InteropServices;
using System.Runtime.Serialization.Formatters.Binary;
using SPersistence;

[Serializable, SPersistent]
public class Sensor
{
	[SPersistentField] public double Value;
	[SPersistentField] public long Stamp;
	[SPersistentField] public int Count;
}

[Serializable, SPersistent]
public class Plant
{
	[SPersistentField] public Sensor [] Sensors;
	[SPersistentField] public int Period;
}

static class ControlBench
{
	const long PeriodNs = 1000000;

	[StructLayout (LayoutKind.Sequential)]
	struct Timespec
	{
		public long Sec, Nsec;
	}

	[DllImport ("libc", SetLastError = true)]
	static extern int clock_nanosleep (int clock, int flags, ref Timespec request, IntPtr remain);

	[DllImport ("libc")]
	static extern int clock_gettime (int clock, out Timespec now);

	[DllImport ("libc")]
	static extern int getpid ();

	const int ClockMonotonic = 1, TimerAbstime = 1;

	const int ClockThreadCpu = 3;

	// The loop thread's CPU time: on this VM's kernel (paravirtual steal accounting) time the
	// hypervisor took from a running thread is left out, where the scheduler sees it running.
	static long ThreadCpuNs ()
	{
		Timespec t;
		clock_gettime (ClockThreadCpu, out t);
		return t.Sec * 1000000000L + t.Nsec;
	}

	static long NowNs ()
	{
		Timespec t;
		clock_gettime (ClockMonotonic, out t);
		return t.Sec * 1000000000L + t.Nsec;
	}

	static void SleepUntil (long ns)
	{
		var t = new Timespec { Sec = ns / 1000000000L, Nsec = ns % 1000000000L };
		while (clock_nanosleep (ClockMonotonic, TimerAbstime, ref t, IntPtr.Zero) != 0)
			;
	}

	static Plant Build (int n)
	{
		var p = new Plant { Sensors = new Sensor [n] };
		for (int i = 0; i < n; i++)
			p.Sensors [i] = new Sensor ();
		return p;
	}

	// The control law, such as it is: every sensor in the period's window follows the period.
	static void Update (Plant p, int period, int from, int count)
	{
		Sensor [] sensors = p.Sensors;
		for (int j = 0, i = from; j < count; j++, i = i + 1 == sensors.Length ? 0 : i + 1) {
			Sensor s = sensors [i];
			s.Value = s.Value * 0.5 + period;
			s.Stamp = period;
			s.Count++;
		}
		p.Period = period;
	}

	// The first sensor period k (1, 2, ...) updates, K a period.
	static int WindowStart (int k, int n, int touched)
	{
		return (int)((long)(k - 1) * touched % n);
	}

	static int Run (string mech, int n, int touched, int periods, string file)
	{
		Plant plant = Build (n);
		var bf = new BinaryFormatter ();
		if (mech == "sp")
			SPC.AddRoot (plant);
		var latencies = new long [periods];
		// The trace for CONTROL_TRACE in arrays that cannot be persisted (IntPtr), so that measuring
		// adds nothing to the snapshots: arrays of primitives stored into while a cycle runs are
		// the barrier's to look at (set aside, or in a delta written, docs/INCREMENTAL.md).
		var releases = new IntPtr [periods];
		var woke = new IntPtr [periods];
		var updated = new IntPtr [periods];
		var updateCpu = new IntPtr [periods];
		Update (plant, 0, 0, n);                             // the JIT, before the first release
		long baselineCpu = UpdateCpuBaseline (plant, n, touched);
		for (int s = 0; s < plant.Sensors.Length; s++)
			plant.Sensors [s].Count = 0;
		// Persistence before the first release too: the JIT of its path, and
		// the runtime's first cycle, which grows its tables to the state's size
		// (docs/INCREMENTAL.md: "Growth in the first cycle").  Twice for SP: with
		// --sp-delta=on the second is a delta, whose path the loop takes.  (The
		// reset above came after them until session 18: with deltas, period 1
		// then persisted every sensor anew, a full snapshot of 45-60 ms.)
		if (mech == "sp") {
			for (int i = 0; i < 2; i++) {
				SPC.SendPData ();
				SPC.WaitPersisted ();
			}
		} else if (mech == "bf") {
			bf.Serialize (new MemoryStream (), plant);
		}
		// A real-time program settles its heap before its first release: the state and the runtime's
		// tables were just allocated (with SP, a LID table of the state's size, 10 MB at 1,000,000
		// objects, in the large-object space), and the collector's major collection they started
		// would otherwise finish in the loop's periods, 4-14 ms with the world stopped (session 19,
		// every mechanism, the loop that persists nothing included).
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
		GC.Collect ();
		long start = NowNs () + 10 * PeriodNs;
		int ran = 0;
		for (int k = 1; k <= periods; k++, ran++) {
			long release = start + (k - 1) * PeriodNs;
			if (NowNs () - start > 10000000000L)
				break;
			SleepUntil (release);
			woke [k - 1] = (IntPtr)(NowNs () - release);
			long cpu0 = ThreadCpuNs ();
			Update (plant, k, WindowStart (k, n, touched), touched);
			updated [k - 1] = (IntPtr)(NowNs () - release);
			updateCpu [k - 1] = (IntPtr)(ThreadCpuNs () - cpu0);
			if (mech == "sp") {
				SPC.SendPData ();
			} else if (mech == "bf") {
				using (var f = new FileStream (file, FileMode.Create)) {
					bf.Serialize (f, plant);
					f.Flush (true);
				}
			}
			latencies [k - 1] = NowNs () - release;
			releases [k - 1] = (IntPtr)release;
		}
		if (mech == "sp")
			SPC.WaitPersisted ();
		Array.Resize (ref latencies, ran);
		WritePeriods (releases, woke, updated, latencies, updateCpu, baselineCpu, ran);
		Array.Sort (latencies);
		long misses = 0, total = 0;
		foreach (long l in latencies) {
			total += l;
			if (l > PeriodNs)
				misses++;
		}
		// The cost model's count (SendPData calls sooner than a cycle can complete), its last
		// prediction, and the periods whose SendPData took no snapshot (a cycle still ran).
		long unschedulable = 0, predicted = 0, cycle = 0, skipped = 0;
		if (mech == "sp") {
			SPStats s = SPC.GetStats ();
			unschedulable = s.UnschedulableSends;
			predicted = s.PredictedCycleNs;
			cycle = s.CycleNs;
			skipped = s.SendPDataSkips;
		}
		Console.WriteLine ("{0},{1},{2},{3},{4},{5},{6},{7},{8},{9}", ran, misses, latencies [ran / 2],
			latencies [Math.Min (ran - 1, (int)(ran * 0.99))], latencies [ran - 1], total / ran, unschedulable, predicted, cycle,
			skipped);
		return 0;
	}

	// The CPU time of an update with no cycle running (no barrier's slow path), the median of 11
	// over the first window, before the loop (the sensors' counts are reset after it).
	static long UpdateCpuBaseline (Plant plant, int n, int touched)
	{
		var cpu = new long [11];
		for (int i = 0; i < cpu.Length; i++) {
			long c0 = ThreadCpuNs ();
			Update (plant, 0, WindowStart (1, n, touched), touched);
			cpu [i] = ThreadCpuNs () - c0;
		}
		Array.Sort (cpu);
		return cpu [cpu.Length / 2];
	}

	// CONTROL_TRACE=FILE: the loop's thread ("loop,TID": the process's main thread, whose id is
	// the process's) and its update's CPU time with no cycle ("baseline,NS"), then every period's
	// release (ns, CLOCK_MONOTONIC, as SPMONO_TRACE's and perf's -k mono), when after it the loop
	// woke, ended its update and ended its period, and the update's CPU time: for the
	// scheduler's account of each late period (bench/run-control.sh).
	static void WritePeriods (IntPtr [] releases, IntPtr [] woke, IntPtr [] updated, long [] latencies, IntPtr [] updateCpu,
		long baselineCpu, int ran)
	{
		string path = Environment.GetEnvironmentVariable ("CONTROL_TRACE");
		if (string.IsNullOrEmpty (path))
			return;
		using (var w = new StreamWriter (path)) {
			w.WriteLine ("loop,{0}", getpid ());
			w.WriteLine ("baseline,{0}", baselineCpu);
			for (int i = 0; i < ran; i++)
				w.WriteLine ("{0},{1},{2},{3},{4}", (long)releases [i], (long)woke [i], (long)updated [i], latencies [i], (long)updateCpu [i]);
		}
	}

	static int Check (string mech, int n, int touched, int periods, string file, bool last)
	{
		Plant p;
		if (mech == "sp") {
			if (!SPC.IsWarmRestart ()) { Console.Error.WriteLine ("CHECK FAILED: no snapshot"); return 1; }
			p = (Plant)SPC.RecvPData (1);
		} else {
			using (var f = File.OpenRead (file))
				p = (Plant)new BinaryFormatter ().Deserialize (f);
		}
		if (p.Period < 1 || p.Period > periods || (last && p.Period != periods) || p.Sensors.Length != n) {
			Console.Error.WriteLine ("CHECK FAILED: period {0} of {1}, {2} sensors of {3}", p.Period, periods, p.Sensors.Length, n);
			return 1;
		}
		// Replay the windows up to the persisted period.
		var count = new int [n];
		var stamp = new long [n];
		for (int k = 1; k <= p.Period; k++)
			for (int j = 0, i = WindowStart (k, n, touched); j < touched; j++, i = i + 1 == n ? 0 : i + 1) {
				count [i]++;
				stamp [i] = k;
			}
		for (int i = 0; i < n; i++) {
			Sensor s = p.Sensors [i];
			if (s.Count != count [i] || s.Stamp != stamp [i]) {
				Console.Error.WriteLine ("CHECK FAILED: period {0}, but sensor {1} updated {2} times (not {3}), stamp {4} (not {5})",
					p.Period, i, s.Count, count [i], s.Stamp, stamp [i]);
				return 1;
			}
		}
		Console.WriteLine ("persisted period {0} of {1}", p.Period, periods);
		return 0;
	}

	static int Main (string [] args)
	{
		string mech = args [1];
		string [] size = args [2].Split ('/');
		int n = int.Parse (size [0]), touched = size.Length > 1 ? int.Parse (size [1]) : n, periods = int.Parse (args [3]);
		if (touched < 1 || touched > n) {
			Console.Error.WriteLine ("N/K: K must be 1 to N");
			return 2;
		}
		if (args [0] == "run")
			return Run (mech, n, touched, periods, args [4]);
		if (args [0] == "check")
			return Check (mech, n, touched, periods, args [4], args.Length > 5 && args [5] == "last");
		return 2;
	}
}
