// CpuLatency: --sp-cpu-latency, seen from the program.
//   CpuLatency.exe read      prints "latency N": the limit every CPU is held to now,
//                            as the kernel's PM QoS reads it from /dev/cpu_dma_latency
//   CpuLatency.exe persist   an incremental snapshot of a small state, made durable
//   CpuLatency.exe restore   the state back, checked
using System;
using System.IO;
using SPersistence;

[SPersistent]
class Setpoint
{
	[SPersistentField] public int Id;
	[SPersistentField] public double Value;
	[SPersistentField] public Setpoint Next;
}

static class CpuLatency
{
	const int Count = 1000;

	static int Main (string [] args)
	{
		switch (args [0]) {
		case "read":
			using (var f = new FileStream ("/dev/cpu_dma_latency", FileMode.Open, FileAccess.Read)) {
				var b = new byte [4];
				T.Eq (4, f.Read (b, 0, 4), "bytes read from /dev/cpu_dma_latency");
				Console.WriteLine ("latency " + BitConverter.ToInt32 (b, 0));
			}
			return 0;
		case "persist":
			Setpoint head = null;
			for (int i = Count - 1; i >= 0; i--)
				head = new Setpoint { Id = i, Value = i * 0.25, Next = head };
			SPC.AddRoot (head);
			SPC.SendPData ();
			SPC.WaitPersisted ();
			return 0;
		case "restore":
			T.Check (SPC.IsWarmRestart (), "a warm restart");
			int n = 0;
			for (var s = (Setpoint)SPC.RecvPData (1); s != null; s = s.Next, n++)
				T.Check (s.Id == n && s.Value == n * 0.25, "setpoint " + n + " restored");
			T.Eq (Count, n, "setpoints restored");
			Console.WriteLine ("restored " + n);
			return 0;
		}
		return 2;
	}
}
