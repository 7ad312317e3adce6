// Identity: an object is one object in every snapshot, whatever the runtime
// keeps in it to find its LID (the identity slot of [SPersistent] classes).
//   Identity.exe write   persist the graph twice, then clone some of its nodes
//                        (MemberwiseClone copies every byte of an object, the
//                        identity slot too) into it and persist it again
//   Identity.exe check   warm restart: clones and originals are distinct objects
//   Identity.exe late    persist the graph twice, clone its nodes with no store
//                        into the clones, link them, SendPData, then store into
//                        the clones while that snapshot is taken
//   Identity.exe check-late  warm restart: the clones as at that SendPData
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using SPersistence;

class PlainBase { public int Unpersisted = 5; }

[SPersistent]
class Cell : PlainBase
{
	[SPersistentField] public int Value;
	[SPersistentField] public Cell Next;
	[SPersistentField] public object Other;
	public Cell Copy () { return (Cell)MemberwiseClone (); }
}

[SPersistent] class Derived : Cell { [SPersistentField] public long Extra; }
[SPersistent] class Box<V> { [SPersistentField] public V Item; [SPersistentField] public Box<V> Link; }
[SPersistent, StructLayout (LayoutKind.Sequential)] class Sequential { [SPersistentField] public int A; [SPersistentField] public Cell C; }

[SPersistent]
class Holder
{
	[SPersistentField] public Cell[] Cells;
	[SPersistentField] public Box<string> Box;
	[SPersistentField] public Sequential Seq;
}

static class Program
{
	const int N = 50;

	static Holder Build ()
	{
		var h = new Holder { Cells = new Cell [2 * N] };
		for (int i = 0; i < N; i++)
			h.Cells [i] = i % 3 == 0 ? new Derived { Value = i, Extra = -i } : new Cell { Value = i };
		for (int i = 0; i < N; i++)
			h.Cells [i].Next = h.Cells [(i + 1) % N];
		h.Box = new Box<string> { Item = "boxed" };
		h.Box.Link = h.Box;
		h.Seq = new Sequential { A = 9, C = h.Cells [1] };
		return h;
	}

	static void Persist (bool incremental)
	{
		SPC.SendPData ();
		if (incremental)
			SPC.WaitPersisted ();
	}

	static int Main (string[] args)
	{
		bool incremental = args.Length > 1 && args [1] == "incremental";
		if (args [0] == "layout") {
			// Which classes carry the slot: the topmost [SPersistent] class of automatic layout, and its subclasses at the same place.
			int cell = SPDiagnostics.IdentitySlotOf (typeof (Cell));
			T.Check (cell >= 16 + 4 + 8 + 8, "Cell has a slot after its fields and its base's: " + cell);
			T.Eq (cell, SPDiagnostics.IdentitySlotOf (typeof (Derived)), "a subclass keeps its base's slot");
			T.Check (SPDiagnostics.IdentitySlotOf (typeof (Box<string>)) > 0, "a generic [SPersistent] class has one");
			T.Check (SPDiagnostics.IdentitySlotOf (typeof (Holder)) > 0, "Holder has one");
			T.Eq (0, SPDiagnostics.IdentitySlotOf (typeof (Sequential)), "a sequential-layout class has none");
			T.Eq (0, SPDiagnostics.IdentitySlotOf (typeof (PlainBase)), "a class that is not [SPersistent] has none");
			T.Eq (0, SPDiagnostics.IdentitySlotOf (typeof (int[])), "an array has none");
			T.Eq (0, SPDiagnostics.IdentitySlotOf (typeof (string)), "a string has none");
			T.Eq (0, SPDiagnostics.IdentitySlotOf (typeof (List<int>)), "a class-library collection has none");
			Console.WriteLine ("layout ok");
			return 0;
		}
		if (args [0] == "write") {
			Holder h = Build ();
			SPC.AddRoot (h);
			Persist (incremental);
			Persist (incremental);
			// Clones go first in the array, so the next snapshot meets each clone,
			// holding its original's LID of the last snapshot, before the original.
			for (int i = 0; i < N; i++) {
				Cell clone = h.Cells [i].Copy ();
				clone.Value += 1000;
				clone.Other = h.Cells [i];
				h.Cells [N + i] = h.Cells [i];
				h.Cells [i] = clone;
			}
			Persist (incremental);
			Console.WriteLine ("written");
			return 0;
		}
		if (args [0] == "late") {
			// A clone holds its original's LID in its slot until a snapshot gives it its own; with deltas,
			// a store into it during a cycle must not take it for its original, unchanged since the last
			// snapshot, whose record stands: the clone is new, and the cycle writes it as at SendPData.
			Holder h = Build ();
			SPC.AddRoot (h);
			Persist (incremental);
			Persist (incremental);
			for (int i = 0; i < N; i++)
				h.Cells [N + i] = h.Cells [i].Copy ();
			SPC.SendPData ();
			for (int i = 0; i < N; i++)
				h.Cells [N + i].Value = -7;
			if (incremental)
				SPC.WaitPersisted ();
			Console.WriteLine ("written");
			return 0;
		}
		T.Check (SPC.IsWarmRestart (), "warm restart");
		var r = (Holder)SPC.RecvPData (1);
		if (args [0] == "check-late") {
			for (int i = 0; i < N; i++) {
				T.Check (!object.ReferenceEquals (r.Cells [i], r.Cells [N + i]), "clone " + i + " is not its original");
				T.Eq (i, r.Cells [N + i].Value, "clone " + i + " as at SendPData");
				T.Eq (i, r.Cells [i].Value, "original " + i);
			}
			Console.WriteLine ("late clones ok");
			return 0;
		}
		var seen = new HashSet<Cell> (new RefEq ());
		for (int i = 0; i < N; i++) {
			Cell clone = r.Cells [i], orig = r.Cells [N + i];
			T.Check (!object.ReferenceEquals (clone, orig), "clone " + i + " is not its original");
			T.Eq (i, orig.Value, "original " + i);
			T.Eq (1000 + i, clone.Value, "clone " + i);
			T.Check (object.ReferenceEquals (clone.Other, orig), "clone " + i + " points at its original");
			T.Check (object.ReferenceEquals (clone.Next, orig.Next), "clone " + i + " shares its original's next");
			T.Check (object.ReferenceEquals (orig.Next, r.Cells [N + (i + 1) % N]), "original " + i + "'s next");
			T.Eq (i % 3 == 0, orig is Derived, "original " + i + "'s class");
			T.Eq (i % 3 == 0, clone is Derived, "clone " + i + "'s class");
			if (orig is Derived) {
				T.Eq ((long)-i, ((Derived)orig).Extra, "derived field of " + i);
				T.Eq ((long)-i, ((Derived)clone).Extra, "derived field of clone " + i);
			}
			T.Eq (0, orig.Unpersisted, "a non-persistent base's field: restore runs no constructor");
			T.Check (seen.Add (clone) && seen.Add (orig), "each object once");
		}
		T.Eq ("boxed", r.Box.Item, "generic class");
		T.Check (object.ReferenceEquals (r.Box.Link, r.Box), "generic self link");
		T.Eq (9, r.Seq.A, "sequential-layout class");
		T.Check (object.ReferenceEquals (r.Seq.C, r.Cells [N + 1]), "sequential-layout class's reference");
		Console.WriteLine ("identity ok");
		return 0;
	}

	class RefEq : IEqualityComparer<Cell>
	{
		public bool Equals (Cell a, Cell b) { return object.ReferenceEquals (a, b); }
		public int GetHashCode (Cell c) { return System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode (c); }
	}
}
