// KillLoop: persists a large graph over and over; every object carries the
// stamp of the period that wrote it.  A snapshot is consistent when every stamp
// in it is the same.  The shell side kills this process at random instants.
//   KillLoop.exe          restore (or build), verify, then loop: stamp, SendPData,
//                         scribble over the stamps (during the cycle, in
//                         incremental mode), WaitPersisted, say "durable"
//   KillLoop.exe keep-going   the same, but a commit that fails while this process
//                         is still the primary says "not durable S: WHY" and the
//                         loop goes on (as a controller would)
using System;
using SPersistence;

[SPersistent]
class Cell
{
	[SPersistentField] public long Stamp;
	[SPersistentField] public Cell Next;
	[SPersistentField] public string Label;
}

[SPersistent]
class World
{
	[SPersistentField] public long Stamp;
	[SPersistentField] public Cell[] Cells;
	[SPersistentField] public long[] Samples;
}

static class Program
{
	const int CellCount = 60000, SampleCount = 1000000;

	static void SetStamp (World w, long s)
	{
		w.Stamp = s;
		foreach (Cell c in w.Cells) c.Stamp = s;
		for (int i = 0; i < w.Samples.Length; i++) w.Samples [i] = s;
	}

	static void Verify (World w)
	{
		T.Eq (CellCount, w.Cells.Length, "cell count");
		for (int i = 0; i < CellCount; i++) {
			T.Eq (w.Stamp, w.Cells [i].Stamp, "stamp of cell " + i);
			T.Check (object.ReferenceEquals (w.Cells [i].Next, w.Cells [(i + 1) % CellCount]), "ring link " + i);
		}
		foreach (long v in w.Samples) T.Eq (w.Stamp, v, "sample stamp");
	}

	static int Main (string[] args)
	{
		World w;
		if (SPC.IsWarmRestart ()) {
			w = (World)SPC.RecvPData (1);
			Verify (w);
			Console.WriteLine ("restored " + w.Stamp);
		} else {
			w = new World { Cells = new Cell [CellCount], Samples = new long [SampleCount] };
			for (int i = 0; i < CellCount; i++) w.Cells [i] = new Cell { Label = "cell " + i };
			for (int i = 0; i < CellCount; i++) w.Cells [i].Next = w.Cells [(i + 1) % CellCount];
			SPC.AddRoot (w);
			Console.WriteLine ("restored 0");
		}
		bool keepGoing = args.Length > 0 && args [0] == "keep-going";
		for (long s = w.Stamp + 1; ; s++) {
			try {
				Persist (w, s);
				Console.WriteLine ("durable " + s);
			} catch (SPersistenceException e) {
				if (!keepGoing || !SPC.IsPrimary ())
					throw;
				Console.WriteLine ("not durable " + s + ": " + e.Message);
			}
		}
	}

	static void Persist (World w, long s)
	{
		SetStamp (w, s);
		SPC.SendPData ();
		SetStamp (w, -s);              // what the snapshot of s must not hold
		SPC.WaitPersisted ();
	}
}
