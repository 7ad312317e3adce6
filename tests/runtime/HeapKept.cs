// HeapKept: what --sp-heap=keep changes, seen from the program: the resident
// size after the heap's objects die and are collected, and the page faults of
// making them again (small objects in the old generation, arrays in large-
// object sections) and of decoding the newest snapshot a second time.
//   HeapKept.exe write N     the state: a chain of N nodes, persisted
//   HeapKept.exe measure N   prints "key value" lines (sizes in KB)
using System;
using System.Collections.Generic;
using System.IO;
using SPersistence;

[SPersistent]
class Node
{
	[SPersistentField] public Node Next;
	[SPersistentField] public long A, B, C;
}

static class Program
{
	const int Objects = 600000;        // about 25 MB of old generation once promoted
	const int Arrays = 40;             // 40 x 200 KB: large objects that share 1 MB sections

	static long MinorFaults ()
	{
		string stat = File.ReadAllText ("/proc/self/stat");
		string[] f = stat.Substring (stat.LastIndexOf (')') + 2).Split (' ');
		return long.Parse (f [7]);     // field 10 of proc(5): minflt
	}

	static long ResidentKB ()
	{
		string[] statm = File.ReadAllText ("/proc/self/statm").Split (' ');
		return long.Parse (statm [1]) * Environment.SystemPageSize / 1024;
	}

	static void Collect ()
	{
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
		GC.Collect ();
	}

	static List<object> Garbage ()
	{
		var keep = new List<object> (Objects + Arrays);
		for (int i = 0; i < Objects; i++)
			keep.Add (new Node { A = i });
		for (int i = 0; i < Arrays; i++)
			keep.Add (new byte [200 * 1024]);
		Collect ();                    // promoted: the old generation holds them now
		return keep;
	}

	static int Main (string[] args)
	{
		int n = int.Parse (args [1]);
		if (args [0] == "write") {
			Node head = null;
			for (int i = 0; i < n; i++)
				head = new Node { Next = head, A = i, B = 2 * i, C = 3 * i };
			SPC.AddRoot (head);
			SPC.SendPData ();
			return 0;
		}
		T.Check (SPC.IsWarmRestart (), "a snapshot to restore");
		T.Check (SPC.RecvPData (1) is Node, "the chain restored");
		// Garbage made and collected three times: memory SGen gives back is
		// given back lazily (at the next collection's accounting), so the
		// third round is the one that shows whether it was kept.
		long remakeFaults = 0, peak = 0;
		for (int round = 0; round < 3; round++) {
			long faults = MinorFaults ();
			List<object> garbage = Garbage ();
			remakeFaults = MinorFaults () - faults;
			peak = Math.Max (peak, ResidentKB ());
			GC.KeepAlive (garbage);
			garbage = null;
			Collect ();
		}
		long after = ResidentKB ();

		SPDiagnostics.TimeDecodeOfNewest ();   // a decode's objects, then collected
		Collect ();
		long before = MinorFaults ();
		SPDiagnostics.TimeDecodeOfNewest ();
		long decodeFaults = MinorFaults () - before;

		Console.WriteLine ("rss_peak_kb " + peak);
		Console.WriteLine ("rss_after_kb " + after);
		Console.WriteLine ("remake_faults " + remakeFaults);
		Console.WriteLine ("decode_faults " + decodeFaults);
		return 0;
	}
}
