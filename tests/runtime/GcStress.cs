// GcStress: SendPData while another thread makes the GC run (nursery
// collections that move the graph's objects, forced full collections).
// Identity must survive the moves: every shared object is written once and
// restored shared.  The digest numbers objects by first visit, so a duplicated
// or merged object changes it.
//   GcStress.exe write | check (the restore, with collections forced meanwhile)
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;
using SPersistence;

[SPersistent]
class Vertex
{
	[SPersistentField] public int Value;
	[SPersistentField] public Vertex A, B;
	[SPersistentField] public string Name;
	[SPersistentField] public Vertex[] Many;
}

[SPersistent]
class Holder
{
	[SPersistentField] public Vertex Graph;
}

sealed class ByIdentity : IEqualityComparer<object>
{
	public new bool Equals (object x, object y) { return object.ReferenceEquals (x, y); }
	public int GetHashCode (object o) { return RuntimeHelpers.GetHashCode (o); }
}

static class Program
{
	static string Digest (Vertex root)
	{
		var ids = new Dictionary<object, int> (new ByIdentity ());
		var queue = new Queue<Vertex> ();
		var sb = new StringBuilder ();
		Func<object, string> id = o => {
			if (o == null) return "-";
			int n;
			if (!ids.TryGetValue (o, out n)) { n = ids.Count; ids [o] = n; if (o is Vertex) queue.Enqueue ((Vertex)o); }
			return n.ToString ();
		};
		id (root);
		while (queue.Count > 0) {
			Vertex v = queue.Dequeue ();
			sb.Append (v.Value).Append (':').Append (id (v.A)).Append (',').Append (id (v.B)).Append (',').Append (id (v.Name)).Append (',').Append (id (v.Many));
			if (v.Many != null) foreach (Vertex m in v.Many) sb.Append ('/').Append (id (m));
			sb.Append ('\n');
		}
		return ids.Count + " objects, digest " + sb.ToString ().GetHashCode ().ToString ("x8") + " length " + sb.Length;
	}

	static Vertex Build (int n)
	{
		var rnd = new Random (12345);
		var all = new Vertex [n];
		var names = new string [97];
		for (int i = 0; i < names.Length; i++) names [i] = "name-" + i;
		for (int i = 0; i < n; i++) {
			var v = new Vertex { Value = i, Name = names [rnd.Next (names.Length)] };
			if (i > 0) { v.A = all [rnd.Next (i)]; v.B = all [rnd.Next (i)]; }
			if (i % 10 == 0 && i > 0) { v.Many = new Vertex [5]; for (int k = 0; k < 5; k++) v.Many [k] = all [rnd.Next (i)]; }
			all [i] = v;
		}
		// The root reaches everything through a final fan-out.
		var root = new Vertex { Value = -1, Many = all };
		return root;
	}

	// A large restore runs no major collection: its objects all stay live until it ends,
	// so SGen does not count them toward its trigger meanwhile (runtime patch 0011);
	// and few minor ones: its objects are allocated in the old generation (sp-restore.c).
	static int BulkRestore (string mode, int n)
	{
		if (mode == "bulk-write") {
			SPC.AddRoot (new Holder { Graph = Build (n) });
			SPC.SendPData ();
			return 0;
		}
		int majors = GC.CollectionCount (1), minors = GC.CollectionCount (0);
		var holder = (Holder)SPC.RecvPData (1);
		majors = GC.CollectionCount (1) - majors;
		minors = GC.CollectionCount (0) - minors;
		Console.WriteLine ("{0} major and {1} minor collections during the restore of {2} vertices", majors, minors, n);
		T.Eq (0, majors, "major collections during a restore");
		// A state larger than the nursery is restored into the old generation, so no minor collection
		// copies its objects out of the nursery (15 did here before at 1,000,000 vertices).
		// Its arrays still start there: about one nursery a million vertices (1 at 1,000,000, 3 at 2,200,000).
		int bound = 3 * (int)Math.Ceiling (n / 1e6);
		T.Check (minors <= bound, "minor collections during a restore larger than the nursery: " + minors + ", at most " + bound);
		T.Check (Digest (holder.Graph) == Digest (Build (n)), "the restored graph is the one written");
		return 0;
	}

	// A large restore fills whole blocks of the old generation inline (sp-restore.c, runtime
	// patch 0014), and a major collection gives a block back to SGen, whose sweep makes its
	// unused slots free: the restore must take a new block then, never fill the old one
	// further (other allocations would get the same slots).  Another thread forces major
	// collections, with the world stopped wherever the restorer is, while the program's
	// restore runs; several must land in it, and the graph must be the one written.
	static int BulkRestoreUnderCollections (int n)
	{
		bool stop = false;
		var churn = new Thread (() => {
			while (!Volatile.Read (ref stop)) {
				GC.Collect ();
				Thread.Sleep (2);
			}
		});
		int majors = GC.CollectionCount (1);
		churn.Start ();
		while (GC.CollectionCount (1) == majors)
			Thread.Sleep (0);
		majors = GC.CollectionCount (1);
		var holder = (Holder)SPC.RecvPData (1);
		majors = GC.CollectionCount (1) - majors;
		Volatile.Write (ref stop, true);
		churn.Join ();
		Console.WriteLine ("{0} major collections during the restore of {1} vertices", majors, n);
		T.Check (majors >= 2, "major collections forced during the restore: " + majors);
		T.Check (Digest (holder.Graph) == Digest (Build (n)), "the graph restored under major collections is the one written");
		return 0;
	}

	// The restore while another thread forces collections: the restorer allocates inline in
	// its allocation buffer (sp-restore.c), and a collection may stop it anywhere, moving
	// what it has made so far, which only the restore's object table (a root SGen scans)
	// holds until the restore ends.  The program's own restore (its first SPC call, here
	// with collections already running) is the one whose graph the digest checks.
	static int Check ()
	{
		bool stop = false, restoring = false;
		long collections = 0;
		// A millisecond between collections: back to back, they left the restoring thread
		// microseconds between two stops, and a restore took minutes.
		var churn = new Thread (() => {
			while (!Volatile.Read (ref stop)) {
				if (!Volatile.Read (ref restoring)) { Thread.Sleep (0); continue; }
				GC.Collect (collections % 8 == 7 ? 1 : 0);
				Interlocked.Increment (ref collections);
				Thread.Sleep (1);
			}
		});
		churn.Start ();
		Volatile.Write (ref restoring, true);
		while (Interlocked.Read (ref collections) == 0)
			Thread.Sleep (0);
		long atStart = Interlocked.Read (ref collections);
		T.Check (SPC.IsWarmRestart (), "warm");
		// Usually several; test_gc_moves.sh checks that some run had any (one may miss on a fast machine).
		Console.Error.WriteLine ("collections forced during the program's restore: " +
					 (Interlocked.Read (ref collections) - atStart));
		long before = Interlocked.Read (ref collections);
		var holder = (Holder)SPC.RecvPData (1);
		// A restore of 40,000 vertices takes milliseconds: the same decode again, its objects
		// dropped, until collections have run during some.
		for (int again = 0; again < 200 && Interlocked.Read (ref collections) - before < 10; again++)
			SPDiagnostics.TimeDecodeOfNewest ();
		long during = Interlocked.Read (ref collections) - before;
		Volatile.Write (ref stop, true);
		churn.Join ();
		Console.Error.WriteLine ("collections forced during the restores: " + during);
		T.Check (during > 0, "no collection ran during the restores");
		Console.WriteLine (Digest (holder.Graph));
		return 0;
	}

	static int Main (string[] args)
	{
		if (args [0] == "bulk-collected")
			return BulkRestoreUnderCollections (int.Parse (args [1]));
		if (args [0].StartsWith ("bulk-"))
			return BulkRestore (args [0], int.Parse (args [1]));
		if (args [0] == "check")
			return Check ();
		// The churn thread forces nursery collections back to back while SendPData
		// runs; with a nursery big enough to hold the graph, the first of them moves
		// every object of the graph (to the old generation) in mid-serialization.
		bool stop = false;
		int sending = 0;
		long collections = 0;
		var churn = new Thread (() => {
			while (!Volatile.Read (ref stop)) {
				if (Volatile.Read (ref sending) == 0) { Thread.Sleep (0); continue; }
				GC.Collect (collections % 8 == 7 ? 1 : 0);
				collections++;
			}
		});
		churn.Start ();
		var holder = new Holder ();
		SPC.AddRoot (holder);
		for (int round = 0; round < 4; round++) {
			holder.Graph = Build (40000);  // fresh objects: in the nursery, so they move
			Volatile.Write (ref sending, 1);
			SPC.SendPData ();
			Volatile.Write (ref sending, 0);
		}
		stop = true;
		churn.Join ();
		Console.Error.WriteLine ("collections forced by the churn thread: " + collections);
		T.Check (collections > 0, "the churn thread ran collections");
		Console.WriteLine (Digest (holder.Graph));
		return 0;
	}
}
