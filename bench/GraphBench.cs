// GraphBench: the workload of the paper's Table 1 (section 5.1).
//
//   spmono [options] GraphBench.exe run SEED     construct, persist, mutate; one CSV row
//   spmono --sp-store=S GraphBench.exe check SEED  the snapshot equals the graph at SendPData
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
		Console.Error.WriteLine ("usage: GraphBench.exe run|check SEED");
		return 2;
	}
}
