// EvolveBench: what a class change costs a restart (issue 18): the same tree of
// nodes restored by the version that wrote it, and by a version whose node
// class changed (one field widened, one removed, one added with a Default).
//
//   (no define)  the version that writes: Key int, Stamp long, Weight, Red, Depth, links.
//   CHANGED      Key long, Stamp removed (kept as unknown data), Added (Default = 5).
//   DROP         CHANGED, the class saying DropUnknown (Stamp dropped).
//
//   EvolveBench.exe save N          the tree of N nodes, persisted once.
//   EvolveBench.exe load N REPS     (a warm restart) rows: the restore
//                                   ("restore-cold"), then REPS snapshots of the
//                                   restored tree ("serialize": with unknown data
//                                   carried, for CHANGED), each followed by a decode
//                                   of that snapshot from memory ("decode-own").
// Prints CSV rows: version,operation,nodes,rep,ns.  The restored tree is checked
// (every node's values, the new field's Default) before anything is timed.
using System;
using SPersistence;

#if DROP
[SPersistent (DropUnknown = true)]
#else
[SPersistent]
#endif
class Node
{
#if CHANGED || DROP
	[SPersistentField] public long Key;
	[SPersistentField (Default = 5)] public int Added;
#else
	[SPersistentField] public int Key;
	[SPersistentField] public long Stamp;
#endif
	[SPersistentField] public double Weight;
	[SPersistentField] public bool Red;
	[SPersistentField] public short Depth;
	[SPersistentField] public Node Left, Right, Parent;
}

static class EvolveBench
{
#if DROP
	const string Version = "drop";
#elif CHANGED
	const string Version = "changed";
#else
	const string Version = "same";
#endif

	// Node i of a complete binary tree (children 2i+1, 2i+2), allocated in a shuffled order as TreeBench's.
	static Node Build (int n)
	{
		var nodes = new Node [n];
		var order = new int [n];
		for (int i = 0; i < n; i++)
			order [i] = i;
		var rng = new Random (20261126);
		for (int i = n - 1; i > 0; i--) {
			int j = rng.Next (i + 1);
			int t = order [i]; order [i] = order [j]; order [j] = t;
		}
		foreach (int i in order)
			nodes [i] = new Node ();
		for (int i = 0; i < n; i++) {
			Node t = nodes [i];
			t.Key = i * 7; t.Weight = i * 0.5; t.Red = i % 3 == 0;
#if !CHANGED && !DROP
			t.Stamp = (long)i << 20;
#endif
			if (i > 0) {
				t.Parent = nodes [(i - 1) / 2];
				t.Depth = (short)(t.Parent.Depth + 1);
				if (i % 2 == 1) t.Parent.Left = t; else t.Parent.Right = t;
			}
		}
		return nodes [0];
	}

	// Every node as Build made it (node i found by its Key), the new field at its Default.
	static int Check (Node root)
	{
		var queue = new System.Collections.Generic.Queue<Node> ();
		queue.Enqueue (root);
		int count = 0;
		while (queue.Count > 0) {
			Node t = queue.Dequeue ();
			long i = t.Key / 7;
			bool ok = t.Key == i * 7 && t.Weight == i * 0.5 && t.Red == (i % 3 == 0);
#if CHANGED || DROP
			ok &= t.Added == 5;
#else
			ok &= t.Stamp == i << 20;
#endif
			if (!ok)
				throw new Exception ("node " + i + " restored wrong");
			count++;
			if (t.Left != null) queue.Enqueue (t.Left);
			if (t.Right != null) queue.Enqueue (t.Right);
		}
		return count;
	}

	static void Row (string op, int n, int rep, long ns)
	{
		Console.WriteLine ("{0},{1},{2},{3},{4}", Version, op, n, rep, ns);
	}

	static int Main (string[] args)
	{
		int n = int.Parse (args [1]);
		if (args [0] == "save") {
			SPC.AddRoot (Build (n));
			SPC.SendPData ();
			return 0;
		}
		int reps = int.Parse (args [2]);
		if (!SPC.IsWarmRestart ()) {
			Console.Error.WriteLine ("load needs a store written by save");
			return 1;
		}
		var root = (Node)SPC.RecvPData (1);
		if (Check (root) != n)
			throw new Exception ("the restored tree has lost nodes");
		Row ("restore-cold", n, 1, SPC.GetStats ().RestoreNs);
		for (int r = 1; r <= reps; r++) {
			GC.Collect ();
			SPC.SendPData ();
			Row ("serialize", n, r, SPC.GetStats ().LastSerializeNs);
			GC.Collect ();
			Row ("decode-own", n, r, SPDiagnostics.TimeDecodeOfNewest ());
		}
		return 0;
	}
}
