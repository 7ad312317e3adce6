// Errors: each way a program can misuse persistence gets a clear exception,
// and a failed SendPData leaves the store as it was.
using System;
using System.Diagnostics;
using SPersistence;

[SPersistent] class HoldsForeign { [SPersistentField] public object Foreign; }
[SPersistent] class HoldsPointer { [SPersistentField] public IntPtr Handle; }
[SPersistent] class HoldsMatrix { [SPersistentField] public int[,] Matrix; }
[SPersistent] class Good { [SPersistentField] public int Value; [SPersistentField] public object Any; }
class NotMarked { public int X = 1; }

static class Program
{
	static int Main (string[] args)
	{
		switch (args [0]) {
		case "misuse":
			T.Check (!SPC.IsWarmRestart (), "cold start");
			T.Throws<ArgumentNullException> (() => SPC.AddRoot (null), "root", "AddRoot(null)");
			T.Throws<SPersistenceException> (() => SPC.RecvPData (99), "no persistent root with id 99", "RecvPData(99)");
			T.Throws<SPersistenceException> (() => SPC.RemoveRoot (0), "no persistent root with id 0", "RemoveRoot(0)");

			var good = new Good { Value = 1 };
			SPC.AddRoot (good);
			SPC.SendPData ();                    // snapshot 1: Value = 1

			good.Value = 2;
			good.Any = new HoldsForeign { Foreign = new Stopwatch () };
			T.Throws<SPersistenceException> (SPC.SendPData, "System.Diagnostics.Stopwatch", "foreign type");
			T.Throws<SPersistenceException> (SPC.SendPData, "HoldsForeign.Foreign", "foreign type names the field");
			good.Any = new HoldsPointer ();
			T.Throws<SPersistenceException> (SPC.SendPData, "System.IntPtr", "pointer field");
			good.Any = new HoldsMatrix ();
			T.Throws<SPersistenceException> (SPC.SendPData, "multi-dimensional", "2-D array field");
			good.Any = 5;
			T.Throws<SPersistenceException> (SPC.SendPData, "boxed", "boxed value");
			good.Any = new NotMarked ();
			T.Throws<SPersistenceException> (SPC.SendPData, "NotMarked is not [SPersistent]", "unmarked class");
			int unmarked = SPC.AddRoot (new NotMarked ());
			T.Throws<SPersistenceException> (SPC.SendPData, "root " + unmarked, "unmarked root names the root");
			SPC.RemoveRoot (unmarked);
			T.Throws<SPersistenceException> (() => SPC.RecvPData (unmarked), "no persistent root", "removed root is gone");
			Console.WriteLine ("misuse ok");
			return 0;
		case "warm":                              // is this a warm restart?
			Console.WriteLine ("warm=" + SPC.IsWarmRestart ());
			return 0;
		case "value":                             // print root 1's value after a restart
			Console.WriteLine ("warm=" + SPC.IsWarmRestart () + " value=" + ((Good)SPC.RecvPData (1)).Value);
			return 0;
		case "count":                            // persist N times, value = i
			var g = new Good ();
			if (SPC.IsWarmRestart ()) g = (Good)SPC.RecvPData (1); else SPC.AddRoot (g);
			for (int i = 1; i <= int.Parse (args [1]); i++) { g.Value = i; SPC.SendPData (); }
			return 0;
		case "ids-write":                        // ids survive a restart, removed ones stay removed
			T.Eq (1, SPC.AddRoot (new Good { Value = 10 }), "id 1");
			T.Eq (2, SPC.AddRoot (new Good { Value = 20 }), "id 2");
			T.Eq (3, SPC.AddRoot (new Good { Value = 30 }), "id 3");
			SPC.RemoveRoot (2);
			SPC.SendPData ();
			return 0;
		case "ids-check":
			T.Check (SPC.IsWarmRestart (), "warm");
			T.Eq (10, ((Good)SPC.RecvPData (1)).Value, "root 1");
			T.Eq (30, ((Good)SPC.RecvPData (3)).Value, "root 3 keeps its id");
			T.Throws<SPersistenceException> (() => SPC.RecvPData (2), "no persistent root with id 2", "removed root");
			T.Eq (4, SPC.AddRoot (new Good ()), "next id after a restart");
			Console.WriteLine ("ids ok");
			return 0;
		case "add-every-start":                  // adds its root at every start, never receives the restored ones
			SPC.AddRoot (new Good { Value = 7 });
			SPC.SendPData ();
			SPC.SendPData ();
			return 0;
		case "receive-and-add":                  // receives what was restored (or drops it), adds one more
			if (SPC.IsWarmRestart ()) {
				for (int id = 1; id <= int.Parse (args [1]); id++)
					if (id % 2 == 1) SPC.RecvPData (id); else SPC.RemoveRoot (id);
			}
			SPC.AddRoot (new Good { Value = 8 });
			SPC.SendPData ();
			return 0;
		case "hold":                             // keep the store open a while
			SPC.IsWarmRestart ();
			Console.WriteLine ("holding");
			System.Threading.Thread.Sleep (int.Parse (args [1]));
			return 0;
		}
		return 2;
	}
}
