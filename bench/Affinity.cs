// Affinity: where the benchmarks' threads and the runtime's tasks run
// (compiled into MmuBench.exe and LongStoreBench.exe).
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;

static class Affinity
{
	[DllImport ("libc", SetLastError = true)]
	static extern int sched_setaffinity (int pid, IntPtr size, ref ulong mask);

	[DllImport ("libc")]
	static extern int syscall (long number);

	[DllImport ("libc")]
	public static extern int sched_getscheduler (int pid);

	[DllImport ("libc")]
	static extern int getrusage (int who, [In, Out] IntPtr [] usage);

	const long SysGettid = 186;     // x86-64
	const int RusageThread = 1;
	public const int RusageWords = 18;      // struct rusage, x86-64: two timevals, 14 longs

	// How many times the kernel took the calling thread off its CPU (voluntary and
	// involuntary context switches, ru_nvcsw + ru_nivcsw): a gap in which this did not
	// change went to interrupts or to the hypervisor, not to another thread.  usage: a
	// buffer of RusageWords, allocated once (IntPtr[]: it cannot be persisted).
	public static long Switches (IntPtr [] usage)
	{
		getrusage (RusageThread, usage);
		return (long)usage [16] + (long)usage [17];
	}

	public static int CurrentThread () { return syscall (SysGettid); }

	// Thread tid on CPU cpu only; the error, or null.
	public static string Pin (int tid, int cpu)
	{
		ulong mask = 1UL << cpu;
		if (sched_setaffinity (tid, (IntPtr)8, ref mask) == 0)
			return null;
		return "sched_setaffinity (" + tid + ", cpu " + cpu + ") failed: errno " + Marshal.GetLastWin32Error ();
	}

	// The runtime's tasks (threads named sp-task and sp-writer): name and thread id.
	public static List<KeyValuePair<string, int>> RuntimeTasks ()
	{
		var tasks = new List<KeyValuePair<string, int>> ();
		foreach (string dir in Directory.GetDirectories ("/proc/self/task")) {
			string comm = File.ReadAllText (dir + "/comm").Trim ();
			if (comm == "sp-task" || comm == "sp-writer")
				tasks.Add (new KeyValuePair<string, int> (comm, int.Parse (Path.GetFileName (dir))));
		}
		return tasks;
	}
}
