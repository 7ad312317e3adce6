// PauseBench: the length of the SP task's increments (issue 3: max at most
// 1.1x the target over at least 10,000 increments, 100,000+ objects and a
// 10,000,000-element array, under SCHED_FIFO).
//
//   spmono --sp-mode=incremental --sp-pause=P --sp-period=T ... PauseBench.exe run NODES LENGTH INCREMENTS
//   spmono --sp-store=S PauseBench.exe check NODES LENGTH STEPS
//
// run: builds the plant (NODES nodes, a tenth of them with a tag string, and
// an int[LENGTH]), persists it once to warm up (class maps, LID table, JIT),
// then persists it cycle after cycle while a control loop updates 100 nodes
// every millisecond, until INCREMENTS increments have run; a last cycle with
// no updates follows.  Prints `steps,N` (the updates made, for check), the
// cycles' rows `cycle,increments,max_pause_ns,avg_pause_ns,cycle_ns,barrier_writes`
// and the histogram of increment pauses `pause_us,count` (SPC.GetPauseHistogram).
// check: rebuilds the plant, replays the updates, and compares it with the
// restored one.
using System;
using System.Diagnostics;
using System.Threading;
using SPersistence;

[SPersistent]
public class Plant {
	[SPersistentField] public Node [] Nodes;
	[SPersistentField] public int [] Samples;
	[SPersistentField] public long Steps;
}

[SPersistent]
public class Node {
	[SPersistentField] public int Value;
	[SPersistentField] public double Level;
	[SPersistentField] public Node Next;
	[SPersistentField] public string Tag;
}

public static class PauseBench {
	const int UpdatesPerTick = 100;

	static Plant Build (int nodes, int length)
	{
		var p = new Plant { Nodes = new Node [nodes], Samples = new int [length] };
		for (int i = 0; i < nodes; i++)
			p.Nodes [i] = new Node { Value = i, Level = i * 0.25, Tag = i % 10 == 0 ? "sensor-" + i : null };
		for (int i = 0; i < nodes; i++)
			p.Nodes [i].Next = p.Nodes [(int)((i * 7919L + 1) % nodes)];
		for (int i = 0; i < length; i++)
			p.Samples [i] = i ^ 0x5a5a;
		return p;
	}

	// Update number k: deterministic, so that check can replay it.
	static void Update (Plant p, long k)
	{
		Node n = p.Nodes [(int)(k * 7919 % p.Nodes.Length)];
		n.Value = (int)k;
		n.Level = k * 0.5;
		if (k % 16 == 0)
			n.Next = p.Nodes [(int)(k * 31 % p.Nodes.Length)];
		p.Steps = k + 1;
	}

	static int Run (int nodes, int length, long want)
	{
		Plant p = Build (nodes, length);
		SPC.AddRoot (p);
		SPC.SendPData ();
		SPC.WaitPersisted ();
		SPC.GetPauseHistogram (true);     // the warm-up cycle does not count
		long steps = 0, increments = 0;
		for (int cycle = 1; increments < want; cycle++) {
			long done = SPC.GetStats ().Snapshots;
			SPC.SendPData ();
			while (SPC.GetStats ().Snapshots == done && SPC.GetStats ().Failures == 0) {
				for (int i = 0; i < UpdatesPerTick; i++)
					Update (p, steps++);
				Thread.Sleep (1);
			}
			SPC.WaitPersisted ();
			SPStats s = SPC.GetStats ();
			increments += s.CycleIncrements;
			Console.WriteLine ("cycle,{0},{1},{2},{3},{4},{5}", cycle, s.CycleIncrements, s.CycleMaxPauseNs,
					   s.CycleAvgPauseNs, s.CycleNs, s.CycleBarrierWrites);
		}
		long [] histogram = SPC.GetPauseHistogram (false);
		SPC.SendPData ();                 // the final state, for check
		SPC.WaitPersisted ();
		Console.WriteLine ("steps,{0}", steps);
		for (int us = 0; us < histogram.Length; us++)
			if (histogram [us] != 0)
				Console.WriteLine ("pause_us,{0},{1}", us, histogram [us]);
		return 0;
	}

	static int Check (int nodes, int length, long steps)
	{
		Plant expected = Build (nodes, length);
		for (long k = 0; k < steps; k++)
			Update (expected, k);
		var got = SPC.RecvPData (1) as Plant;
		if (got == null || got.Steps != expected.Steps || got.Nodes.Length != nodes || got.Samples.Length != length) {
			Console.Error.WriteLine ("CHECK FAILED: the restored plant is not the last one persisted");
			return 1;
		}
		var expectedIndex = new System.Collections.Generic.Dictionary<Node, int> ();
		var gotIndex = new System.Collections.Generic.Dictionary<Node, int> ();
		for (int i = 0; i < nodes; i++) {
			expectedIndex [expected.Nodes [i]] = i;
			gotIndex [got.Nodes [i]] = i;
		}
		for (int i = 0; i < nodes; i++) {
			Node a = expected.Nodes [i], b = got.Nodes [i];
			if (a.Value != b.Value || a.Level != b.Level || a.Tag != b.Tag || expectedIndex [a.Next] != gotIndex [b.Next]) {
				Console.Error.WriteLine ("CHECK FAILED: node {0} differs", i);
				return 1;
			}
		}
		for (int i = 0; i < length; i++)
			if (expected.Samples [i] != got.Samples [i]) {
				Console.Error.WriteLine ("CHECK FAILED: sample {0} differs", i);
				return 1;
			}
		return 0;
	}

	static int Main (string [] args)
	{
		if (args.Length == 4 && args [0] == "run")
			return Run (int.Parse (args [1]), int.Parse (args [2]), long.Parse (args [3]));
		if (args.Length == 4 && args [0] == "check")
			return Check (int.Parse (args [1]), int.Parse (args [2]), long.Parse (args [3]));
		Console.Error.WriteLine ("usage: PauseBench.exe run|check NODES LENGTH INCREMENTS|STEPS");
		return 2;
	}
}
