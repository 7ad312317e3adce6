// Loops: the barriers the JIT moves out of loops (mono/mini/sp-jit.h) still
// guard every store.  A thread rewrites two arrays and an object of the
// snapshot in store loops, pass after pass, without pause, while the main
// thread takes snapshot after snapshot: each cycle starts with the thread
// stopped somewhere in its loops, and only the barriers the JIT put on the
// loops' entries, after their calls and on their safepoint polls' slow path
// guard what it stores next.
//
//   Loops.exe write N CYCLES KIND   KIND: how the stores are looped
//       poll    one call-free loop nest: the thread stops at a poll
//       call    a call in the inner loop (to a method with a loop of its own,
//               so the thread also stops inside the callee)
//       enter   the outer loop calls a call-free inner loop four stores at a
//               time: the thread also stops just before the inner loop
//       walk    a call-free loop storing into a different object each
//               iteration (Nodes [i].X, .Y): its barrier must stay in the loop
//   Loops.exe check N KIND   (warm restart) the state of one instant: pass q
//       written up to index k, A [0..k) = q, A [k..n) = q - 1, B = A,
//       Last = k - 1, Pass = q - 1 (or q, once the pass is whole); for walk
//       the same of the nodes' X and Y.  A snapshot written while the stores
//       went on unguarded mixes instants.
using System;
using System.Runtime.CompilerServices;
using System.Threading;
using SPersistence;

class Control
{
	public volatile bool Stop;
	public int Spins;
}

[SPersistent]
class Node
{
	[SPersistentField] public int X;
	[SPersistentField] public int Y;
}

[SPersistent]
class State
{
	[SPersistentField] public int [] A;
	[SPersistentField] public int [] B;
	[SPersistentField] public Node [] Nodes;
	[SPersistentField] public int Last;
	[SPersistentField] public int Pass;

	[SPersistentUpdate]
	public static void RunPoll (State s, Control ctl)
	{
		int [] a = s.A, b = s.B;
		int n = a.Length;
		for (int p = 1; !ctl.Stop; p++) {
			for (int i = 0; i < n; i++) {
				a [i] = p;
				b [i] = p;
				s.Last = i;
			}
			s.Pass = p;
		}
	}

	[MethodImpl (MethodImplOptions.NoInlining)]
	static void Spin (Control ctl, int times)
	{
		for (int k = 0; k < times; k++)
			ctl.Spins++;
	}

	[SPersistentUpdate]
	public static void RunCall (State s, Control ctl)
	{
		int [] a = s.A, b = s.B;
		int n = a.Length;
		for (int p = 1; !ctl.Stop; p++) {
			for (int i = 0; i < n; i++) {
				Spin (ctl, 2);
				a [i] = p;
				b [i] = p;
				s.Last = i;
			}
			s.Pass = p;
		}
	}

	[SPersistentUpdate, MethodImpl (MethodImplOptions.NoInlining)]
	static void WriteFour (State s, int [] a, int [] b, int from, int p)
	{
		for (int i = from; i < from + 4; i++) {
			a [i] = p;
			b [i] = p;
			s.Last = i;
		}
	}

	// node lives across blocks, so the allocator gives it a callee-saved
	// register, which the loop writes: the barrier on it must not leave.
	[SPersistentUpdate]
	public static void RunWalk (State s, Control ctl)
	{
		Node [] nodes = s.Nodes;
		int n = nodes.Length;
		for (int p = 1; !ctl.Stop; p++) {
			for (int i = 0; i < n; i++) {
				Node node = nodes [i];
				if (node.X != p)
					node.X = p;
				node.Y = p;
				s.Last = i;
			}
			s.Pass = p;
		}
	}

	[SPersistentUpdate]
	public static void RunEnter (State s, Control ctl)
	{
		int [] a = s.A, b = s.B;
		int n = a.Length;
		for (int p = 1; !ctl.Stop; p++) {
			for (int i = 0; i < n; i += 4)
				WriteFour (s, a, b, i, p);
			s.Pass = p;
		}
	}
}

static class Program
{
	static int Write (int n, int cycles, string kind)
	{
		var s = new State { A = new int [n], B = new int [n], Nodes = new Node [kind == "walk" ? n : 0], Last = n - 1 };
		for (int i = 0; i < s.Nodes.Length; i++)
			s.Nodes [i] = new Node ();
		var ctl = new Control ();
		SPC.AddRoot (s);
		ThreadStart run;
		if (kind == "poll")
			run = () => State.RunPoll (s, ctl);
		else if (kind == "call")
			run = () => State.RunCall (s, ctl);
		else if (kind == "enter")
			run = () => State.RunEnter (s, ctl);
		else if (kind == "walk")
			run = () => State.RunWalk (s, ctl);
		else
			throw new ArgumentException ("kind: poll, call, enter or walk, not " + kind);
		var worker = new Thread (run);
		worker.Start ();
		while (s.Pass < 2)
			Thread.Sleep (1);
		long barrierWrites = 0;
		for (int c = 0; c < cycles; c++) {
			SPC.SendPData ();
			SPC.WaitPersisted ();
			barrierWrites += SPC.GetStats ().CycleBarrierWrites;
		}
		ctl.Stop = true;
		worker.Join ();
		// The stores met the barriers during the cycles (else the check proves nothing about them).
		T.Check (barrierWrites > 0, "barriers wrote objects during the cycles");
		Console.WriteLine ("loops {0}: {1} cycles, {2} passes, {3} objects written by barriers", kind, cycles, s.Pass, barrierWrites);
		return 0;
	}

	static int Check (int n, string kind)
	{
		T.Check (SPC.IsWarmRestart (), "a warm restart");
		var s = (State)SPC.RecvPData (1);
		int [] a = s.A, b = s.B;
		if (kind == "walk") {
			T.Eq (n, s.Nodes.Length, "nodes");
			a = Array.ConvertAll (s.Nodes, node => node.X);
			b = Array.ConvertAll (s.Nodes, node => node.Y);
		}
		T.Eq (n, a.Length, "A's length");
		T.Eq (n, b.Length, "B's length");
		int q = a [0], k = 0;
		while (k < n && a [k] == q)
			k++;
		for (int i = k; i < n; i++)
			T.Eq (q - 1, a [i], "A [" + i + "] (pass " + q + " written up to " + k + ")");
		for (int i = 0; i < n; i++)
			T.Eq (a [i], b [i], "B [" + i + "] equals A [" + i + "]");
		T.Eq (k - 1, s.Last, "Last (pass " + q + " written up to " + k + ")");
		T.Check (s.Pass == q - 1 || (k == n && s.Pass == q), "Pass " + s.Pass + " with pass " + q + " written up to " + k);
		Console.WriteLine ("one instant: pass {0} written up to {1} of {2}", q, k, n);
		return 0;
	}

	static int Main (string [] args)
	{
		int n = int.Parse (args [1]);
		if (args [0] == "write")
			return Write (n, int.Parse (args [2]), args [3]);
		return Check (n, args [2]);
	}
}
