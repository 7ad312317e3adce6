// LongStoreBench: does another thread wait while one thread's store into a
// long array copies it?  (issue 16, item 1: a barrier's slow path may cost
// the storing thread, never another thread's pause.)
//
//   LongStoreBench.exe ELEMENTS NODES REPS
//
// The state: an int[ELEMENTS] and NODES small objects.  Thread A stores into
// the long array (one store: its barrier copies what the cycle has not
// written yet), thread B stores once into every small object (each store's
// first barrier in the cycle writes that object, under the cycle's lock) and
// records its longest store by its own clock.  Three cases a repetition:
//   floor       no cycle runs: B's longest store is the machine's
//   cycle       a cycle runs, A stores nothing: B meets the SP task's units
//   long-store  a cycle runs and A's store copies the long array, B starting
//               2 ms later, while the copy is under way
// Placement: A and the runtime's tasks (sp-task, sp-writer) on CPU 0, B on
// CPU 1, so that B's longest store is what it waits for, not a CPU shared
// with the copy or an increment (those are run-mmu.sh's measure).
// Prints CSV: case,rep,b_longest_us,a_store_ms,copied_bytes.
using System;
using System.Diagnostics;
using System.Threading;
using SPersistence;

[SPersistent]
class LongStoreNode
{
	[SPersistentField] public int Value;
}

[SPersistent]
class LongStoreState
{
	[SPersistentField] public int [] Samples;
	[SPersistentField] public LongStoreNode [] Nodes;

	[SPersistentUpdate]
	public void StoreLong (int v) { Samples [Samples.Length - 1] = v; }

	[SPersistentUpdate]
	public void StoreEachNode (int v, Stopwatch clock, out long longestTicks)
	{
		longestTicks = 0;
		foreach (LongStoreNode n in Nodes) {
			long t0 = clock.ElapsedTicks;
			n.Value = v;
			long d = clock.ElapsedTicks - t0;
			if (d > longestTicks)
				longestTicks = d;
		}
	}
}

static class LongStoreBench
{
	static readonly Stopwatch clock = Stopwatch.StartNew ();

	static void PinThisThread (int cpu) { Check (Affinity.Pin (Affinity.CurrentThread (), cpu)); }

	static void PinTasks (int cpu)
	{
		var tasks = Affinity.RuntimeTasks ();
		if (tasks.Count != 2)
			throw new Exception ("found " + tasks.Count + " of the runtime's two tasks to pin");
		foreach (var task in tasks)
			Check (Affinity.Pin (task.Value, cpu));
	}

	static void Check (string error)
	{
		if (error != null)
			throw new Exception (error);
	}

	static double Us (long ticks) { return ticks * 1e6 / Stopwatch.Frequency; }

	static void Run (LongStoreState state, string name, int rep, bool cycle, bool longStore)
	{
		long longest = 0;
		var b = new Thread (() => {
			long l;
			PinThisThread (1);
			Thread.Sleep (2);
			state.StoreEachNode (rep, clock, out l);
			Interlocked.Exchange (ref longest, l);
		});
		if (cycle)
			SPC.SendPData ();
		b.Start ();
		long a0 = clock.ElapsedTicks;
		if (longStore)
			state.StoreLong (rep);
		long a = clock.ElapsedTicks - a0;
		b.Join ();
		long copied = 0;
		if (cycle) {
			SPC.WaitPersisted ();
			copied = SPC.GetStats ().CycleBarrierCopyBytes;
			if (longStore && copied == 0)
				throw new Exception ("the long array was not copied by its barrier (written before the store?)");
		}
		Console.WriteLine ("{0},{1},{2:F1},{3:F3},{4}", name, rep, Us (Interlocked.Read (ref longest)), Us (a) / 1000, copied);
	}

	static int Main (string [] args)
	{
		int elements = int.Parse (args [0]), nodes = int.Parse (args [1]), reps = int.Parse (args [2]);
		var state = new LongStoreState { Samples = new int [elements], Nodes = new LongStoreNode [nodes] };
		for (int i = 0; i < nodes; i++)
			state.Nodes [i] = new LongStoreNode { Value = i };
		SPC.AddRoot (state);
		SPC.SendPData ();         // warm: the tables and buffers of a cycle of this state exist
		SPC.WaitPersisted ();
		PinThisThread (0);
		PinTasks (0);
		Console.WriteLine ("case,rep,b_longest_us,a_store_ms,copied_bytes");
		for (int rep = 1; rep <= reps; rep++) {
			Run (state, "floor", rep, false, true);
			Run (state, "cycle", rep, true, false);
			Run (state, "long-store", rep, true, true);
		}
		return 0;
	}
}
