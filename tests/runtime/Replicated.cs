// Replicated: a controller that goes on when its replicated store does not
// answer (tests/runtime/test_replicated_store.sh stops the whole engine
// cluster, then starts it again).
//   Replicated.exe survive N   periods 1, 2, ...: each persisted, printing
//                              "durable p", or "failed p: MESSAGE" when the
//                              commit fails (the program goes on); ends once
//                              N periods were durable after a failure
using System;
using System.Threading;
using SPersistence;

[SPersistent]
class Counter
{
	[SPersistentField] public long Period;
	[SPersistentField] public long [] History;
}

static class Program
{
	static int Main (string [] args)
	{
		int wanted = int.Parse (args [1]);
		var c = SPC.IsWarmRestart () ? (Counter)SPC.RecvPData (1) : new Counter { History = new long [1000] };
		if (c.Period == 0)
			SPC.AddRoot (c);
		int after = 0;
		bool failed = false;
		for (long p = c.Period + 1; after < wanted; p++) {
			c.Period = p;
			c.History [p % c.History.Length] = p;
			try {
				SPC.SendPData ();
				SPC.WaitPersisted ();
				Console.WriteLine ("durable " + p);
				if (failed)
					after++;
			} catch (SPersistenceException e) {
				failed = true;
				Console.WriteLine ("failed " + p + ": " + e.Message);
			}
			Thread.Sleep (20);
		}
		return 0;
	}
}
