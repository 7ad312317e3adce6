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
//       copies  Array.Copy into A and Buffer.BlockCopy into B from a method
//               no barrier mode guards (not [SPersistentUpdate]): the
//               runtime's native copies run the barrier themselves
//       refs    stelem.ref of objects (Refs [i] = one of two nodes, by the
//               pass's parity) beside A [i]: the runtime's type check of the
//               stored reference runs between the barrier and the store
//       library Array.Fill into A, Array.Sort of B (a permutation, up and
//               down by turns), Array.Reverse of C, List<int>.Reverse and a
//               Dictionary<int,int> indexer, from a method no barrier mode
//               guards: the class library's own stores are guarded in every
//               mode, so a cycle starting in the middle of a sort is exact
//       reverse Array.Reverse of C without end: Reverse<T> stores through
//               refs (Unsafe.Add), which the address barrier sees; C is a
//               large object, whose barrier it finds: nothing refused
//       reverse-small   the same with a C of 1,000 elements: a cycle that
//               starts in the middle of a reverse is refused, loudly
//   Loops.exe types   stelem.ref in a guarded method keeps .NET's rules:
//       covariant arrays, interfaces, ArrayTypeMismatchException,
//       NullReferenceException, IndexOutOfRangeException
//   Loops.exe check N KIND   (warm restart) the state of one instant: pass q
//       written up to index k, A [0..k) = q, A [k..n) = q - 1, B = A,
//       Last = k - 1, Pass = q - 1 (or q, once the pass is whole); for walk
//       the same of the nodes' X and Y.  A snapshot written while the stores
//       went on unguarded mixes instants.
using System;
using System.Collections.Generic;
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
	[SPersistentField] public Node [] Refs;
	[SPersistentField] public int [] C;
	[SPersistentField] public List<int> L;
	[SPersistentField] public Dictionary<int, int> Map;
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
	public static void RunRefs (State s, Control ctl)
	{
		int [] a = s.A;
		Node [] refs = s.Refs, nodes = s.Nodes;
		int n = a.Length;
		for (int p = 1; !ctl.Stop; p++) {
			Node node = nodes [p & 1];
			for (int i = 0; i < n; i++) {
				refs [i] = node;
				a [i] = p;
				s.Last = i;
			}
			s.Pass = p;
		}
	}

	[SPersistentUpdate, MethodImpl (MethodImplOptions.NoInlining)]
	internal static void SetPass (State s, int p)
	{
		s.Pass = p;
	}

	// Not [SPersistentUpdate], and calls only: annotating guards none of it.
	public static void RunCopies (State s, Control ctl)
	{
		int n = s.A.Length;
		int [] source = new int [n];
		for (int p = 1; !ctl.Stop; p++) {
			source [0] = p;
			Array.Copy (source, 0, source, 1, 1);   // keeps the copies below from being the only calls
			for (int i = 0; i < n; i++)
				source [i] = p;
			Array.Copy (source, s.A, n);
			Buffer.BlockCopy (source, 0, s.B, 0, n * sizeof (int));
			SetPass (s, p);
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

// Neither [SPersistent] nor [SPersistentUpdate]: under annotating and
// marking-v2 nothing here is guarded, and every store into the state is the
// class library's own.
static class Library
{
	public const int ListLength = 3000, MapKeys = 64;   // the list's array a large object: its Reverse is covered

	public static void Run (State s, Control ctl)
	{
		Comparison<int> up = (x, y) => x.CompareTo (y), down = (x, y) => y.CompareTo (x);
		for (int p = 1; !ctl.Stop; p++) {
			Array.Fill (s.A, p);
			Array.Sort (s.B, (p & 1) != 0 ? down : up);
			Array.Reverse (s.C);
			s.L.Reverse ();
			s.Map [p % MapKeys] = p;
			State.SetPass (s, p);
		}
	}

	public static void RunReverse (State s, Control ctl)
	{
		for (int p = 1; !ctl.Stop; p++) {
			Array.Reverse (s.C);
			State.SetPass (s, p);
		}
	}

	// Each pair (j, n - 1 - j) of a reversed identity holds j and n - 1 - j: a
	// reverse swaps pairs whole between two safepoints.
	public static void CheckReversed (int [] c, string what)
	{
		int n = c.Length;
		for (int j = 0; j < n; j++)
			T.Check ((c [j] == j && c [n - 1 - j] == n - 1 - j) || (c [j] == n - 1 - j && c [n - 1 - j] == j),
				 what + " [" + j + "] = " + c [j] + " and [" + (n - 1 - j) + "] = " + c [n - 1 - j] + ": not one instant");
	}

	// B sorted whole by pass p: up (0, 1, ...) after an even pass, down after an odd one.
	static void CheckSorted (int [] b, int p)
	{
		int n = b.Length;
		for (int i = 0; i < n; i++)
			T.Eq ((p & 1) == 0 ? i : n - 1 - i, b [i], "B [" + i + "], sorted by pass " + p);
	}

	// An instant of a sort of B: a permutation, but for at most one element
	// the sort holds in a local.  Its insertion sort shifts elements up one by
	// one and calls the comparison (a safepoint) between shifts, so the
	// shifted element is there twice, side by side, and the held one is
	// missing.  A B written in pieces at different instants mixes them: many
	// values twice and missing.
	static void CheckSortInstant (int [] b, int p)
	{
		int n = b.Length, twice = -1;
		var seen = new int [n];
		for (int i = 0; i < n; i++) {
			T.Check (b [i] >= 0 && b [i] < n, "B [" + i + "] = " + b [i] + ": not an element");
			if (seen [b [i]]++ == 0)
				continue;
			T.Check (twice < 0 && b [i - 1] == b [i], "B [" + i + "] = " + b [i] + " again, during pass " + p +
				 "'s sort: more than one element held, or not side by side: not one instant");
			twice = b [i];
		}
	}

	// Pass q's order: A filled with q (up to k), B sorted, C, L reversed,
	// Map [q % 64] = q, Pass = q.
	public static void Check (State s, int q, int k, int n)
	{
		if (k == n && s.Pass == q - 1)
			CheckSortInstant (s.B, q);
		else
			CheckSorted (s.B, s.Pass);
		CheckReversed (s.C, "C");
		T.Eq (ListLength, s.L.Count, "L.Count");
		CheckReversed (s.L.ToArray (), "L");
		T.Eq (MapKeys, s.Map.Count, "Map.Count");
		int newest = 0;
		foreach (var kv in s.Map) {
			T.Eq (kv.Key, (kv.Value % MapKeys + MapKeys) % MapKeys, "Map [" + kv.Key + "] from pass " + kv.Value);
			newest = Math.Max (newest, kv.Value);
		}
		// In the order of the stores, Pass <= newest <= Pass + 1.
		T.Check (newest == s.Pass || newest == s.Pass + 1, "Map's newest pass " + newest + " with Pass " + s.Pass);
	}
}

class SubNode : Node
{
}

[SPersistent]
class Types
{
	[SPersistentUpdate, MethodImpl (MethodImplOptions.NoInlining)]
	public static void Store (object [] array, int i, object value)
	{
		array [i] = value;
	}

	[SPersistentUpdate, MethodImpl (MethodImplOptions.NoInlining)]
	public static void StoreNode (Node [] array, int i, Node value)
	{
		array [i] = value;
	}

	[SPersistentUpdate, MethodImpl (MethodImplOptions.NoInlining)]
	public static void StoreComparable (IComparable [] array, int i, IComparable value)
	{
		array [i] = value;
	}

	static void Rejects<E> (Action store, string what) where E : Exception
	{
		T.Throws<E> (store, null, what);
	}

	public static int Run ()
	{
		var node = new Node ();
		var sub = new SubNode ();
		object [] objects = new object [3];
		Store (objects, 0, node);
		Store (objects, 1, "text");
		Store (objects, 2, null);
		T.Check (objects [0] == node && (string)objects [1] == "text" && objects [2] == null, "object [] holds anything");
		object [] nodesAsObjects = new Node [2];
		Store (nodesAsObjects, 0, sub);
		T.Check (nodesAsObjects [0] == sub, "a Node [] seen as object [] takes a SubNode");
		Rejects<ArrayTypeMismatchException> (() => Store (nodesAsObjects, 1, "text"), "a string into a Node [] seen as object []");
		T.Check (nodesAsObjects [1] == null, "the rejected store left the element alone");
		Node [] nodes = new SubNode [1];
		Rejects<ArrayTypeMismatchException> (() => StoreNode (nodes, 0, node), "a Node into a SubNode [] seen as Node []");
		StoreNode (nodes, 0, sub);
		T.Check (nodes [0] == sub, "a SubNode into a SubNode []");
		IComparable [] comparables = new string [1];
		StoreComparable (comparables, 0, "text");
		Rejects<ArrayTypeMismatchException> (() => StoreComparable (comparables, 0, 5), "an int into a string [] seen as IComparable []");
		T.Check ((string)comparables [0] == "text", "string [] element kept");
		Rejects<NullReferenceException> (() => Store (null, 0, node), "a store into a null array");
		Rejects<IndexOutOfRangeException> (() => Store (objects, 3, node), "a store past the end");
		Rejects<IndexOutOfRangeException> (() => Store (objects, -1, node), "a store before the start");
		Console.WriteLine ("types ok");
		return 0;
	}
}

static class Program
{
	static int Write (int n, int cycles, string kind)
	{
		var s = new State { A = new int [n], B = new int [n], Nodes = new Node [kind == "walk" ? n : 2], Last = n - 1 };
		for (int i = 0; i < s.Nodes.Length; i++)
			s.Nodes [i] = new Node { X = i };
		s.Refs = new Node [kind == "refs" ? n : 0];
		for (int i = 0; i < s.Refs.Length; i++)
			s.Refs [i] = s.Nodes [0];     // pass 0's
		bool library = kind == "library" || kind.StartsWith ("reverse");
		s.C = new int [kind == "reverse-small" ? 1000 : library ? n : 0];
		s.L = new List<int> ();
		s.Map = new Dictionary<int, int> ();
		for (int i = 0; i < s.C.Length; i++)
			s.B [i] = s.C [i] = i;
		for (int i = 0; library && i < Library.ListLength; i++)
			s.L.Add (i);
		for (int k = 0; library && k < Library.MapKeys; k++)
			s.Map [k] = k - Library.MapKeys;       // as if from pass k - 64
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
		else if (kind == "refs")
			run = () => State.RunRefs (s, ctl);
		else if (kind == "copies")
			run = () => State.RunCopies (s, ctl);
		else if (kind == "library")
			run = () => Library.Run (s, ctl);
		else if (kind.StartsWith ("reverse"))
			run = () => Library.RunReverse (s, ctl);
		else
			throw new ArgumentException ("kind: poll, call, enter, walk, refs, copies, library or reverse, not " + kind);
		if (kind == "reverse-small") {
			SPC.SendPData ();        // a snapshot to fall back on, should every cycle below be refused
			SPC.WaitPersisted ();
		}
		var worker = new Thread (run);
		worker.Start ();
		while (s.Pass < 2)
			Thread.Sleep (1);
		long barrierWrites = 0;
		int refused = 0;
		for (int c = 0; c < cycles; c++) {
			// Only a store the address barrier logged may refuse a cycle, and only in Reverse of a small array.
			if (!T.Persist (kind == "reverse-small" ? "no barrier saw" : null))
				refused++;
			barrierWrites += SPC.GetStats ().CycleBarrierWrites;
		}
		ctl.Stop = true;
		worker.Join ();
		// The stores met the barriers during the cycles (else the check proves nothing about them).
		T.Check (barrierWrites > 0 || kind == "reverse-small", "barriers wrote objects during the cycles");
		// Cycles starting in the middle of a small reverse are refused (else they were torn or not seen).
		T.Check (refused > 0 || kind != "reverse-small", "some cycle started in the middle of Array.Reverse and was refused");
		Console.WriteLine ("loops {0}: {1} cycles ({2} refused), {3} passes, {4} objects written by barriers",
				   kind, cycles, refused, s.Pass, barrierWrites);
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
		} else if (kind == "refs") {
			// Each element the node of its pass's parity: B [i] = A [i] once mapped back.
			T.Eq (n, s.Refs.Length, "refs");
			b = new int [n];
			for (int i = 0; i < n; i++) {
				T.Check (s.Refs [i] == s.Nodes [0] || s.Refs [i] == s.Nodes [1], "Refs [" + i + "] is one of the two nodes");
				b [i] = (s.Refs [i].X - a [i]) % 2 == 0 ? a [i] : -1;
			}
		}
		if (kind == "copies")
			return CheckCopies (s, n);
		if (kind.StartsWith ("reverse")) {
			Library.CheckReversed (s.C, "C");
			Console.WriteLine ("one instant: C reversed pairwise, pass {0}", s.Pass);
			return 0;
		}
		T.Eq (n, a.Length, "A's length");
		int q = a [0], k = 0;
		while (k < n && a [k] == q)
			k++;
		if (kind == "library") {
			Library.Check (s, q, k, n);
			b = a;       // A's check below; B's was Library's
		}
		T.Eq (n, b.Length, "B's length");
		for (int i = k; i < n; i++)
			T.Eq (q - 1, a [i], "A [" + i + "] (pass " + q + " written up to " + k + ")");
		for (int i = 0; i < n; i++)
			T.Eq (a [i], b [i], "B [" + i + "] equals A [" + i + "]");
		if (kind != "library")                 // which sets no Last
			T.Eq (k - 1, s.Last, "Last (pass " + q + " written up to " + k + ")");
		T.Check (s.Pass == q - 1 || (k == n && s.Pass == q), "Pass " + s.Pass + " with pass " + q + " written up to " + k);
		Console.WriteLine ("one instant: pass {0} written up to {1} of {2}", q, k, n);
		return 0;
	}

	// Each array whole from one pass; in the order of the stores, Pass <= B <= A <= Pass + 1.
	static int CheckCopies (State s, int n)
	{
		int a = s.A [0], b = s.B [0];
		for (int i = 0; i < n; i++) {
			T.Eq (a, s.A [i], "A [" + i + "] (A [0] is " + a + ")");
			T.Eq (b, s.B [i], "B [" + i + "] (B [0] is " + b + ")");
		}
		T.Check (s.Pass <= b && b <= a && a <= s.Pass + 1, "Pass " + s.Pass + ", B " + b + ", A " + a + ": not one instant");
		Console.WriteLine ("one instant: A {0}, B {1}, Pass {2}", a, b, s.Pass);
		return 0;
	}

	static int Main (string [] args)
	{
		if (args [0] == "types")
			return Types.Run ();
		int n = int.Parse (args [1]);
		if (args [0] == "write")
			return Write (n, int.Parse (args [2]), args [3]);
		return Check (n, args [2]);
	}
}
