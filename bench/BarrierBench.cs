// BarrierBench: the cost of the store barrier when no cycle runs (issue 3:
// annotating within 1%, marking within 5% of Debian's stock mono).
//
//   mono|spmono [options] BarrierBench.exe LABEL ITERATIONS REPS [cycles]
//
// "cycles" (spmono, incremental): every array, collection and Item the
// kernels store into is part of a persistent root, and a thread persists it
// cycle after cycle (SendPData, WaitPersisted) while the kernels run, so
// their stores meet the barrier's slow path: the cost with cycles running
// back to back.
//
// Each kernel is a store-heavy loop; it runs twice, as code in an ordinary
// class (what `annotating` leaves alone and `marking` guards) and as an
// [SPersistentUpdate] method of an [SPersistent] class (what every mode
// guards).  Prints CSV rows: label,kernel,where,rep,ns_per_iteration.
// Under stock mono the attributes are inert (SPersistence.dll is referenced
// only for their definitions) and no barrier exists.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using SPersistence;

[SPersistent]
public class Item {
	[SPersistentField] public int Count;
	[SPersistentField] public double Level;
	[SPersistentField] public Item Next;
}

// The kernels, one method each so that the JIT compiles each loop alone.
// Each returns something derived from its stores, so nothing is dead code.
public static class Plain {
	public static long Fields (Item [] items, int n)
	{
		int mask = items.Length - 1;
		for (int i = 0; i < n; i++) {
			Item it = items [i & mask];
			it.Count = i;
			it.Level = i;
		}
		return items [0].Count;
	}

	public static long RefFields (Item [] items, int n)
	{
		int mask = items.Length - 1;
		for (int i = 0; i < n; i++)
			items [i & mask].Next = items [(i + 1) & mask];
		return items [0].Next.Count;
	}

	public static long Ints (int [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = i;
		return a [0];
	}

	public static long Doubles (double [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = i;
		return (long)a [0];
	}

	public static long Bytes (byte [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = (byte)i;
		return a [1];
	}

	public static long Refs (Item [] a, Item [] from, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = from [(i * 7) & mask];
		return a [0].Count;
	}

	public static long ListUpdates (List<int> list, int n)
	{
		int count = list.Count;
		for (int i = 0; i < n; i++)
			list [i % count] = i;
		return list [0];
	}

	public static long DictionaryUpdates (Dictionary<int, int> dict, int n)
	{
		for (int i = 0; i < n; i++)
			dict [i & 1023] = i;
		return dict [0];
	}
}

// The same loops inside the persistent class's own annotated methods: copies on
// purpose, since the barrier mode decides method by method.
[SPersistent]
public class Guarded {
	[SPersistentUpdate]
	public static long Fields (Item [] items, int n)
	{
		int mask = items.Length - 1;
		for (int i = 0; i < n; i++) {
			Item it = items [i & mask];
			it.Count = i;
			it.Level = i;
		}
		return items [0].Count;
	}

	[SPersistentUpdate]
	public static long RefFields (Item [] items, int n)
	{
		int mask = items.Length - 1;
		for (int i = 0; i < n; i++)
			items [i & mask].Next = items [(i + 1) & mask];
		return items [0].Next.Count;
	}

	[SPersistentUpdate]
	public static long Ints (int [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = i;
		return a [0];
	}

	[SPersistentUpdate]
	public static long Doubles (double [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = i;
		return (long)a [0];
	}

	[SPersistentUpdate]
	public static long Bytes (byte [] a, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = (byte)i;
		return a [1];
	}

	[SPersistentUpdate]
	public static long Refs (Item [] a, Item [] from, int n)
	{
		int mask = a.Length - 1;
		for (int i = 0; i < n; i++)
			a [i & mask] = from [(i * 7) & mask];
		return a [0].Count;
	}
}

[SPersistent]
public class Everything {
	[SPersistentField] public Item [] Items, Refs;
	[SPersistentField] public int [] Ints;
	[SPersistentField] public double [] Doubles;
	[SPersistentField] public byte [] Bytes;
	[SPersistentField] public List<int> List;
	[SPersistentField] public Dictionary<int, int> Dict;
}

public static class BarrierBench {
	const int Size = 1024;      // power of two: stay in L1/L2, measure the stores, not the misses

	static long sink;

	static void Measure (string label, string kernel, string where, int reps, int n, Func<int, long> run)
	{
		sink += run (n / 10);       // compiled and warm before timing
		for (int r = 1; r <= reps; r++) {
			var sw = Stopwatch.StartNew ();
			sink += run (n);
			sw.Stop ();
			double ns = sw.Elapsed.TotalMilliseconds * 1e6 / n;
			Console.WriteLine ("{0},{1},{2},{3},{4:F4}", label, kernel, where, r, ns);
		}
	}

	// Code placement: a kernel's loop runs at different speeds at different
	// addresses (seen here: the same machine code at 0.54 and 0.81 ns a
	// store, from one build to the next).  With BARRIER_BENCH_SHIFT=k the
	// first k of these methods are compiled before the kernels, which then
	// land elsewhere; run-barrier.sh changes k every round, so that each
	// runtime's figures span several placements.
	static long Spacer0 (int n) { long s = 0; for (int i = 0; i < n; i++) s += i; return s; }
	static long Spacer1 (int n) { long s = 1; for (int i = 0; i < n; i++) s = s * 3 + i; return s; }
	static long Spacer2 (int n) { long s = 2; for (int i = 0; i < n; i++) s ^= (long)i << (i & 7); return s; }
	static long Spacer3 (int n) { double d = 0; for (int i = 0; i < n; i++) d += i * 0.5; return (long)d; }
	static long Spacer4 (int n) { long s = 0; for (int i = 0; i < n; i++) s += i % 7 == 0 ? i : -i; return s; }
	static long Spacer5 (int n) { long s = 5; for (int i = 0; i < n; i++) s = (s >> 1) + i * i; return s; }
	static long Spacer6 (int n) { int [] a = new int [4]; for (int i = 0; i < n; i++) a [i & 3] += i; return a [0] + a [3]; }
	static long Spacer7 (int n) { string t = ""; for (int i = 0; i < n; i++) t += i; return t.Length; }

	static void ShiftCode ()
	{
		var spacers = new Func<int, long> [] { Spacer0, Spacer1, Spacer2, Spacer3, Spacer4, Spacer5, Spacer6, Spacer7 };
		string env = Environment.GetEnvironmentVariable ("BARRIER_BENCH_SHIFT");
		int shift = string.IsNullOrEmpty (env) ? 0 : int.Parse (env) % (spacers.Length + 1);
		for (int k = 0; k < shift; k++)
			sink += spacers [k] (3);
	}

	static int Main (string [] args)
	{
		ShiftCode ();
		if (args.Length != 3 && !(args.Length == 4 && args [3] == "cycles")) {
			Console.Error.WriteLine ("usage: BarrierBench.exe LABEL ITERATIONS REPS [cycles]");
			return 2;
		}
		string label = args [0];
		int n = int.Parse (args [1]), reps = int.Parse (args [2]);
		var items = new Item [Size];
		var refs = new Item [Size];
		for (int i = 0; i < Size; i++)
			items [i] = new Item ();
		var ints = new int [Size];
		var doubles = new double [Size];
		var bytes = new byte [Size];
		var list = new List<int> (new int [Size]);
		var dict = new Dictionary<int, int> ();
		for (int i = 0; i < 1024; i++)
			dict [i] = 0;
		var persister = args.Length == 4 ? PersistBackToBack (new Everything {
			Items = items, Refs = refs, Ints = ints, Doubles = doubles, Bytes = bytes, List = list, Dict = dict }) : null;
		Measure (label, "stfld i4+r8", "plain", reps, n, k => Plain.Fields (items, k));
		Measure (label, "stfld i4+r8", "guarded", reps, n, k => Guarded.Fields (items, k));
		Measure (label, "stfld ref", "plain", reps, n, k => Plain.RefFields (items, k));
		Measure (label, "stfld ref", "guarded", reps, n, k => Guarded.RefFields (items, k));
		Measure (label, "stelem i4", "plain", reps, n, k => Plain.Ints (ints, k));
		Measure (label, "stelem i4", "guarded", reps, n, k => Guarded.Ints (ints, k));
		Measure (label, "stelem r8", "plain", reps, n, k => Plain.Doubles (doubles, k));
		Measure (label, "stelem r8", "guarded", reps, n, k => Guarded.Doubles (doubles, k));
		Measure (label, "stelem i1", "plain", reps, n, k => Plain.Bytes (bytes, k));
		Measure (label, "stelem i1", "guarded", reps, n, k => Guarded.Bytes (bytes, k));
		Measure (label, "stelem ref", "plain", reps, n, k => Plain.Refs (refs, items, k));
		Measure (label, "stelem ref", "guarded", reps, n, k => Guarded.Refs (refs, items, k));
		Measure (label, "List<int> set", "plain", reps, n / 4, k => Plain.ListUpdates (list, k));
		Measure (label, "Dictionary set", "plain", reps, n / 8, k => Plain.DictionaryUpdates (dict, k));
		if (persister != null) {
			stop = true;
			persister.Join ();
			Console.Error.WriteLine ("{0}: {1} cycles while measuring", label, cycles);
		}
		return sink == 42 ? 1 : 0;
	}

	static volatile bool stop;
	static long cycles;

	static System.Threading.Thread PersistBackToBack (Everything root)
	{
		SPC.AddRoot (root);
		var t = new System.Threading.Thread (() => {
			while (!stop) {
				SPC.SendPData ();
				SPC.WaitPersisted ();
				cycles++;
			}
		});
		t.Start ();
		return t;
	}
}
