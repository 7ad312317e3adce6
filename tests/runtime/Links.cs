// Links: a restore stores a reference as it meets it, making the object when its
// record comes later (sp-decode.c, "links"): of the one class of the snapshot the
// field can hold (its class index), or, from an old snapshot, of the field's
// declared class; a guess its record contradicts (a subclass in another assembly,
// old snapshots), references to strings, arrays, fields more than one class
// fills and classes with finalizers go to the fix-up.
// Every case must restore exactly the graph written.
//   Links.exe write CASE   build the case's graph, persist it, print its dump
//   Links.exe check CASE   warm restart: restore, print the dump (finalizers: counted)
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Text;
using SPersistence;

[SPersistent] class Tree
{
	[SPersistentField] public int Key;
	[SPersistentField] public Tree Left, Right, Parent;
}

// Each node's name is met before its string's record: the node's record alone goes to the fix-up.
[SPersistent] class Named
{
	[SPersistentField] public Named Left, Right, Parent;
	[SPersistentField] public string Name;
}

[SPersistent] class Shape { [SPersistentField] public int Id; }
#if CIRCLE_NOT_A_SHAPE
// The program of a test that restores with Circle no longer a Shape (the same leaves): a Circle in a Shape field is refused.
[SPersistent] class Circle { [SPersistentField] public int Id; [SPersistentField] public double R; }
#else
[SPersistent] class Circle : Shape { [SPersistentField] public double R; }
#endif
[SPersistent] abstract class Animal { [SPersistentField] public string Name; }
[SPersistent] class Dog : Animal { [SPersistentField] public int Legs; }
interface ITagged { }
[SPersistent] class Tag : ITagged { [SPersistentField] public int Value; }

// Declared as Shape, Animal, ITagged, object: with the class index, the one class of the snapshot each can hold is made
// early (Circle, Dog, Tag; none for object, which a string may fill); without it (an old snapshot) none is.
[SPersistent] class Holder
{
	[SPersistentField] public int Key;
	[SPersistentField] public Holder Next;
	[SPersistentField] public Shape Shape;
	[SPersistentField] public Animal Pet;
	[SPersistentField] public ITagged Tag;
	[SPersistentField] public object Any;
	[SPersistentField] public string Name;
	[SPersistentField] public Holder [] Kids;
}

// Part's subclass lives here, not in Part's assembly (LinksBase.cs): made early as Gears with the class index; from an
// old snapshot as Parts, replaced by their records.
[SPersistent] class Gear : Part { [SPersistentField] public double Teeth; }
[SPersistent] class Machine
{
	[SPersistentField] public Part Part;
	[SPersistentField] public Machine Next;
}

// No object is made early of a class with a finalizer: one left unused would be finalized.
[SPersistent] class Closing
{
	public static int Finalized;
	[SPersistentField] public int Id;
	[SPersistentField] public Closing Next;
	~Closing () { System.Threading.Interlocked.Increment (ref Finalized); }
}

[SPersistent] class Shelf { [SPersistentField] public Closing First; }

static class Program
{
	static Tree BuildTree (int n)
	{
		var nodes = new Tree [n];
		for (int i = 0; i < n; i++) {
			nodes [i] = new Tree { Key = i * 7 + 1 };
			if (i > 0) {
				Tree parent = nodes [(i - 1) / 2];
				if (i % 2 == 1) parent.Left = nodes [i]; else parent.Right = nodes [i];
				nodes [i].Parent = parent;
			}
		}
		return nodes [0];
	}

	static Named BuildNamed (int n)
	{
		var nodes = new Named [n];
		for (int i = 0; i < n; i++) {
			nodes [i] = new Named { Name = "n" + i };
			if (i > 0) {
				Named parent = nodes [(i - 1) / 2];
				if (i % 2 == 1) parent.Left = nodes [i]; else parent.Right = nodes [i];
				nodes [i].Parent = parent;
			}
		}
		return nodes [0];
	}

	// A chain of holders, each with a Circle in its Shape field (met before its record: made early as a Shape).
	static Holder BuildMixed (int n)
	{
		Holder first = null;
		var names = new [] { "alpha", "beta", "gamma" };
		for (int i = n - 1; i >= 0; i--) {
			var h = new Holder { Key = i, Next = first, Shape = NewCircle (i, i / 4.0),
					     Pet = i % 3 == 0 ? new Dog { Name = names [i % 3], Legs = 4 } : null,
					     Tag = new Tag { Value = -i }, Name = names [i % 3] };
			h.Any = i % 2 == 0 ? (object)h.Shape : names [i % 3];
			if (i % 10 == 0) h.Kids = new [] { first, h, null };
			first = h;
		}
		return first;
	}

	// Circles first, as roots: their records come before the references of a Shape field to them.
	static object [] BuildBackward (int n)
	{
		var roots = new object [n + 1];
		Holder chain = null;
		for (int i = 0; i < n; i++) {
			Shape c = NewCircle (i, 0.5 * i);
			roots [i] = c;
			chain = new Holder { Key = i, Next = chain, Shape = c };
		}
		roots [n] = chain;
		return roots;
	}

	static Shape NewCircle (int id, double r)
	{
#if CIRCLE_NOT_A_SHAPE
		return new Shape { Id = id };   // never written: this program only restores
#else
		return new Circle { Id = id, R = r };
#endif
	}

	static Machine BuildMachines (int n)
	{
		Machine first = null;
		for (int i = n - 1; i >= 0; i--)
			first = new Machine { Part = new Gear { Id = i, Teeth = 12 + i }, Next = first };
		return first;
	}

	static Closing BuildClosing (int n)
	{
		Closing first = null;
		for (int i = n - 1; i >= 0; i--)
			first = new Closing { Id = i, Next = first };
		return first;
	}

	static object [] Build (string which)
	{
		switch (which) {
		case "tree": return new object [] { BuildTree (1000) };
		case "named": return new object [] { BuildNamed (500) };
		case "mixed": return new object [] { BuildMixed (300) };
		case "backward": return BuildBackward (50);
		case "foreign": return new object [] { BuildMachines (100) };
		case "closing": return new object [] { new Shelf { First = BuildClosing (100) } };
		}
		throw new ArgumentException ("no case " + which);
	}

	// Everything reachable through persistent fields; "#n" introduces an object, "@n" refers back to it.
	static void Dump (object o, StringBuilder sb, Dictionary<object, int> seen)
	{
		if (o == null) { sb.Append ("null"); return; }
		Type t = o.GetType ();
		if (t.IsPrimitive) { sb.Append (o is double ? BitConverter.DoubleToInt64Bits ((double)o).ToString () : o.ToString ()); return; }
		int n;
		if (seen.TryGetValue (o, out n)) { sb.Append ("@" + n); return; }
		seen [o] = seen.Count;
		sb.Append ("#" + seen [o] + ":");
		if (o is string) { sb.Append ("\"" + o + "\""); return; }
		if (o is Array) {
			sb.Append (t.Name + "[");
			foreach (object e in (Array)o) { Dump (e, sb, seen); sb.Append (","); }
			sb.Append ("]");
			return;
		}
		sb.Append (t.Name + "{");
		for (Type k = t; k != null && k != typeof (object); k = k.BaseType)
			foreach (FieldInfo f in k.GetFields (BindingFlags.Instance | BindingFlags.Public | BindingFlags.DeclaredOnly)) {
				if (f.GetCustomAttributes (typeof (SPersistentFieldAttribute), false).Length == 0)
					continue;
				sb.Append (f.Name + "=");
				Dump (f.GetValue (o), sb, seen);
				sb.Append (";");
			}
		sb.Append ("}");
	}

	static string DumpAll (object [] roots)
	{
		var sb = new StringBuilder ();
		var seen = new Dictionary<object, int> (new ByIdentity ());
		foreach (object r in roots) { Dump (r, sb, seen); sb.Append ('\n'); }
		return sb.ToString ();
	}

	sealed class ByIdentity : IEqualityComparer<object>
	{
		public new bool Equals (object x, object y) { return object.ReferenceEquals (x, y); }
		public int GetHashCode (object o) { return RuntimeHelpers.GetHashCode (o); }
	}

	// The restored chain let go: each of its objects is finalized once, and no other Closing is.
	[MethodImpl (MethodImplOptions.NoInlining)]
	static void LetGo (Shelf shelf)
	{
		T.Eq (2, shelf.First.Next.Next.Id, "the restored chain");
		shelf.First = null;
	}

	static void CheckFinalizers (Shelf shelf, int n)
	{
		Closing.Finalized = 0;
		LetGo (shelf);
		for (int i = 0; i < 10 && Closing.Finalized < n; i++) {
			GC.Collect ();
			GC.WaitForPendingFinalizers ();
		}
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
		T.Eq (n, Closing.Finalized, "finalizers run for the restored objects");
	}

	static int Main (string [] args)
	{
		string which = args [1];
		if (args [0] == "write") {
			object [] roots = Build (which);
			foreach (object r in roots)
				SPC.AddRoot (r);
			SPC.SendPData ();
			Console.Write (DumpAll (roots));
			return 0;
		}
		T.Check (SPC.IsWarmRestart (), "a warm restart");
		int count = which == "backward" ? 51 : 1;   /* not Build: its objects would be finalized too */
		var restored = new object [count];
		for (int i = 0; i < count; i++)
			restored [i] = SPC.RecvPData (i + 1);
		Console.Write (DumpAll (restored));
		if (which == "closing")
			CheckFinalizers ((Shelf)restored [0], 100);
		return 0;
	}
}
