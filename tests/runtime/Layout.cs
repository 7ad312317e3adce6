// Layout: the same class persisted by one build of a program and restored by a
// build in which its persistent fields changed; the restore must refuse clearly.
using System;
using SPersistence;

[SPersistent]
class Plant
{
#if V2
	[SPersistentField] public double Level;     // was int
#else
	[SPersistentField] public int Level;
#endif
}

static class Program
{
	static int Main (string[] args)
	{
		if (args [0] == "write") {
			SPC.AddRoot (new Plant ());
			SPC.SendPData ();
			return 0;
		}
		T.Throws<SPersistenceException> (() => SPC.IsWarmRestart (), "layout changed", "restore with a changed class");
		return 0;
	}
}
