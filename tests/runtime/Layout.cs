// Layout: the same class persisted by one build of a program and restored by a
// build in which a persistent field changed in a way that cannot restore (a
// narrowing: double -> int); the restore must refuse clearly.  The changes that
// do restore are test_class_evolution's.
using System;
using SPersistence;

[SPersistent]
class Plant
{
#if V2
	[SPersistentField] public int Level;        // was double
#else
	[SPersistentField] public double Level;
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
		T.Throws<SPersistenceException> (() => SPC.IsWarmRestart (), "'Level' is double in the snapshot but int in the loaded class: int cannot hold every double value", "restore with a narrowed field");
		return 0;
	}
}
