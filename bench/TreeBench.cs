// TreeBench: SP against BinaryFormatter on a binary tree of composite nodes
// (several primitive fields and three references each: left, right, parent).
//
//   TreeBench.exe save N REPS FILE  build, then time REPS serializations of each;
//                                   BinaryFormatter's output is left in FILE
//                                   (BinaryFormatter up to 2,000,000 nodes)
//   TreeBench.exe load N REPS       (a warm restart) SP's restore of this process
//                                   ("restore-cold"), then REPS decodes of the same
//                                   snapshot and REPS BinaryFormatter deserializations,
//                                   both from bytes in memory ("restore")
//   TreeBench.exe bf-cold N FILE    BinaryFormatter's restore as the first thing a
//                                   fresh process does: read FILE, deserialize
//                                   ("restore-cold", JIT included as SP's start is)
// Beside them, in the same processes, the peers issue 20 names: what a user
// writes instead, a hand-written preorder BinaryWriter serializer
// ("BinaryWriter", serialize) and its BinaryReader rebuild ("BinaryReader",
// restore), and the floors: a plain traversal reading every field of every
// node ("Traversal", serialize) and allocating and filling the same nodes with
// `new` ("New", restore).
// Prints CSV rows: mechanism,operation,nodes,rep,ns,bytes.  Each restored graph
// is compared with a freshly built one before its time counts.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.Serialization.Formatters.Binary;
using SPersistence;

[Serializable, SPersistent]
class TreeNode
{
	[SPersistentField] public int Key;
	[SPersistentField] public long Stamp;
	[SPersistentField] public double Weight;
	[SPersistentField] public bool Red;
	[SPersistentField] public short Depth;
	[SPersistentField] public TreeNode Left, Right, Parent;
}

static class TreeBench
{
	// BinaryFormatter takes 5.4 s a serialization at 1,000,000 nodes and grows
	// faster than the graph: above this size it is left out (a run would take
	// many minutes), and so is its file for bf-cold.
	const int BinaryFormatterMaxNodes = 2000000;

	// Untimed turns of the restores before the timed ones (below, in load).
	const int RestoreWarmUps = 2;

	// A complete binary tree of n nodes with deterministic contents.  The nodes
	// are allocated in a shuffled order (fixed seed), so that, as in a tree grown
	// by insertions, neighbours in the tree are not neighbours in memory: a
	// traversal pays the cache misses a real application's would.
	static TreeNode Build (int n)
	{
		var nodes = new TreeNode [n];
		var order = new int [n];
		for (int i = 0; i < n; i++)
			order [i] = i;
		var rng = new Random (20261122);
		for (int i = n - 1; i > 0; i--) {
			int j = rng.Next (i + 1);
			int t = order [i]; order [i] = order [j]; order [j] = t;
		}
		foreach (int i in order)
			nodes [i] = new TreeNode ();
		for (int i = 0; i < n; i++) {
			TreeNode t = nodes [i];
			t.Key = i * 7; t.Stamp = (long)i << 20; t.Weight = i * 0.5; t.Red = i % 3 == 0;
			if (i > 0) {
				t.Parent = nodes [(i - 1) / 2];
				t.Depth = (short)(t.Parent.Depth + 1);
				if (i % 2 == 1) t.Parent.Left = t; else t.Parent.Right = t;
			}
		}
		return nodes [0];
	}

	static bool Same (TreeNode a, TreeNode b, int n)
	{
		var qa = new TreeNode [n];
		var qb = new TreeNode [n];
		int head = 0, tail = 0;
		qa [tail] = a; qb [tail++] = b;
		while (head < tail) {
			TreeNode x = qa [head], y = qb [head++];
			if (x.Key != y.Key || x.Stamp != y.Stamp || x.Weight != y.Weight || x.Red != y.Red || x.Depth != y.Depth)
				return false;
			if ((x.Parent == null) != (y.Parent == null) || (x.Parent != null && x.Parent.Key != y.Parent.Key))
				return false;
			foreach (var pair in new [] { new [] { x.Left, y.Left }, new [] { x.Right, y.Right } }) {
				if ((pair [0] == null) != (pair [1] == null)) return false;
				if (pair [0] != null) { qa [tail] = pair [0]; qb [tail++] = pair [1]; }
			}
		}
		return tail == n;
	}

	// The floor of serializing: reading every field of every node, in preorder.
	static long Traverse (TreeNode t)
	{
		if (t == null)
			return 0;
		long sum = t.Key + t.Stamp + (long)t.Weight + (t.Red ? 1 : 0) + t.Depth + (t.Parent != null ? 1 : 0);
		return sum + Traverse (t.Left) + Traverse (t.Right);
	}

	// What a user writes instead: a preorder writer, the parent links implied by the order.
	static void HandWrite (BinaryWriter w, TreeNode t)
	{
		if (t == null) {
			w.Write ((byte)0);
			return;
		}
		w.Write ((byte)1);
		w.Write (t.Key); w.Write (t.Stamp); w.Write (t.Weight); w.Write (t.Red); w.Write (t.Depth);
		HandWrite (w, t.Left);
		HandWrite (w, t.Right);
	}

	static TreeNode HandRead (BinaryReader r, TreeNode parent)
	{
		if (r.ReadByte () == 0)
			return null;
		var t = new TreeNode { Key = r.ReadInt32 (), Stamp = r.ReadInt64 (), Weight = r.ReadDouble (), Red = r.ReadBoolean (),
				       Depth = r.ReadInt16 (), Parent = parent };
		t.Left = HandRead (r, t);
		t.Right = HandRead (r, t);
		return t;
	}

	// The floor of restoring: the same nodes allocated and filled with `new`, in preorder (node i's children are 2i+1, 2i+2).
	static TreeNode NewTree (int i, int n, TreeNode parent)
	{
		if (i >= n)
			return null;
		var t = new TreeNode { Key = i * 7, Stamp = (long)i << 20, Weight = i * 0.5, Red = i % 3 == 0, Parent = parent,
				       Depth = (short)(parent == null ? 0 : parent.Depth + 1) };
		t.Left = NewTree (2 * i + 1, n, t);
		t.Right = NewTree (2 * i + 2, n, t);
		return t;
	}

	static void Row (string mech, string op, int n, int rep, long ns, long bytes)
	{
		Console.WriteLine ("{0},{1},{2},{3},{4},{5}", mech, op, n, rep, ns, bytes);
	}

	// Every timed repetition, of either mechanism, starts from a collected heap, so
	// that no repetition pays for the garbage of the one before.
	static void Settle ()
	{
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
	}

	static long Ns (Stopwatch sw) { return (long)(sw.ElapsedTicks * (1e9 / Stopwatch.Frequency)); }

	static int Main (string[] args)
	{
		int n = int.Parse (args [1]);
		var sw = new Stopwatch ();
		if (args [0] == "bf-cold") {
			sw.Start ();
			var cold = (TreeNode)new BinaryFormatter ().Deserialize (new MemoryStream (File.ReadAllBytes (args [2])));
			sw.Stop ();
			if (!Same (Build (n), cold, n)) { Console.Error.WriteLine ("BinaryFormatter restore differs"); return 1; }
			Row ("BinaryFormatter", "restore-cold", n, 1, Ns (sw), new FileInfo (args [2]).Length);
			return 0;
		}
		int reps = int.Parse (args [2]);
		if (args [0] == "save") {
			TreeNode root = Build (n);
			var bf = new BinaryFormatter ();
			for (int r = 0; r <= reps && n <= BinaryFormatterMaxNodes; r++) {           // rep 0 warms up the JIT
				var ms = new MemoryStream ();
				Settle ();
				sw.Restart (); bf.Serialize (ms, root); sw.Stop ();
				if (r > 0) Row ("BinaryFormatter", "serialize", n, r, Ns (sw), ms.Length);
				if (r == reps) File.WriteAllBytes (args [3], ms.ToArray ());
			}
			// SP and its peers in this process take turns, a repetition of each at a
			// time, so that a change in the machine's speed (a VM's neighbours) weighs
			// on all of them alike: summarize.py compares them repetition by repetition.
			long fields = Traverse (root);
			SPC.AddRoot (root);
			for (int r = 0; r <= reps; r++) {           // rep 0 warms up the JIT
				Settle ();
				sw.Restart (); long sum = Traverse (root); sw.Stop ();
				if (sum != fields) { Console.Error.WriteLine ("the traversal differs"); return 1; }
				if (r > 0) Row ("Traversal", "serialize", n, r, Ns (sw), 0);
				var ms = new MemoryStream ();
				Settle ();
				sw.Restart ();
				using (var w = new BinaryWriter (ms, System.Text.Encoding.UTF8, true))
					HandWrite (w, root);
				sw.Stop ();
				if (r > 0) Row ("BinaryWriter", "serialize", n, r, Ns (sw), ms.Length);
				Settle ();
				SPC.SendPData ();
				SPC.WaitPersisted ();                   // the writer's work done before the next turn is timed
				SPStats s = SPC.GetStats ();
				if (r > 0) {
					Row ("SP", "serialize", n, r, s.LastSerializeNs, s.LastBytes);
					Row ("SP", "commit", n, r, s.LastCommitNs, s.LastBytes);
				}
			}
			return 0;
		}
		// load: this process started warm; SP's restore already ran in IsWarmRestart.
		sw.Restart ();
		bool warm = SPC.IsWarmRestart ();
		sw.Stop ();
		if (!warm) { Console.Error.WriteLine ("load needs a store written by save"); return 1; }
		TreeNode expected = Build (n);
		if (!Same (expected, (TreeNode)SPC.RecvPData (1), n)) { Console.Error.WriteLine ("SP restore differs"); return 1; }
		SPStats st = SPC.GetStats ();
		Row ("SP", "restore-cold", n, 1, st.RestoreNs, st.RestoredBytes);
		if (reps == 0)                                  // SP alone (for profiling)
			return 0;
		var hand = new MemoryStream ();
		using (var w = new BinaryWriter (hand, System.Text.Encoding.UTF8, true))
			HandWrite (w, expected);
		// Turns, as in save: SP's decode (warm, as BinaryFormatter's below), the rebuild with BinaryReader, `new`.
		// Two turns before the timed ones warm up the JIT and the heap (as the Java peers warm up for
		// 3 s): a turn's tree made with `new` stays alive through the next turn's collections (stock
		// Mono keeps it), so until the heap has grown to its peak the next restore finds no room in
		// it and takes fresh pages (SP at 1,000,000 nodes: 53-77 ms in the first turn after one
		// warm-up, 27-29 ms after).
		for (int r = 1 - RestoreWarmUps; r <= reps; r++) {
			Settle ();
			long decode = SPDiagnostics.TimeDecodeOfNewest ();
			if (r > 0) Row ("SP", "restore", n, r, decode, st.RestoredBytes);
			hand.Position = 0;
			Settle ();
			sw.Restart ();
			TreeNode back;
			using (var rd = new BinaryReader (hand, System.Text.Encoding.UTF8, true))
				back = HandRead (rd, null);
			sw.Stop ();
			if (!Same (expected, back, n)) { Console.Error.WriteLine ("BinaryReader rebuild differs"); return 1; }
			if (r > 0) Row ("BinaryReader", "restore", n, r, Ns (sw), hand.Length);
			back = null;
			Settle ();
			sw.Restart (); TreeNode fresh = NewTree (0, n, null); sw.Stop ();
			if (!Same (expected, fresh, n)) { Console.Error.WriteLine ("the tree built with new differs"); return 1; }
			if (r > 0) Row ("New", "restore", n, r, Ns (sw), 0);
		}
		if (n > BinaryFormatterMaxNodes)
			return 0;
		var f = new BinaryFormatter ();
		var buf = new MemoryStream ();
		f.Serialize (buf, expected);
		for (int r = 0; r <= reps; r++) {
			buf.Position = 0;
			Settle ();
			sw.Restart (); var back = (TreeNode)f.Deserialize (buf); sw.Stop ();
			if (!Same (expected, back, n)) { Console.Error.WriteLine ("BinaryFormatter restore differs"); return 1; }
			if (r > 0) Row ("BinaryFormatter", "restore", n, r, Ns (sw), buf.Length);
		}
		return 0;
	}
}
