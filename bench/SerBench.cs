// SerBench: the paper's Figures 3-6, extended: serialize and restore time and
// output bytes against size, SP against BinaryFormatter,
// DataContractSerializer and Newtonsoft.Json, on
//   rbtree  a red-black tree of composite objects (node: key, colour, left,
//           right, parent, and a Payload object of four fields), built by
//           inserting the keys in a shuffled order (fixed seed);
//   ints    an int[] (held by an [SPersistent] object for SP).
//
//   SerBench.exe others STRUCT N REPS        BinaryFormatter, DataContract-
//       Serializer, Newtonsoft.Json: REPS serializations into memory, then
//       REPS restores from those bytes
//   SerBench.exe sp STRUCT N REPS STORAGE    REPS SendPData (the runtime's
//       store is STORAGE: null, tmpfs, disk); rows "serialize" (the
//       serializer's time) and "commit" (the store's)
//   SerBench.exe sp-load STRUCT N REPS STORAGE   (a warm restart) SP's restore
//       as the process's first act ("restore-cold": open, read, validate,
//       construct), then REPS decodes of the same snapshot from memory
//       ("restore", comparable with the others' restore)
//   SerBench.exe sp-cycle STRUCT N REPS LABEL   (incremental mode) REPS cycles
//       as mechanism LABEL: "serialize" (the increments' work, the start's
//       instant included) and "cycle" (SendPData until durable, the periods
//       between increments included), and "increment" (ns: the increments'
//       average length; bytes: how many)
//   SerBench.exe floor-cycle rbtree N REPS PAUSE_US PERIOD_US   the machine's
//       floor for an incremental cycle: REPS times, a breadth-first walk
//       reading every field of every node and payload, whole ("Traversal")
//       and then in increments of PAUSE_US released every PERIOD_US as the
//       SP task's are ("Traversal in increments", bytes: how many)
//
// Prints CSV rows: structure,size,mechanism,operation,storage,rep,ns,bytes.
// Rep 0 of everything warms the JIT up and is not printed.  Every timed rep
// starts from a collected heap, and every restored graph is compared with a
// freshly built one before its time is printed; a difference exits 1.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.InteropServices;
using System.Runtime.Serialization;
using System.Runtime.Serialization.Formatters.Binary;
using Newtonsoft.Json;
using SPersistence;

[Serializable, DataContract (IsReference = true), SPersistent]
public class Payload
{
	[DataMember, SPersistentField] public long Stamp;
	[DataMember, SPersistentField] public double Weight;
	[DataMember, SPersistentField] public int Count;
	[DataMember, SPersistentField] public short Flags;
}

[Serializable, DataContract (IsReference = true), SPersistent]
public class RBNode
{
	[DataMember, SPersistentField] public int Key;
	[DataMember, SPersistentField] public bool Red;
	[DataMember, SPersistentField] public Payload Value;
	[DataMember, SPersistentField] public RBNode Left, Right, Parent;
}

[Serializable, DataContract (IsReference = true), SPersistent]
public class RBTree
{
	[DataMember, SPersistentField] public RBNode Root;
	[DataMember, SPersistentField] public int Count;

	// CLRS insertion with the fix-up (no sentinel: null leaves are black).
	public void Insert (int key)
	{
		var z = new RBNode { Key = key, Red = true, Value = new Payload { Stamp = (long)key << 16, Weight = key * 0.25, Count = key % 1000, Flags = (short)(key & 0x7fff) } };
		RBNode y = null, x = Root;
		while (x != null) {
			y = x;
			x = key < x.Key ? x.Left : x.Right;
		}
		z.Parent = y;
		if (y == null) Root = z;
		else if (key < y.Key) y.Left = z;
		else y.Right = z;
		Count++;
		FixUp (z);
	}

	static bool IsRed (RBNode n) { return n != null && n.Red; }

	void FixUp (RBNode z)
	{
		while (IsRed (z.Parent)) {
			RBNode p = z.Parent, g = p.Parent;
			bool left = p == g.Left;
			RBNode uncle = left ? g.Right : g.Left;
			if (IsRed (uncle)) {
				p.Red = false; uncle.Red = false; g.Red = true;
				z = g;
				continue;
			}
			if (z == (left ? p.Right : p.Left)) {
				z = p;
				Rotate (z, left);
				p = z.Parent;
			}
			p.Red = false; g.Red = true;
			Rotate (g, !left);
		}
		Root.Red = false;
	}

	// Rotate left (toLeft) or right around x.
	void Rotate (RBNode x, bool toLeft)
	{
		RBNode y = toLeft ? x.Right : x.Left;
		RBNode inner = toLeft ? y.Left : y.Right;
		if (toLeft) x.Right = inner; else x.Left = inner;
		if (inner != null) inner.Parent = x;
		y.Parent = x.Parent;
		if (x.Parent == null) Root = y;
		else if (x == x.Parent.Left) x.Parent.Left = y;
		else x.Parent.Right = y;
		if (toLeft) y.Left = x; else y.Right = x;
		x.Parent = y;
	}
}

[Serializable, DataContract, SPersistent]
public class IntHolder
{
	[DataMember, SPersistentField] public int [] Data;
}

static class SerBench
{
	static string structure;
	static int size;

	static object Build ()
	{
		if (structure == "ints") {
			var a = new int [size];
			for (int i = 0; i < size; i++)
				a [i] = i * 31 ^ (i >> 3);
			return a;
		}
		var keys = new int [size];
		for (int i = 0; i < size; i++)
			keys [i] = i * 3;
		var rng = new Random (20261123);
		for (int i = size - 1; i > 0; i--) {
			int j = rng.Next (i + 1);
			int t = keys [i]; keys [i] = keys [j]; keys [j] = t;
		}
		var tree = new RBTree ();
		foreach (int k in keys)
			tree.Insert (k);
		return tree;
	}

	// The graph as SP persists it: an object (the int[] in a holder).
	static object SpRoot (object graph)
	{
		return structure == "ints" ? new IntHolder { Data = (int [])graph } : graph;
	}

	static object FromSpRoot (object root)
	{
		return structure == "ints" ? ((IntHolder)root).Data : root;
	}

	// ---- equality -----------------------------------------------------------

	static bool SameNode (RBNode x, RBNode y)
	{
		if (x.Key != y.Key || x.Red != y.Red)
			return false;
		Payload a = x.Value, b = y.Value;
		if (a.Stamp != b.Stamp || a.Weight != b.Weight || a.Count != b.Count || a.Flags != b.Flags)
			return false;
		return (x.Parent == null) == (y.Parent == null) && (x.Parent == null || x.Parent.Key == y.Parent.Key);
	}

	// Every node, its payload, its colour, its parent and the shape, walked without recursion.
	static bool Same (object expected, object actual)
	{
		if (expected is int [] ea) {
			var aa = actual as int [];
			if (aa == null || aa.Length != ea.Length)
				return false;
			for (int i = 0; i < ea.Length; i++)
				if (ea [i] != aa [i])
					return false;
			return true;
		}
		var te = (RBTree)expected;
		var ta = actual as RBTree;
		if (ta == null || ta.Count != te.Count)
			return false;
		var qe = new RBNode [te.Count];
		var qa = new RBNode [te.Count];
		int head = 0, tail = 0;
		if (te.Root != null) {
			if (ta.Root == null)
				return false;
			qe [tail] = te.Root; qa [tail++] = ta.Root;
		}
		while (head < tail) {
			RBNode x = qe [head], y = qa [head++];
			if (!SameNode (x, y))
				return false;
			foreach (bool left in new [] { true, false }) {
				RBNode cx = left ? x.Left : x.Right, cy = left ? y.Left : y.Right;
				if ((cx == null) != (cy == null) || tail == te.Count && cx != null)
					return false;
				if (cx != null) { qe [tail] = cx; qa [tail++] = cy; }
			}
		}
		return tail == te.Count;
	}

	// ---- the others -----------------------------------------------------------

	interface IMechanism
	{
		string Name { get; }
		void Write (Stream s, object graph);
		object Read (Stream s);
	}

	class Binary : IMechanism
	{
		readonly BinaryFormatter f = new BinaryFormatter ();
		public string Name { get { return "BinaryFormatter"; } }
		public void Write (Stream s, object graph) { f.Serialize (s, graph); }
		public object Read (Stream s) { return f.Deserialize (s); }
	}

	class DataContract : IMechanism
	{
		readonly DataContractSerializer dcs;
		public DataContract (Type t) { dcs = new DataContractSerializer (t); }
		public string Name { get { return "DataContractSerializer"; } }
		public void Write (Stream s, object graph) { dcs.WriteObject (s, graph); }
		public object Read (Stream s) { return dcs.ReadObject (s); }
	}

	// A serializer per call: one reused keeps its reference ids from call to call ($id grows).
	class Json : IMechanism
	{
		readonly JsonSerializerSettings settings = new JsonSerializerSettings {
			PreserveReferencesHandling = PreserveReferencesHandling.Objects };
		readonly Type type;
		public Json (Type t) { type = t; }
		public string Name { get { return "Newtonsoft.Json"; } }
		public void Write (Stream s, object graph)
		{
			var w = new StreamWriter (s);
			JsonSerializer.Create (settings).Serialize (w, graph);
			w.Flush ();
		}
		public object Read (Stream s) { return JsonSerializer.Create (settings).Deserialize (new StreamReader (s), type); }
	}

	// ---- measuring --------------------------------------------------------------

	static void Row (string mech, string op, string storage, int rep, long ns, long bytes)
	{
		Console.WriteLine ("{0},{1},{2},{3},{4},{5},{6},{7}", structure, size, mech, op, storage, rep, ns, bytes);
	}

	static void Settle ()
	{
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
	}

	static long Ns (Stopwatch sw) { return Ns (sw.ElapsedTicks); }

	static long Ns (long ticks) { return (long)(ticks * (1e9 / Stopwatch.Frequency)); }

	static void Fail (string what)
	{
		Console.Error.WriteLine ("SerBench {0} {1}: {2}", structure, size, what);
		Environment.Exit (1);
	}

	static void Others (int reps)
	{
		object graph = Build ();
		Type t = graph.GetType ();
		var sw = new Stopwatch ();
		foreach (IMechanism m in new IMechanism [] { new Binary (), new DataContract (t), new Json (t) }) {
			byte [] bytes = null;
			for (int r = 0; r <= reps; r++) {
				var ms = new MemoryStream ();
				Settle ();
				sw.Restart (); m.Write (ms, graph); sw.Stop ();
				bytes = ms.ToArray ();
				if (r > 0) Row (m.Name, "serialize", "memory", r, Ns (sw), bytes.Length);
			}
			for (int r = 0; r <= reps; r++) {
				var ms = new MemoryStream (bytes);
				Settle ();
				sw.Restart (); object back = m.Read (ms); sw.Stop ();
				if (!Same (graph, back))
					Fail (m.Name + " restored a different graph");
				if (r > 0) Row (m.Name, "restore", "memory", r, Ns (sw), bytes.Length);
			}
		}
	}

	static void Sp (int reps, string storage)
	{
		SPC.AddRoot (SpRoot (Build ()));
		for (int r = 0; r <= reps; r++) {
			Settle ();
			SPC.SendPData ();
			SPStats s = SPC.GetStats ();
			if (r > 0) {
				Row ("SP", "serialize", storage, r, s.LastSerializeNs, s.LastBytes);
				Row ("SP", "commit", storage, r, s.LastCommitNs, s.LastBytes);
			}
		}
	}

	static void SpLoad (int reps, string storage)
	{
		if (!SPC.IsWarmRestart ())
			Fail ("sp-load needs the store sp wrote");
		SPStats st = SPC.GetStats ();
		if (!Same (Build (), FromSpRoot (SPC.RecvPData (1))))
			Fail ("SP restored a different graph");
		Row ("SP", "restore-cold", storage, 1, st.RestoreNs, st.RestoredBytes);
		for (int r = 1; r <= reps; r++) {
			Settle ();
			Row ("SP", "restore", "memory", r, SPDiagnostics.TimeDecodeOfNewest (), st.RestoredBytes);
		}
	}

	static void SpCycle (int reps, string label)
	{
		SPC.AddRoot (SpRoot (Build ()));
		var sw = new Stopwatch ();
		for (int r = 0; r <= reps; r++) {
			Settle ();
			sw.Restart ();
			SPC.SendPData ();
			SPC.WaitPersisted ();
			sw.Stop ();
			SPStats st = SPC.GetStats ();
			if (r > 0) {
				Row (label, "serialize", "null", r, st.LastSerializeNs, st.LastBytes);   // the increments' work
				Row (label, "cycle", "null", r, Ns (sw), st.LastBytes);                   // SendPData to durable
				Row (label, "increment", "null", r, st.CycleAvgPauseNs, st.CycleIncrements);
			}
		}
	}

	// ---- the machine's floor for an incremental cycle ---------------------------
	//
	// An incremental cycle's increments do more work than one stop-the-world pass
	// over the same graph partly because of the machine: each starts after the
	// task slept, and on a virtual machine a CPU that slept (halted) comes back
	// with its caches and TLB cold or taken by other tenants.  This walk, with
	// no runtime of ours in it, shows how much: the same graph, walked whole and
	// then in increments of the SP task's length and period, side by side.

	// A breadth-first walk of the tree that reads what the serializer reads.
	sealed class Walk
	{
		readonly RBNode [] queue;
		int head, tail;
		public long Sum;

		public Walk (RBTree tree)
		{
			queue = new RBNode [tree.Count];
			if (tree.Root != null)
				queue [tail++] = tree.Root;
		}

		public bool Done { get { return head == tail; } }

		public void Step (int nodes)
		{
			for (int k = 0; k < nodes && head < tail; k++) {
				RBNode x = queue [head++];
				Payload v = x.Value;
				Sum += x.Key + (x.Red ? 1 : 0) + v.Stamp + (long)v.Weight + v.Count + v.Flags;
				if (x.Left != null) queue [tail++] = x.Left;
				if (x.Right != null) queue [tail++] = x.Right;
				if (x.Parent != null) Sum += x.Parent.Key;
			}
		}
	}

	[StructLayout (LayoutKind.Sequential)]
	struct Timespec { public long Sec, Nsec; }

	[DllImport ("libc")]
	static extern int clock_gettime (int clock, out Timespec ts);

	[DllImport ("libc")]
	static extern int clock_nanosleep (int clock, int flags, ref Timespec request, IntPtr remain);

	const int ClockMonotonic = 1, TimerAbstime = 1;

	// The SP task's sleep: until the next release, an absolute time PERIOD_US after the last.
	static void SleepUntil (ref Timespec release, long periodNs)
	{
		long ns = release.Nsec + periodNs;
		release.Sec += ns / 1000000000;
		release.Nsec = ns % 1000000000;
		while (clock_nanosleep (ClockMonotonic, TimerAbstime, ref release, IntPtr.Zero) == 4) {   // EINTR
		}
	}

	static void FloorCycle (int reps, long pauseUs, long periodUs)
	{
		if (structure != "rbtree")
			Fail ("floor-cycle walks the rbtree");
		var tree = (RBTree)Build ();
		long expected = 0;
		var sw = new Stopwatch ();
		for (int r = 0; r <= reps; r++) {
			var whole = new Walk (tree);
			Settle ();
			sw.Restart ();
			while (!whole.Done)
				whole.Step (int.MaxValue);
			sw.Stop ();
			if (r > 0) Row ("Traversal", "serialize", "null", r, Ns (sw), 0);
			var pieces = new Walk (tree);
			Settle ();
			long work = 0, increments = 0, pauseTicks = pauseUs * Stopwatch.Frequency / 1000000;
			Timespec release;
			clock_gettime (ClockMonotonic, out release);
			while (!pieces.Done) {
				long t0 = Stopwatch.GetTimestamp (), t;
				do {
					pieces.Step (64);
					t = Stopwatch.GetTimestamp ();
				} while (!pieces.Done && t - t0 < pauseTicks);
				work += t - t0;
				increments++;
				SleepUntil (ref release, periodUs * 1000);
			}
			if (r > 0) Row ("Traversal in increments", "serialize", "null", r, Ns (work), increments);
			if (r == 0)
				expected = whole.Sum;
			if (whole.Sum != expected || pieces.Sum != expected)
				Fail ("a walk of the tree read other values than the first");
		}
	}

	static int Main (string [] args)
	{
		structure = args [1];
		size = int.Parse (args [2]);
		int reps = int.Parse (args [3]);
		if (structure != "rbtree" && structure != "ints")
			Fail ("structure must be rbtree or ints");
		switch (args [0]) {
		case "others": Others (reps); break;
		case "sp": Sp (reps, args [4]); break;
		case "sp-load": SpLoad (reps, args [4]); break;
		case "sp-cycle": SpCycle (reps, args [4]); break;
		case "floor-cycle": FloorCycle (reps, long.Parse (args [4]), long.Parse (args [5])); break;
		default: Fail ("unknown command " + args [0]); break;
		}
		return 0;
	}
}
