// Delta: a plant whose periods each change a little of a large state, persisted
// with --sp-delta=on.  Period p's changes are a pure function of p (Mutate), so
// the state after period p can be rebuilt from nothing (Expected) and compared
// with what a restart restored, object by object, with identity.
//
//   Delta.exe run P [MS]    restore (or build), check, then periods up to P
//                           (MS ms apart, as a control loop's): SendPData
//                           (period p's changes made), then period p + 1's
//                           changes (in incremental mode, while the cycle
//                           writes p), WaitPersisted, print "durable p"; then
//                           "full snapshots F, folds N" (this process's)
//   Delta.exe run P MS threads   the same, each period's stores made by two
//                           threads at once (a new store only: the kind is kept)
//   Delta.exe run P MS pipelined  the same, WaitPersisted (and "durable p") only
//                           every 4th period: in incremental mode with
//                           --sp-busy=wait the next delta then starts while
//                           the one before commits
//   Delta.exe check         restore, check, print "restored p", exit
//   Delta.exe unseen        restore, then a store through a ref taken before
//                           SendPData into an ordinary (small) array, which no
//                           barrier names, and SendPData again: the snapshot
//                           must hold the store (the object it fell into is
//                           found at the snapshot's instant)
//   Delta.exe busy          restore, then a thread storing into the small array
//                           (no identity slot) while SendPData writes a large
//                           delta, and SendPData again once it stopped: the
//                           last snapshot must hold its last stores; prints
//                           "deferred N" (stores put aside while the snapshot
//                           was written, SPStats.DeltaStoresDeferred) and
//                           "small-sum S"
//   Delta.exe peek          restore without checking, print small[5] and small-sum
// Every check failure prints "CHECK FAILED" (TestUtil.cs) and exits non-zero.
// mcs takes a ref local that is only stored through for an unused variable (CS0219).
#pragma warning disable 219
using System;
using System.Collections.Generic;
using SPersistence;

[SPersistent]
class Cell
{
	[SPersistentField] public long Value;
	[SPersistentField] public Cell Next;
	[SPersistentField] public string Label;
}

[SPersistent]
class Plant
{
	[SPersistentField] public int Period;
	[SPersistentField] public bool Threaded;     // periods changed by two threads (run P MS threads)
	[SPersistentField] public Cell [] Cells;
	[SPersistentField] public long [] Samples;   // a large object
	[SPersistentField] public int [] Small;      // an ordinary one
}

static class Program
{
	const int CellCount = 20000, SampleCount = 200000, SmallCount = 64;

	static Plant Initial ()
	{
		var p = new Plant { Cells = new Cell [CellCount], Samples = new long [SampleCount], Small = new int [SmallCount] };
		for (int i = 0; i < CellCount; i++)
			p.Cells [i] = new Cell { Value = i, Label = "cell " + i };
		for (int i = 0; i < CellCount; i++)
			p.Cells [i].Next = p.Cells [(i + 1) % CellCount];
		return p;
	}

	// Period p's stores: fields, references to old and new cells, elements of both arrays.
	static void Mutate (Plant p, int period)
	{
		var r = new Random (period);
		for (int k = 0; k < 40; k++) {
			int i = r.Next (CellCount);
			switch (r.Next (5)) {
			case 0: p.Cells [i].Value = period * 1000L + k; break;
			case 1: p.Cells [i].Next = p.Cells [r.Next (CellCount)]; break;
			case 2: p.Cells [i] = new Cell { Value = -period, Label = "new " + period + "." + k, Next = p.Cells [r.Next (CellCount)] }; break;
			case 3: p.Samples [r.Next (SampleCount)] = period * 7L + k; break;
			default: p.Small [r.Next (SmallCount)] = period; break;
			}
		}
		// Periods 71-90 drop a block of 2,000 cells each for new ones: what the program drops piles up in
		// the chain (a fold keeps it) until a full snapshot lets it go.
		if (period > 70 && period <= 90) {
			int from = (period - 71) * 2000 % CellCount;
			for (int j = 1999; j >= 0; j--) {      // backwards: each new cell links to the new one after it
				int i = (from + j) % CellCount;
				p.Cells [i] = new Cell { Value = period, Label = "churn", Next = p.Cells [(i + 1) % CellCount] };
			}
		}
		p.Period = period;
	}

	// Period p's stores made by two threads at once, each in its half of the cells and of the samples
	// (a cell links only within its half): the state after them does not depend on how they interleave.
	static void MutateHalf (Plant p, int period, int half)
	{
		var r = new Random (period * 2 + half);
		int cells = CellCount / 2, samples = SampleCount / 2;
		for (int k = 0; k < 20; k++) {
			int i = half * cells + r.Next (cells);
			switch (r.Next (4)) {
			case 0: p.Cells [i].Value = period * 1000L + k; break;
			case 1: p.Cells [i].Next = p.Cells [half * cells + r.Next (cells)]; break;
			case 2: p.Cells [i] = new Cell { Value = -period, Label = "new " + period + "." + half + "." + k,
							 Next = p.Cells [half * cells + r.Next (cells)] }; break;
			default: p.Samples [half * samples + r.Next (samples)] = period * 7L + k; break;
			}
		}
	}

	static void MutateThreaded (Plant p, int period)
	{
		var other = new System.Threading.Thread (() => MutateHalf (p, period, 1));
		other.Start ();
		MutateHalf (p, period, 0);
		other.Join ();
		p.Period = period;
	}

	static Plant Expected (int period, bool threaded)
	{
		Plant p = Initial ();
		p.Threaded = threaded;
		for (int q = 1; q <= period; q++) {
			if (threaded) {
				MutateHalf (p, q, 0);
				MutateHalf (p, q, 1);
				p.Period = q;
			} else {
				Mutate (p, q);
			}
		}
		return p;
	}

	// Same values everywhere, and the same sharing: a Next that is a cell of the array is that same cell.
	static void Check (Plant got, Plant want)
	{
		T.Eq (want.Period, got.Period, "period");
		var index = new Dictionary<Cell, int> ();
		for (int i = 0; i < CellCount; i++)
			index [want.Cells [i]] = i;
		for (int i = 0; i < CellCount; i++) {
			Cell g = got.Cells [i], w = want.Cells [i];
			T.Eq (w.Value, g.Value, "value of cell " + i);
			T.Eq (w.Label, g.Label, "label of cell " + i);
			int j;
			if (index.TryGetValue (w.Next, out j))
				T.Check (object.ReferenceEquals (g.Next, got.Cells [j]), "cell " + i + " links to cell " + j);
			else
				T.Eq (w.Next.Value, g.Next.Value, "value of what cell " + i + " links to");
		}
		for (int i = 0; i < SampleCount; i++)
			if (want.Samples [i] != got.Samples [i])
				T.Eq (want.Samples [i], got.Samples [i], "sample " + i);
		for (int i = 0; i < SmallCount; i++)
			T.Eq (want.Small [i], got.Small [i], "small " + i);
	}

	static long SmallSum (Plant p)
	{
		long sum = 0;
		for (int i = 0; i < SmallCount; i++)
			sum = sum * 31 + p.Small [i];
		return sum;
	}

	// A thread stores into p.Small throughout a SendPData that writes a large delta: its first store after
	// the snapshot's instant meets the lock the snapshot is written under.  Then it writes every element
	// once more, and the next snapshot must hold those values.
	static int Busy (Plant p)
	{
		for (int i = 0; i < CellCount; i++)
			p.Cells [i].Value = -i;
		for (int i = 0; i < SampleCount; i++)
			p.Samples [i] = -i;
		var stop = false;
		var started = new System.Threading.ManualResetEventSlim ();
		var other = new System.Threading.Thread (() => {
			int n = 0;
			started.Set ();
			while (!System.Threading.Volatile.Read (ref stop))
				p.Small [n++ % SmallCount] = n;
			for (int i = 0; i < SmallCount; i++)
				p.Small [i] = -n - i;
		});
		other.Start ();
		started.Wait ();
		SPC.SendPData ();
		System.Threading.Volatile.Write (ref stop, true);
		other.Join ();
		SPC.SendPData ();
		SPC.WaitPersisted ();
		Console.WriteLine ("deferred " + SPC.GetStats ().DeltaStoresDeferred);
		Console.WriteLine ("small-sum " + SmallSum (p));
		return 0;
	}

	static Plant Restore ()
	{
		if (!SPC.IsWarmRestart ()) {
			Plant p = Initial ();
			SPC.AddRoot (p);
			Console.WriteLine ("restored 0");
			return p;
		}
		var got = (Plant)SPC.RecvPData (1);
		Check (got, Expected (got.Period, got.Threaded));
		Console.WriteLine ("restored " + got.Period);
		return got;
	}

	static int Main (string [] args)
	{
		if (args [0] == "peek") {
			var got = (Plant)SPC.RecvPData (1);
			Console.WriteLine ("small[5] " + got.Small [5]);
			Console.WriteLine ("small-sum " + SmallSum (got));
			return 0;
		}
		Plant p = Restore ();
		if (args [0] == "check")
			return 0;
		if (args [0] == "unseen") {
			// A young array among what a collection left behind: found at the snapshot's instant by
			// walking the nursery, whose free fragments hold dead objects' bytes.
			var junk = new object [20000];
			for (int i = 0; i < junk.Length; i++)
				junk [i] = new int [1 + i % 7];
			junk = null;
			GC.Collect (0);
			p.Small = new int [SmallCount];
			SPC.SendPData ();
			ref int slot = ref p.Small [5];
			SPC.SendPData ();
			slot = 4242;                  // after the snapshot, through a ref no barrier can tie to p.Small
			SPC.SendPData ();
			SPC.WaitPersisted ();         // incremental mode: the last cycle written before the program ends
			Console.WriteLine ("small[5] " + p.Small [5]);
			return 0;
		}
		if (args [0] == "busy")
			return Busy (p);
		int last = int.Parse (args [1]);
		int sleepMs = args.Length > 2 ? int.Parse (args [2]) : 0;
		if (args.Length > 3 && args [3] == "threads" && p.Period == 0)
			p.Threaded = true;
		Action<Plant, int> mutate = p.Threaded ? (Action<Plant, int>)MutateThreaded : Mutate;
		// Each period's changes are made before its SendPData; the next period's right after it, while an
		// incremental cycle writes this one (its barriers keep the snapshot at the SendPData instant).
		if (p.Period < last)
			mutate (p, p.Period + 1);
		int waitEvery = args.Length > 3 && args [3] == "pipelined" ? 4 : 1;
		// The program's own log, not in the state, stored into while each cycle writes: a delta sets it
		// aside and lets its LID go, and the chain must restore exactly all the same.
		var log = new long [512];
		for (int period = p.Period; period <= last && period > 0; period++) {
			SPC.SendPData ();
			log [period % log.Length] = period;
			if (period < last)
				mutate (p, period + 1);
			if (period % waitEvery != 0 && period < last)
				continue;
			SPC.WaitPersisted ();
			Console.WriteLine ("durable " + period);
			if (sleepMs > 0)
				System.Threading.Thread.Sleep (sleepMs);
		}
		SPStats s = SPC.GetStats ();
		Console.WriteLine ("full snapshots " + s.FullSnapshots + ", folds " + s.Folds);
		return 0;
	}
}
