// HeapHuge: what --sp-heap=huge changes, seen from the program's own mappings
// (/proc/self/smaps): sections of the old generation the kernel was asked to
// back with huge pages (VmFlags "hg"), 2 MB aligned, and the huge pages it gave.
//   HeapHuge.exe write N     the state: a chain of N nodes, persisted
//   HeapHuge.exe measure N   restores it, grows the old generation, prints
//                            "key value" lines (sizes in KB)
using System;
using System.Collections.Generic;
using System.Globalization;
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
	const long HugeKB = 2048;

	static Node Chain (int n)
	{
		Node head = null;
		for (int i = 0; i < n; i++)
			head = new Node { Next = head, A = i, B = 2 * i, C = 3 * i };
		return head;
	}

	static int Length (Node head)
	{
		int n = 0;
		for (; head != null; head = head.Next)
			n++;
		return n;
	}

	// One mapping of smaps: its range, whether it asked for huge pages, how much of it they back.
	sealed class Mapping
	{
		public ulong Start, End;
		public bool Advised;
		public long AnonHugeKB;
	}

	static List<Mapping> Mappings ()
	{
		var all = new List<Mapping> ();
		Mapping m = null;
		foreach (string line in File.ReadAllLines ("/proc/self/smaps")) {
			// A mapping's first line starts with its range, "start-end"; its fields' lines with "Name:".
			int dash = line.IndexOf ('-');
			int space = line.IndexOf (' ');
			if (dash > 0 && space > dash && line [space - 1] != ':') {
				m = new Mapping {
					Start = ulong.Parse (line.Substring (0, dash), NumberStyles.HexNumber),
					End = ulong.Parse (line.Substring (dash + 1, space - dash - 1), NumberStyles.HexNumber)
				};
				all.Add (m);
			} else if (m != null && line.StartsWith ("AnonHugePages:")) {
				m.AnonHugeKB = long.Parse (line.Split (new [] { ' ' }, StringSplitOptions.RemoveEmptyEntries) [1]);
			} else if (m != null && line.StartsWith ("VmFlags:")) {
				m.Advised = Array.IndexOf (line.Substring (8).Split (' '), "hg") >= 0;
			}
		}
		return all;
	}

	static int Main (string[] args)
	{
		int n = int.Parse (args [1]);
		if (args [0] == "write") {
			SPC.AddRoot (Chain (n));
			SPC.SendPData ();
			return 0;
		}
		T.Check (SPC.IsWarmRestart (), "a snapshot to restore");
		T.Check (Length (SPC.RecvPData (1) as Node) == n, "the chain restored whole");
		// More of the old generation: a chain made and promoted, alive while the mappings are read.
		Node more = Chain (n);
		GC.Collect ();
		long advisedKB = 0, hugeKB = 0, misaligned = 0;
		foreach (Mapping m in Mappings ()) {
			if (!m.Advised)
				continue;
			long kb = (long)(m.End - m.Start) / 1024;
			advisedKB += kb;
			hugeKB += m.AnonHugeKB;
			if (m.Start % (HugeKB * 1024) != 0 || kb % HugeKB != 0)
				misaligned++;
		}
		T.Check (Length (more) == n, "the chain made again");
		Console.WriteLine ("advised_kb " + advisedKB);
		Console.WriteLine ("misaligned " + misaligned);
		Console.WriteLine ("anon_huge_kb " + hugeKB);
		return 0;
	}
}
