// PaperListings: Listings 1 and 2 of the paper, as a program: two persistent
// roots registered at a cold start, received back at a warm restart, and a
// periodic operation phase that persists them at the end of every period.
//
//   spmono PaperListings.exe [periods]
using System;
using SPersistence;

// Listing 1: a persistent class with two persistent fields.
[SPersistent]
class Foo
{
	[SPersistentField] public int i;
	public double d = 1.5;           // not persistent: 0 after a warm restart
	[SPersistentField] public Bar o;
}

[SPersistent]
class Bar
{
	[SPersistentField] public long Count;
}

static class Listing2
{
	static int Main (string[] args)
	{
		int periods = args.Length > 0 ? int.Parse (args [0]) : 10;
		Foo oKey, oValue;
		int nRootID1 = 1, nRootID2 = 2;   // ids are stable: the same at every start

		// Initialization phase for cold start
		if (SPC.IsWarmRestart () == false) {
			oKey = new Foo { o = new Bar () };
			oValue = new Foo { o = oKey.o };  // shared by both roots
			// Register persistent root objects
			nRootID1 = SPC.AddRoot (oKey);
			nRootID2 = SPC.AddRoot (oValue);
			Console.WriteLine ("cold start: roots {0} and {1}", nRootID1, nRootID2);
		}
		// Initialization phase for warm restart
		else {
			oKey = (Foo)SPC.RecvPData (nRootID1);
			oValue = (Foo)SPC.RecvPData (nRootID2);
			Console.WriteLine ("warm restart: i = {0}, count = {1}, shared = {2}, d = {3}",
				oKey.i, oKey.o.Count, object.ReferenceEquals (oKey.o, oValue.o), oKey.d);
		}

		// Periodic operation phase
		for (int p = 0; p < periods; p++) {
			// Main operations
			oKey.i++;
			oValue.i--;
			oKey.o.Count++;
			// Serialize all persistent object graphs
			SPC.SendPData ();
		}
		Console.WriteLine ("after {0} periods: i = {1}, count = {2}", periods, oKey.i, oKey.o.Count);
		return 0;
	}
}
