// Replicated: a controller that goes on when its replicated store does not
// answer (tests/runtime/test_replicated_store.sh stops the whole engine
// cluster, then starts it again).
//   Replicated.exe survive N   periods 1, 2, ...: each persisted, printing
//                              "durable p", or "failed p: MESSAGE" when the
//                              commit fails (the program goes on); ends once
//                              N periods were durable after a failure
//   Replicated.exe primary     periods on from the restored one, each persisted
//                              ("durable p", "primary True"), until a commit
//                              fails: prints "failed p: MESSAGE" and
//                              "primary " + SPC.IsPrimary (), and ends
//   Replicated.exe commit N    N periods on from the restored one, persisted, and ends
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
	static int Primary (Counter c)
	{
		for (;;) {
			c.Period++;
			try {
				SPC.SendPData ();
				SPC.WaitPersisted ();
				Console.WriteLine ("durable " + c.Period);
				Console.WriteLine ("primary " + SPC.IsPrimary ());
			} catch (SPersistenceException e) {
				Console.WriteLine ("failed " + c.Period + ": " + e.Message);
				Console.WriteLine ("primary " + SPC.IsPrimary ());
				return 0;
			}
			Thread.Sleep (20);
		}
	}

	static int Main (string [] args)
	{
		var c = SPC.IsWarmRestart () ? (Counter)SPC.RecvPData (1) : new Counter { History = new long [1000] };
		if (c.Period == 0)
			SPC.AddRoot (c);
		if (args [0] == "primary")
			return Primary (c);
		if (args [0] == "commit") {
			for (int i = 0; i < int.Parse (args [1]); i++) {
				c.Period++;
				SPC.SendPData ();
				SPC.WaitPersisted ();
				Console.WriteLine ("durable " + c.Period);
			}
			return 0;
		}
		int wanted = int.Parse (args [1]);
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
