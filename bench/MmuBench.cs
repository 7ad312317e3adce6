// MmuBench: what an application loses to persistence, measured by the
// application's own clock, not by spmono's counters (issue 16, item 4).
//
//   spmono [--sp-...] MmuBench.exe run OBJECTS ARRAY ROUNDS IDLE_S
//   spmono --sp-store=S MmuBench.exe check OBJECTS ARRAY LAST
//
// run: builds a state of OBJECTS small persistent objects (a tenth with a
// string) and, when ARRAY > 0, an int[ARRAY]; runs cycle 0 (warm-up: the
// JIT, and the first cycle's growth of the runtime's tables; MMU_FIRST=1
// measures that cycle too), and a few more once the tasks are pinned.  Then a
// probe thread, "the application", spins reading the monotonic clock and
// records every gap between two reads of 2 us or more, in ROUNDS rounds of two
// segments: first one with no persistence (the machine's floor, in the same
// process, the same run), as long as the cycles' segment before it (the
// first: the warm-up's pace), then one while a driver thread runs cycles back
// to back (a few hundred objects updated, SendPData, WaitPersisted) for at
// least BlockSeconds, from just before its first SendPData until its last
// WaitPersisted returned: whole cycles, the commit included.  The floor's
// segments together last at least IDLE_S seconds.  The probe
// allocates nothing and stores only into an array that cannot be persisted
// (a store into a persistable array of its own would be copied into the
// snapshot by its barrier while a cycle marks, and measure that instead).
//
// Placement: MMU_APP_CPU pins the probe, MMU_SP_CPU the runtime's tasks
// (threads named sp-task and sp-writer), MMU_DRIVER_CPU the driver, with
// sched_setaffinity.  The driver is part of the program, not of persistence:
// run-mmu.sh keeps it off the probe's CPU, so that what the probe loses is
// persistence's (and the machine's).  Output (stdout): `cpus,app,sp,driver`, `task,COMM,TID,POLICY`
// for each task pinned, then for each segment `phase,NAME,start_ns,duration_ns,reads,gaps` (NAME idle or sp),
// `probe,NAME,POLICY` (0: SCHED_OTHER), `collections,NAME,MINOR,MAJOR` (the collector's, during the segment) and `gap,NAME,start_ns,length_ns,switched` (CLOCK_MONOTONIC,
// as SPMONO_TRACE's; the probe reads it through Stopwatch, 100 ns ticks, about 28 ns a read
// where a P/Invoke of clock_gettime takes 80-95 ns; switched: 1 if the kernel took the probe
// off its CPU during the gap, getrusage's context switches, 0 if the time went to interrupts or
// the hypervisor with the probe on its CPU), and a row a cycle from SPC.GetStats:
// `cycle,increments,max_pause_ns,cycle_ns,predicted_cycle_ns,bytes,writer_ns`, `process,PID,PROBE_TID`, and `last,LAST`,
// the last cycle's number.
//
// check: the restored state is the one of cycle LAST: every object's
// stamp and count as the driver's updates left them, the array as built.
using System;
using System.Diagnostics;
using System.Threading;
using SPersistence;

[SPersistent]
public class Unit
{
	[SPersistentField] public int Count;
	[SPersistentField] public long Stamp;
	[SPersistentField] public double Level;
	[SPersistentField] public Unit Next;
	[SPersistentField] public string Tag;
}

[SPersistent]
public class Plant
{
	[SPersistentField] public Unit [] Units;
	[SPersistentField] public int [] Samples;
	[SPersistentField] public int Cycles;
}

public static class MmuBench
{
	const int UpdatesPerCycle = 300;
	const long GapNs = 2000;
	const int MaxGaps = 1 << 21;

	static volatile bool stop, ready;
	// Triples: start, length, and 1 if the kernel took the probe off its CPU during the gap
	// (a context switch: another thread ran), 0 if not (interrupts, or the hypervisor
	// stopped the virtual CPU: nothing of the process ran then); every gap from the probe's
	// start to its stop, in time order, published by counts.  IntPtr[] because it cannot be persisted: a barrier that
	// meets it while a cycle marks refuses it once and leaves it alone after that.
	// (A long[] would be copied into the snapshot by the probe's own barrier, and
	// native memory written through a pointer takes the address barrier's slow path.)
	static IntPtr [] gaps;
	// The probe's reads and gaps so far, published as it goes (x86-64 keeps stores in order: a
	// gap's entries are there before the count that covers them).  An element of an array that
	// cannot be persisted, like gaps: a store to a static field through Volatile.Write's ref
	// takes the address barrier's slow path while a cycle runs, and at 1,000,000 objects the
	// probe lost most of its time to it.
	static readonly IntPtr [] counts = new IntPtr [2];
	const int ReadsCount = 0, GapsCount = 1;
	static int probePolicy;

	static Plant Build (int objects, int array)
	{
		var p = new Plant { Units = new Unit [objects], Samples = new int [array] };
		for (int i = 0; i < objects; i++)
			p.Units [i] = new Unit { Level = i * 0.5, Tag = i % 10 == 0 ? "unit " + i : null };
		for (int i = 1; i < objects; i++)
			p.Units [i].Next = p.Units [(i * 7) % i];
		for (int i = 0; i < array; i++)
			p.Samples [i] = i * 7 + 1;
		return p;
	}

	// Cycle c's updates: a window of units, moving round them.
	static void Update (Plant p, int c)
	{
		int n = p.Units.Length;
		for (int j = 0; j < UpdatesPerCycle && j < n; j++) {
			Unit u = p.Units [(c * UpdatesPerCycle + j) % n];
			u.Count++;
			u.Stamp = c;
		}
		p.Cycles = c;
	}

	static void Pin (int tid, string env)
	{
		string cpu = Environment.GetEnvironmentVariable (env);
		if (string.IsNullOrEmpty (cpu))
			return;
		string error = Affinity.Pin (tid, int.Parse (cpu));
		if (error != null)
			Console.Error.WriteLine (error);
	}

	// The runtime's tasks, by name; each printed with its policy (`task,COMM,TID,POLICY`:
	// 0 SCHED_OTHER, 1 SCHED_FIFO), so that a run says where they ran and at what policy.
	static void PinTasks ()
	{
		var tasks = Affinity.RuntimeTasks ();
		foreach (var task in tasks) {
			Pin (task.Value, "MMU_SP_CPU");
			Console.WriteLine ("task,{0},{1},{2}", task.Key, task.Value, Affinity.sched_getscheduler (task.Value));
		}
		if (tasks.Count == 0)
			Console.Error.WriteLine ("no sp-task or sp-writer thread found: the runtime's tasks are not pinned");
	}

	static long NowNs ()
	{
		// Stopwatch reads CLOCK_MONOTONIC, in 100 ns ticks here.
		return Stopwatch.GetTimestamp () * (1000000000L / Stopwatch.Frequency);
	}

	// The application: spin on the clock until stopped, recording the gaps.  One thread for
	// the whole run, as an application's: a thread new at each segment met the first start
	// of a cycle after it with the world stopped 100-250 us instead of 20-30 (its first
	// suspension), and that was the benchmark's doing, not persistence's.
	static void Probe ()
	{
		Pin (Affinity.CurrentThread (), "MMU_APP_CPU");
		probePolicy = Affinity.sched_getscheduler (0);
		probeTid = Affinity.CurrentThread ();
		var usage = new IntPtr [Affinity.RusageWords];
		long switches = Affinity.Switches (usage);
		long last = NowNs (), n = 0;
		int found = 0;
		ready = true;
		while (!stop) {
			long now = NowNs ();
			if (now - last >= GapNs && found < MaxGaps) {
				// The system call's own time (under a microsecond) falls in the next
				// interval: a gap if it is 2 us or more, counted against persistence.
				long s = Affinity.Switches (usage);
				gaps [3 * found] = (IntPtr)last;
				gaps [3 * found + 1] = (IntPtr)(now - last);
				gaps [3 * found + 2] = (IntPtr)(s != switches ? 1 : 0);
				switches = s;
				counts [GapsCount] = (IntPtr)(++found);
			}
			last = now;
			counts [ReadsCount] = (IntPtr)(++n);
		}
	}

	static Thread probe;
	static int probeTid;
	static int printed;     // gaps before this one ended before the last segment printed

	static void StartProbe ()
	{
		gaps = new IntPtr [3 * MaxGaps];
		probe = new Thread (Probe);
		probe.Start ();
		while (!ready)
			Thread.Sleep (1);
		Thread.Sleep (20);              // the probe has spun a while before the first segment
	}

	static void StopProbe ()
	{
		stop = true;
		probe.Join ();
		// For the scheduler's account (run-mmu.sh's SCHED): whose time a gap was.
		Console.WriteLine ("process,{0},{1}", System.Diagnostics.Process.GetCurrentProcess ().Id, probeTid);
		if ((int)counts [GapsCount] == MaxGaps) {
			Console.WriteLine ("full,all,{0}", MaxGaps);
			Console.Error.WriteLine ("more than {0} gaps, the rest not recorded", MaxGaps);
		}
	}

	// Runs work as a segment of phase `name` and prints it with its gaps (cut to it); returns
	// its length in seconds.  The segment is the driver's time from before to after the work.
	static double Measure (string name, Action work)
	{
		int minor0 = GC.CollectionCount (0), major0 = GC.CollectionCount (1);
		long reads0 = (long)counts [ReadsCount], t0 = NowNs ();
		work ();
		long t1 = NowNs (), reads1 = (long)counts [ReadsCount];
		int minor = GC.CollectionCount (0) - minor0, major = GC.CollectionCount (1) - major0;
		Thread.Sleep (5);               // the probe has seen the segment's end (a gap across it is recorded once it ends)
		int n = (int)counts [GapsCount];
		var inside = new System.Collections.Generic.List<string> ();
		for (int i = printed; i < n; i++) {
			long start = (long)gaps [3 * i], end = start + (long)gaps [3 * i + 1];
			if (end <= t0)
				continue;
			if (start >= t1)
				break;
			start = Math.Max (start, t0);
			end = Math.Min (end, t1);
			inside.Add (string.Format ("gap,{0},{1},{2},{3}", name, start, end - start, (long)gaps [3 * i + 2]));
		}
		while (printed < n && (long)gaps [3 * printed] + (long)gaps [3 * printed + 1] <= t1)
			printed++;
		// reads: the probe's intervals, the gaps among them; together they cover the segment.
		Console.WriteLine ("phase,{0},{1},{2},{3},{4}", name, t0, t1 - t0, reads1 - reads0, inside.Count);
		Console.WriteLine ("probe,{0},{1}", name, probePolicy);
		Console.WriteLine ("collections,{0},{1},{2}", name, minor - major, major);
		foreach (string line in inside)
			Console.WriteLine (line);
		return (t1 - t0) / 1e9;
	}

	// One cycle of the driver: updates, SendPData, WaitPersisted; returns its statistics' row.
	static string Cycle (Plant p, int c)
	{
		Update (p, c);
		SPC.SendPData ();
		SPC.WaitPersisted ();
		SPStats s = SPC.GetStats ();
		return string.Format ("cycle,{0},{1},{2},{3},{4},{5}", s.CycleIncrements, s.CycleMaxPauseNs, s.CycleNs,
					   s.PredictedCycleNs, s.LastBytes, s.CycleWriterNs);
	}

	// Cycles run under the probe before the measured ones (see Run): with the warm-up's
	// first, enough for a file store keeping 2 snapshots to write over a spare from then on
	// (its first 4 commits allocate their files, and the model would learn that cost).
	const int WarmCycles = 4;

	// A segment of cycles lasts at least this long: windows of 100 ms fit in it.
	const double BlockSeconds = 0.3;

	static int Run (int objects, int array, int rounds, double idleSeconds)
	{
		Console.WriteLine ("cpus,{0},{1},{2}", Environment.GetEnvironmentVariable ("MMU_APP_CPU") ?? "any",
				   Environment.GetEnvironmentVariable ("MMU_SP_CPU") ?? "any", Environment.GetEnvironmentVariable ("MMU_DRIVER_CPU") ?? "any");
		Pin (Affinity.CurrentThread (), "MMU_DRIVER_CPU");
		Plant p = Build (objects, array);
		SPC.AddRoot (p);
		StartProbe ();
		// Cycle 0, the warm-up: the driver's code compiled (under --sp-barrier=marking the
		// class library is compiled too, not taken from its AOT image: tens of ms of the
		// driver's own CPU, on the probe's CPU when they share one), the runtime's tables
		// grown to the state, the tasks started and pinned.  MMU_FIRST=1 measures the
		// first cycle itself instead (the tasks are then pinned after it).
		bool first = Environment.GetEnvironmentVariable ("MMU_FIRST") == "1";
		double floorSeconds = idleSeconds;
		if (!first) {
			Cycle (p, 0);
			PinTasks ();
			// A few more with the tasks where they stay and the probe spinning (phase "warm",
			// not reported): the cost model predicts a cycle from the ones before it, and a
			// program's conditions do not change between its cycles as the warm-up's did.
			// The first cycle ran unpinned (the SP task and the writer on two CPUs): the
			// predictions for cycle 1 were 16-58% short.  Then, with the tasks pinned but no
			// probe, the tasks' CPU idled between increments, and waking an idle virtual CPU
			// made every unit of work dearer: the SP task's wake-up 49-75 us against 28-33 us
			// beside the spinning probe, predictions for cycle 1 up to 113% long.
			double warm = Measure ("warm", () => {
				for (int c = 0; c < WarmCycles; c++) {
					SPC.SendPData ();
					SPC.WaitPersisted ();
				}
			});
			// The floor at least as long as the cycles it is compared with: the machine's rare
			// events (perf on this VM: a 4 ms pass of the kernel's conntrack gc_worker every few
			// seconds, rcu_preempt runs of 3 ms, kdamond 1 ms, all on the probe's CPU, none of
			// persistence) then have the same chance to land in either phase.  With 3 s of floor
			// against 4.3-6.7 s of cycles at 1,000,000 objects, they landed in the cycles more often.
			floorSeconds = Math.Max (idleSeconds, warm * rounds / WarmCycles);   // a cycle's time a round
		}
		// The floor and the cycles alternate, a round each: a floor segment, then a segment of
		// cycles back to back, at least BlockSeconds long.  Each floor segment is as long as the
		// cycles' segment before it (the first, as the warm-up's pace says), so the machine's
		// drifts and rare events (above) are as likely to land in either phase.  A floor taken
		// once before all the cycles (until session 27) saw another stretch of the machine's
		// time than the cycles it was compared with.
		double block = Math.Max (floorSeconds / rounds, BlockSeconds);
		var rows = new System.Collections.Generic.List<string> ();
		int next = first ? 0 : 1;
		for (int round = 0; round < rounds; round++) {
			GC.Collect ();
			// The warm-up's old snapshots are removed after its commit, a slice a period: let them go first.
			Thread.Sleep (300);
			Measure ("idle", () => Thread.Sleep ((int)(block * 1000)));
			double took = Measure ("sp", () => {
				long start = NowNs ();
				do
					rows.Add (Cycle (p, next++));
				while (NowNs () - start < BlockSeconds * 1e9);
			});
			block = Math.Max (took, idleSeconds / rounds);
			if (first && round == 0)
				PinTasks ();
		}
		StopProbe ();
		foreach (string row in rows)
			Console.WriteLine (row);
		Console.WriteLine ("last,{0}", next - 1);
		return 0;
	}

	static int Check (int objects, int array, int cycles)
	{
		Plant want = Build (objects, array);
		for (int c = 0; c <= cycles; c++)
			Update (want, c);
		Plant got = (Plant)SPC.RecvPData (1);
		if (got.Cycles != cycles || got.Units.Length != objects || got.Samples.Length != array) {
			Console.Error.WriteLine ("CHECK FAILED: cycle {0} of {1}, {2} units, {3} samples", got.Cycles, cycles, got.Units.Length, got.Samples.Length);
			return 1;
		}
		for (int i = 0; i < objects; i++) {
			Unit w = want.Units [i], g = got.Units [i];
			if (w.Count != g.Count || w.Stamp != g.Stamp || w.Level != g.Level || w.Tag != g.Tag ||
			    (i > 0 && g.Next != got.Units [(i * 7) % i])) {
				Console.Error.WriteLine ("CHECK FAILED: unit {0}", i);
				return 1;
			}
		}
		for (int i = 0; i < array; i++)
			if (got.Samples [i] != want.Samples [i]) {
				Console.Error.WriteLine ("CHECK FAILED: sample {0}", i);
				return 1;
			}
		Console.WriteLine ("check ok: cycle {0}", cycles);
		return 0;
	}

	static int Main (string [] args)
	{
		int objects = int.Parse (args [1]), array = int.Parse (args [2]), cycles = int.Parse (args [3]);
		if (args [0] == "run")
			return Run (objects, array, cycles, double.Parse (args [4], System.Globalization.CultureInfo.InvariantCulture));
		if (args [0] == "check")
			return Check (objects, array, cycles);
		return 2;
	}
}
