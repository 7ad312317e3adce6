// GraphBench: the workload of the paper's Table 1 (section 5.1).
//
//   spmono [options] GraphBench.exe run SEED     construct, persist, mutate; one CSV row
//   spmono --sp-store=S GraphBench.exe check SEED  the snapshot equals the graph at SendPData
//   spmono [options] GraphBench.exe three SEED   the paper's Table 2 (section 5.3): three
//       threads each construct a graph of 1326 objects, then rewire and delete its
//       nodes one by one; the first graph is persistent (its root registered,
//       SendPData after the construction), the second is of the same classes but
//       not persistent, the third of classes that are not [SPersistent] (3978
//       objects in all).  Threads 2 and 3 keep rewiring until the first graph's
//       snapshot is durable, so their stores overlap the whole cycle.  Row: serialized_objects,barrier_calls,barrier_writes,
//       objects_total.  "check SEED" then checks the first graph.
//
// A directed weighted graph of 1326 persistent objects (1 graph, 1 vertex
// array, 200 vertices, their 200 names and 924 edges; about 40 KB
// serialized) is constructed, then SendPData is called and, while the cycle
// runs, the application changes the connections of the vertices and deletes
// them one by one, as in the paper (the mutations are compiled beforehand, on
// a scratch graph, so that they overlap the cycle).  The row: the application's
// time (from construction to the snapshot being durable), and the cycle's
// statistics (SPStats):
// app_ns,serialize_ns,commit_ns,increments,max_pause_ns,avg_pause_ns,cycle_ns,barrier_calls,barrier_writes,bytes,objects.
using System;
using System.Diagnostics;
using SPersistence;

[SPersistent]
public class Graph {
	[SPersistentField] public Vertex [] Vertices;
	[SPersistentField] public int Version;

	// The mutations of the paper's application: rewire, then delete one by one.
	[SPersistentUpdate]
	public void Rewire (Random rng)
	{
		foreach (Vertex v in Vertices)
			for (Edge e = v.First; e != null; e = e.Next)
				e.Retarget (Vertices [rng.Next (Vertices.Length)], rng.NextDouble ());
	}

	[SPersistentUpdate]
	public void DeleteAll ()
	{
		for (int i = 0; i < Vertices.Length; i++) {
			Vertices [i].Detach ();
			Vertices [i] = null;
		}
		Version++;
	}
}

[SPersistent]
public class Vertex {
	[SPersistentField] public int Id;
	[SPersistentField] public string Name;
	[SPersistentField] public Edge First;
	[SPersistentField] public int Degree;

	[SPersistentUpdate]
	public void Detach ()
	{
		First = null;
		Degree = 0;
	}
}

[SPersistent]
public class Edge {
	[SPersistentField] public Vertex To;
	[SPersistentField] public double Weight;
	[SPersistentField] public Edge Next;

	[SPersistentUpdate]
	public void Retarget (Vertex to, double weight)
	{
		To = to;
		Weight = weight;
	}
}

// The third thread's graph: the same shape, classes that are not persistent.
public class PlainGraph {
	public PlainVertex [] Vertices;

	public void Rewire (Random rng)
	{
		foreach (PlainVertex v in Vertices)
			for (PlainEdge e = v.First; e != null; e = e.Next) {
				e.To = Vertices [rng.Next (Vertices.Length)];
				e.Weight = rng.NextDouble ();
			}
	}

	public void DeleteAll ()
	{
		for (int i = 0; i < Vertices.Length; i++) {
			Vertices [i].First = null;
			Vertices [i] = null;
		}
	}
}

public class PlainVertex {
	public int Id;
	public string Name;
	public PlainEdge First;
}

public class PlainEdge {
	public PlainVertex To;
	public double Weight;
	public PlainEdge Next;
}

public static class GraphBench {
	public const int VertexCount = 200, EdgeCount = 924;   // 1 + 1 + 200 + 200 + 924 = 1326 objects

	public static Graph Build (int seed)
	{
		var rng = new Random (seed);
		var g = new Graph { Vertices = new Vertex [VertexCount] };
		for (int i = 0; i < VertexCount; i++)
			g.Vertices [i] = new Vertex { Id = i, Name = "vertex-" + i + "-of-the-plant-graph" };
		for (int k = 0; k < EdgeCount; k++) {
			Vertex from = g.Vertices [k < VertexCount ? k : rng.Next (VertexCount)];
			from.First = new Edge { To = g.Vertices [rng.Next (VertexCount)], Weight = rng.NextDouble (), Next = from.First };
			from.Degree++;
		}
		return g;
	}

	static string Describe (Graph g)
	{
		var sb = new System.Text.StringBuilder ();
		sb.Append (g.Version).Append ('|');
		foreach (Vertex v in g.Vertices) {
			if (v == null) {
				sb.Append ("null;");
				continue;
			}
			sb.Append (v.Id).Append (v.Name).Append (v.Degree).Append (':');
			for (Edge e = v.First; e != null; e = e.Next)
				sb.Append (e.To.Id).Append ('/').Append (e.Weight.ToString ("R")).Append (',');
			sb.Append (';');
		}
		return sb.ToString ();
	}

	static int Run (int seed)
	{
		// The mutations once on a graph of their own first, so that the JIT has
		// compiled them before the cycle: they then run while it does.
		Graph scratch = Build (seed);
		scratch.Rewire (new Random (seed));
		scratch.DeleteAll ();
		var total = Stopwatch.StartNew ();
		Graph g = Build (seed);
		SPC.AddRoot (g);
		SPC.SendPData ();
		var rng = new Random (seed + 1);
		g.Rewire (rng);
		g.DeleteAll ();
		SPC.WaitPersisted ();
		total.Stop ();
		SPStats s = SPC.GetStats ();
		Console.WriteLine ("{0},{1},{2},{3},{4},{5},{6},{7},{8},{9},{10}", total.Elapsed.Ticks * 100, s.LastSerializeNs,
				   s.LastCommitNs, s.CycleIncrements, s.CycleMaxPauseNs, s.CycleAvgPauseNs, s.CycleNs, s.CycleBarrierCalls,
				   s.CycleBarrierWrites, s.LastBytes, s.LastObjects);
		return 0;
	}

	static PlainGraph BuildPlain (int seed)
	{
		var rng = new Random (seed);
		var g = new PlainGraph { Vertices = new PlainVertex [VertexCount] };
		for (int i = 0; i < VertexCount; i++)
			g.Vertices [i] = new PlainVertex { Id = i, Name = "vertex-" + i + "-of-the-plant-graph" };
		for (int k = 0; k < EdgeCount; k++) {
			PlainVertex from = g.Vertices [k < VertexCount ? k : rng.Next (VertexCount)];
			from.First = new PlainEdge { To = g.Vertices [rng.Next (VertexCount)], Weight = rng.NextDouble (), Next = from.First };
		}
		return g;
	}

	// Table 2: the three threads construct together, thread 1 persists, all three mutate during the cycle.
	static int Three (int seed)
	{
		Graph scratch = Build (seed);                 // the mutations compiled beforehand, as in Run
		scratch.Rewire (new Random (seed));
		scratch.DeleteAll ();
		PlainGraph plainScratch = BuildPlain (seed);
		plainScratch.Rewire (new Random (seed));
		plainScratch.DeleteAll ();
		var built = new System.Threading.Barrier (3);
		var done = new System.Threading.ManualResetEvent (false);
		// Threads 2 and 3 rewire their graphs until thread 1's snapshot is durable, then delete their nodes.
		Action<Action, Action, Action> worker = (construct, rewire, delete) => {
			construct ();
			built.SignalAndWait ();
			while (!done.WaitOne (0))
				rewire ();
			delete ();
		};
		Graph persistent = null, transient = null;
		PlainGraph plain = null;
		var rng2 = new Random (seed + 3);
		var rng3 = new Random (seed + 5);
		var threads = new [] {
			// Thread 1 asks for persistence after the construction, then rewires and deletes its nodes.
			new System.Threading.Thread (() => {
				persistent = Build (seed);
				SPC.AddRoot (persistent);
				built.SignalAndWait ();
				SPC.SendPData ();
				persistent.Rewire (new Random (seed + 1));
				persistent.DeleteAll ();
				SPC.WaitPersisted ();
				done.Set ();
			}),
			new System.Threading.Thread (() => worker (() => transient = Build (seed + 2),
				() => transient.Rewire (rng2), () => transient.DeleteAll ())),
			new System.Threading.Thread (() => worker (() => plain = BuildPlain (seed + 4),
				() => plain.Rewire (rng3), () => plain.DeleteAll ())),
		};
		foreach (var t in threads)
			t.Start ();
		foreach (var t in threads)
			t.Join ();
		SPStats s = SPC.GetStats ();
		Console.WriteLine ("{0},{1},{2},{3}", s.LastObjects, s.CycleBarrierCalls, s.CycleBarrierWrites, 3 * (2 + 2 * VertexCount + EdgeCount));
		return 0;
	}

	static int Check (int seed)
	{
		var g = SPC.RecvPData (1) as Graph;
		if (g == null) {
			Console.Error.WriteLine ("CHECK FAILED: no graph restored");
			return 1;
		}
		if (Describe (g) != Describe (Build (seed))) {
			Console.Error.WriteLine ("CHECK FAILED: the restored graph differs from the graph at SendPData");
			return 1;
		}
		return 0;
	}

	static int Main (string [] args)
	{
		if (args.Length == 2 && args [0] == "run")
			return Run (int.Parse (args [1]));
		if (args.Length == 2 && args [0] == "check")
			return Check (int.Parse (args [1]));
		if (args.Length == 2 && args [0] == "three")
			return Three (int.Parse (args [1]));
		Console.Error.WriteLine ("usage: GraphBench.exe run|check|three SEED");
		return 2;
	}
}
