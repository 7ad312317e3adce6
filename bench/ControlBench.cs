// ControlBench: a control loop at 1 kHz that updates N persistent objects and
// persists them every period (issue 4, item 5).
//
//   ControlBench.exe run MECH N PERIODS FILE   MECH: sp (SendPData, in whatever
//       --sp-mode the runtime was given), bf (BinaryFormatter into FILE, written
//       and flushed every period), none (no persistence: the loop's own cost).
//       Periods are released at absolute times (clock_nanosleep, no drift); a
//       period's latency is from its release to the end of its work (update and
//       persist); a deadline miss is a latency over the period.  A loop that
//       has run 10 s stops early (BinaryFormatter on a large graph falls ever
//       further behind), and says how many periods ran.  Prints one CSV row:
//       periods,misses,p50_ns,p99_ns,max_ns,mean_ns.
//   ControlBench.exe check MECH N PERIODS FILE [last]   the persisted state is
//       one period's, whole: every object updated as often as the period's
//       number says (sp: a warm restart; bf: FILE deserialized); with "last",
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

	const int ClockMonotonic = 1, TimerAbstime = 1;

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

	// The control law, such as it is: every sensor's value follows the period.
	static void Update (Plant p, int period)
	{
		foreach (Sensor s in p.Sensors) {
			s.Value = s.Value * 0.5 + period;
			s.Stamp = period;
			s.Count++;
		}
		p.Period = period;
	}

	static int Run (string mech, int n, int periods, string file)
	{
		Plant plant = Build (n);
		var bf = new BinaryFormatter ();
		if (mech == "sp")
			SPC.AddRoot (plant);
		var latencies = new long [periods];
		Update (plant, 0);                                   // the JIT, before the first release
		for (int s = 0; s < plant.Sensors.Length; s++)
			plant.Sensors [s].Count = 0;
		long start = NowNs () + 10 * PeriodNs;
		int ran = 0;
		for (int k = 1; k <= periods; k++, ran++) {
			long release = start + (k - 1) * PeriodNs;
			if (NowNs () - start > 10000000000L)
				break;
			SleepUntil (release);
			Update (plant, k);
			if (mech == "sp") {
				SPC.SendPData ();
			} else if (mech == "bf") {
				using (var f = new FileStream (file, FileMode.Create)) {
					bf.Serialize (f, plant);
					f.Flush (true);
				}
			}
			latencies [k - 1] = NowNs () - release;
		}
		if (mech == "sp")
			SPC.WaitPersisted ();
		Array.Resize (ref latencies, ran);
		Array.Sort (latencies);
		long misses = 0, total = 0;
		foreach (long l in latencies) {
			total += l;
			if (l > PeriodNs)
				misses++;
		}
		Console.WriteLine ("{0},{1},{2},{3},{4},{5}", ran, misses, latencies [ran / 2],
			latencies [Math.Min (ran - 1, (int)(ran * 0.99))], latencies [ran - 1], total / ran);
		return 0;
	}

	static int Check (string mech, int n, int periods, string file, bool last)
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
		foreach (Sensor s in p.Sensors)
			if (s.Count != p.Period || s.Stamp != p.Period) {
				Console.Error.WriteLine ("CHECK FAILED: period {0}, but a sensor updated {1} times, stamp {2}", p.Period, s.Count, s.Stamp);
				return 1;
			}
		Console.WriteLine ("persisted period {0} of {1}", p.Period, periods);
		return 0;
	}

	static int Main (string [] args)
	{
		string mech = args [1];
		int n = int.Parse (args [2]), periods = int.Parse (args [3]);
		if (args [0] == "run")
			return Run (mech, n, periods, args [4]);
		if (args [0] == "check")
			return Check (mech, n, periods, args [4], args.Length > 5 && args [5] == "last");
		return 2;
	}
}
