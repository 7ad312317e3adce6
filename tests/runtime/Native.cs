// Native: a P/Invoke's native code runs GC-safe, so a cycle can start while
// it still writes into the array it was given.  No barrier sees those
// writes: the cycle's start logs the arguments of the native calls in
// flight, and a snapshot that reaches one is refused, never torn.
//
//   Native.exe write N CYCLES KIND   a worker calls native code on the
//       state's array without end while the main thread takes CYCLES
//       snapshots; KIND:
//       fill  native code writes pass p into A [0..N) in a scattered order,
//             call after call: most cycles start inside one and must be
//             refused (the SP task reads the array piece by piece while the
//             native code goes on writing)
//       read  native code only reads A, declared [In]: nothing is refused
//       ref   native code writes the state's Stamp through a ref
//       late  no worker: the main thread starts a cycle, then at once
//             fills A in native code, called from a method no barrier
//             mode selects; the call's barrier must keep A's state at
//             SendPData for the snapshot (the SP task is still reading A)
//   Native.exe check N KIND   (warm restart) the snapshot is one instant's
//       state: for fill, the elements written by pass q are exactly the
//       first k of the scattered order, the rest are q - 1's.  A snapshot
//       read while native code wrote mixes instants piece by piece.  For
//       late, every element is pass 1's.
using System;
using System.Runtime.InteropServices;
using System.Threading;
using SPersistence;

[SPersistent]
class State
{
	[SPersistentField] public int [] A;
	[SPersistentField] public int Pass;
	[SPersistentField] public int Stamp;

	[SPersistentUpdate]
	public void SetPass (int p)
	{
		Pass = p;
	}
}

static class Program
{
	const int Step = 7919;     // prime, and no test size is a multiple of it

	[DllImport ("spnative")]
	static extern void spnative_scattered_fill (int [] a, int n, int v, int step, int pauses, int us);

	[DllImport ("spnative")]
	static extern long spnative_slow_sum ([In] int [] a, int n, int us);

	[DllImport ("spnative")]
	static extern void spnative_slow_set (ref int slot, int v, int us);

	static volatile bool stop;

	static void Work (State s, string kind)
	{
		int n = s.A.Length;
		for (int p = 1; !stop; p++) {
			if (kind == "fill")
				spnative_scattered_fill (s.A, n, p, Step, 0, 0);
			else if (kind == "read")
				T.Eq (7L * n, spnative_slow_sum (s.A, n, 3000), "sum");
			else
				spnative_slow_set (ref s.Stamp, p, 3000);
			s.SetPass (p);
		}
	}

	static int WriteLate (int n)
	{
		var s = new State { A = new int [n] };
		spnative_scattered_fill (s.A, n, 1, Step, 0, 0);
		s.SetPass (1);
		SPC.AddRoot (s);
		SPC.SendPData ();
		spnative_scattered_fill (s.A, n, 2, Step, 0, 0);
		SPC.WaitPersisted ();              // the call's barrier ran inside the cycle: nothing to refuse
		Console.WriteLine ("native late: A filled with pass 2 while the cycle of pass 1 ran");
		return 0;
	}

	static int Write (int n, int cycles, string kind)
	{
		if (kind == "late")
			return WriteLate (n);
		var s = new State { A = new int [n] };
		if (kind == "read")
			for (int i = 0; i < n; i++)
				s.A [i] = 7;
		SPC.AddRoot (s);
		SPC.SendPData ();          // a snapshot to fall back on
		SPC.WaitPersisted ();
		var worker = new Thread (() => Work (s, kind));
		worker.Start ();
		while (s.Pass < 1)
			Thread.Sleep (1);
		int refused = 0;
		for (int c = 0; c < cycles; c++) {
			if (!T.Persist ("by native code"))
				refused++;
			Thread.Sleep (1);
		}
		stop = true;
		worker.Join ();
		if (kind == "read")
			T.Eq (0, refused, "cycles refused while native code only read ([In])");
		else
			T.Check (refused > 0, "some cycle started while native code wrote, and was refused");
		Console.WriteLine ("native {0}: {1} cycles, {2} refused, {3} passes", kind, cycles, refused, s.Pass);
		return 0;
	}

	static int Check (int n, string kind)
	{
		T.Check (SPC.IsWarmRestart (), "a warm restart");
		var s = (State)SPC.RecvPData (1);
		if (kind == "late") {
			for (int i = 0; i < n; i++)
				T.Eq (1, s.A [i], "A [" + i + "], filled by native code after SendPData");
			Console.WriteLine ("the state at SendPData: pass 1 everywhere");
			return 0;
		}
		if (kind != "fill") {
			Console.WriteLine ("restored: pass {0}, stamp {1}", s.Pass, s.Stamp);
			return 0;
		}
		int q = s.A [0], k = 0;
		while (k < n && s.A [(int)((long)k * Step % n)] == q)
			k++;
		for (int j = k; j < n; j++) {
			int i = (int)((long)j * Step % n);
			T.Eq (q - 1, s.A [i], "A [" + i + "], order " + j + " (pass " + q + " written up to order " + k + ")");
		}
		T.Check (s.Pass == q - 1 || (k == n && s.Pass == q), "Pass " + s.Pass + " with pass " + q + " written up to order " + k);
		Console.WriteLine ("one instant: pass {0} written up to order {1} of {2}", q, k, n);
		return 0;
	}

	static int Main (string [] args)
	{
		int n = int.Parse (args [1]);
		return args [0] == "write" ? Write (n, int.Parse (args [2]), args [3]) : Check (n, args [2]);
	}
}
