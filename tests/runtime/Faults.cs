// Faults: storage faults while persisting (injected by tests/faults/spfaults.c,
// switched through a control file): each reaches the program (SendPData in
// stop-the-world mode, WaitPersisted in incremental mode) and the statistics,
// the program goes on, and once the fault clears persisting works again.
//   faults.exe run CONTROL MODE,MODE...   value 1, each fault in turn, then value 7
//   faults.exe fail CONTROL MODE          value 1, then value 2 under the fault, and stop
//   faults.exe exit CONTROL               value 1, then value 3 persisted on a slow disk
//                                         (CONTROL: slow), and the program ends while
//                                         the writer commits it: the end waits for
//                                         the commit, and exits cleanly
//   faults.exe pipeline CONTROL MODE      (incremental, deltas) value 1 and 2, then
//                                         value 3 under MODE (slow: its commit takes
//                                         300 ms; slow-eio: then fails), and value 4
//                                         requested while 3 commits (a delta on it,
//                                         started before its commit); WaitPersisted
//                                         succeeds (slow) or throws (slow-eio: 4
//                                         applies to a snapshot that failed, so it is
//                                         not written); then value 5 persists
//   faults.exe check                      print the restored value
using System;
using System.IO;
using SPersistence;

[SPersistent]
class State {
	[SPersistentField] public int Value;
	[SPersistentField] public int [] Data;
}

static class Program {
	static void Persist ()
	{
		SPC.SendPData ();
		SPC.WaitPersisted ();
	}

	// The message a fault gives: what the system said.
	static string Expected (string mode)
	{
		return mode == "enospc" || mode == "short" ? "No space left on device" : "Input/output error";
	}

	static void UnderFault (State s, string control, string mode, int value)
	{
		File.WriteAllText (control, mode);
		s.Value = value;
		long failures = SPC.GetStats ().Failures;
		string message = null;
		try {
			Persist ();
		} catch (SPersistenceException e) {
			message = e.Message;
		}
		File.WriteAllText (control, "");
		T.Check (message != null, mode + ": the failure reaches the program");
		T.Check (message.Contains (Expected (mode)), mode + ": the message says why: " + message);
		T.Check (SPC.GetStats ().Failures > failures, mode + ": counted in SPStats.Failures");
		Console.WriteLine ("{0}: {1}", mode, message);
	}

	static int Main (string [] args)
	{
		if (args [0] == "check") {
			Console.WriteLine ("value " + ((State)SPC.RecvPData (1)).Value);
			return 0;
		}
		string control = args [1];
		var s = new State { Value = 1, Data = new int [100000] };
		SPC.AddRoot (s);
		Persist ();
		if (args [0] == "fail") {
			UnderFault (s, control, args [2], 2);
			return 0;
		}
		if (args [0] == "pipeline") {
			s.Value = 2;
			Persist ();
			File.WriteAllText (control, args [2]);
			s.Value = 3;
			SPC.SendPData ();
			System.Threading.Thread.Sleep (100);   // 3 is in its commit's fsync now
			s.Value = 4;
			SPC.SendPData ();
			bool threw = false;
			try {
				SPC.WaitPersisted ();
			} catch (SPersistenceException e) {
				threw = true;
				Console.WriteLine ("pipelined: " + e.Message);
			}
			File.WriteAllText (control, "");
			T.Check (threw == (args [2] == "slow-eio"), args [2] + ": WaitPersisted threw: " + threw);
			if (threw) {
				s.Value = 5;
				Persist ();
			}
			Console.WriteLine ("pipeline ok");
			return 0;
		}
		if (args [0] == "exit") {
			File.WriteAllText (control, "slow");
			s.Value = 3;
			SPC.SendPData ();
			System.Threading.Thread.Sleep (100);   // the writer is in its 300 ms fsync now
			return 0;
		}
		int k = 100;
		foreach (string mode in args [2].Split (','))
			UnderFault (s, control, mode, k++);
		s.Value = 7;
		Persist ();                        // the fault cleared: works again
		Console.WriteLine ("faults ok");
		return 0;
	}
}
