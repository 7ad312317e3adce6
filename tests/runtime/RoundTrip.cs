// RoundTrip: every supported kind of persistent field survives SendPData and a
// restore in a new process, with sharing and cycles intact.
//   RoundTrip.exe write   build the graph, persist it, print its dump
//   RoundTrip.exe check   warm restart: restore, print the dump, check identities
using System;
using System.Collections;
using System.Reflection;
using System.Text;
using SPersistence;

enum Color : byte { Red = 1, Green = 2, Blue = 200 }
enum Big : long { Min = long.MinValue, Max = long.MaxValue }

// [SPersistent] on a struct is accepted and changes nothing: a struct is persisted whole, its
// unmarked field Y too (managed/Attributes.cs); Tagged, unannotated, is persisted the same way.
[SPersistent] struct Point { [SPersistentField] public int X; public double Y; }
struct Tagged { public Point P; public string Name; public Node Link; public Color C; }

// A persistent class with a finalizer: restored objects are registered for finalization as
// `new` would register them (the restorer's inline allocation leaves such classes to the runtime).
[SPersistent]
class Closing
{
	public static int Finalized;
	[SPersistentField] public int Id;
	~Closing () { System.Threading.Interlocked.Increment (ref Finalized); }
}

[SPersistent]
class Shelf
{
	[SPersistentField] public Closing [] Items;
}

[SPersistent]
class Base
{
	[SPersistentField] public int BaseValue;
	[SPersistentField] public string BaseName;
	public int NotPersistentInBase = 0;
}

[SPersistent]
class Node : Base
{
	public static int ConstructorRuns;
	public Node () { ConstructorRuns++; Transient = 77; }

	[SPersistentField] public bool Bool;
	[SPersistentField] public char Char;
	[SPersistentField] public sbyte I1;
	[SPersistentField] public byte U1;
	[SPersistentField] public short I2;
	[SPersistentField] public ushort U2;
	[SPersistentField] public int I4;
	[SPersistentField] public uint U4;
	[SPersistentField] public long I8;
	[SPersistentField] public ulong U8;
	[SPersistentField] public float R4;
	[SPersistentField] public double R8;
	[SPersistentField] public decimal Dec;
	[SPersistentField] public DateTime When;
	[SPersistentField] public Guid Id;
	[SPersistentField] public Color Col;
	[SPersistentField] public Big BigEnum;
	[SPersistentField] public string Text;
	[SPersistentField] public Point Pos;
	[SPersistentField] public Tagged Tag;
	[SPersistentField] public Node Next;
	[SPersistentField] public object Any;
	[SPersistentField] public int[] Ints;
	[SPersistentField] public bool[] Bools;
	[SPersistentField] public char[] Chars;
	[SPersistentField] public sbyte[] I1s;
	[SPersistentField] public byte[] U1s;
	[SPersistentField] public short[] I2s;
	[SPersistentField] public ushort[] U2s;
	[SPersistentField] public uint[] U4s;
	[SPersistentField] public long[] I8s;
	[SPersistentField] public ulong[] U8s;
	[SPersistentField] public float[] R4s;
	[SPersistentField] public double[] R8s;
	[SPersistentField] public Color[] Colors;
	[SPersistentField] public string[] Strings;
	[SPersistentField] public Node[] Children;
	[SPersistentField] public int[][] Jagged;
	[SPersistentField] public Point[] Points;
	[SPersistentField] public Tagged[] Tags;
	[SPersistentField] public object[] Objects;
	public int Transient;            // not persistent: default after restore
	public string TransientText;
}

static class Program
{
	static Node Build ()
	{
		var a = new Node { BaseValue = -5, BaseName = "base of a", Bool = true, Char = '\u20ac',
			I1 = sbyte.MinValue, U1 = byte.MaxValue, I2 = short.MinValue, U2 = ushort.MaxValue,
			I4 = int.MinValue, U4 = uint.MaxValue, I8 = long.MinValue, U8 = ulong.MaxValue,
			R4 = float.NaN, R8 = -0.0, Dec = -79228162514264337593543950335m,
			When = new DateTime (2026, 11, 22, 18, 0, 0, DateTimeKind.Utc), Id = new Guid ("0f8fad5b-d9cb-469f-a165-70867728950e"),
			Col = Color.Blue, BigEnum = Big.Min, Text = "plain ascii",
			Pos = new Point { X = 3, Y = double.PositiveInfinity },
			Ints = new int [] { 1, -2, int.MaxValue }, Bools = new [] { true, false, true },
			Chars = "h\u00e9llo\ud83d\ude00".ToCharArray (), I1s = new sbyte [] { -1, 2 }, U1s = new byte [] { 0, 255 },
			I2s = new short [] { -300 }, U2s = new ushort [] { 65535 }, U4s = new uint [] { 4000000000 },
			I8s = new long [] { long.MaxValue }, U8s = new ulong [] { 1UL << 63 }, R4s = new float [] { 1.5f, float.Epsilon },
			R8s = new double [] { double.NaN, 1e308 }, Colors = new [] { Color.Red, Color.Green },
			Strings = new [] { "", null, "\u4e2d\u6587 unicode", "x" },
			Jagged = new int [][] { new [] { 1 }, null, new int [0], new [] { 2, 3 } },
			Transient = 1, TransientText = "gone", NotPersistentInBase = 9 };
		var b = new Node { I4 = 2, Text = "" };
		var c = new Node { I4 = 3, Text = null };
		a.Next = b; b.Next = c; c.Next = a;            // a cycle
		a.Tag = new Tagged { P = new Point { X = 1, Y = 2 }, Name = "in a struct", Link = c, C = Color.Green };
		a.Points = new [] { new Point { X = 7, Y = 8 }, new Point { X = -7, Y = -8 } };
		a.Tags = new [] { new Tagged { Name = "t0", Link = b }, new Tagged { Name = "t1", Link = null } };
		a.Children = new [] { b, c, b, null };          // shared within an array
		a.Any = a.Ints;                                 // shared array through an object field
		a.Objects = new object [] { "boxed-free string", b, a.Ints, null };
		b.Children = new Node [0];
		c.Any = c;                                      // self-reference
		return a;
	}

	// A dump of everything reachable through persistent fields; "#n" introduces
	// an object, "@n" refers back to it, so sharing and cycles show in the text.
	static void Dump (object o, StringBuilder sb, ArrayList seen)
	{
		if (o == null) { sb.Append ("null"); return; }
		Type t = o.GetType ();
		if (t.IsPrimitive || t.IsEnum || o is decimal || o is DateTime || o is Guid) { sb.Append (Prim (o)); return; }
		if (t.IsValueType) { DumpFields (o, t, sb, seen, false); return; }
		for (int i = 0; i < seen.Count; i++)
			if (object.ReferenceEquals (seen [i], o)) { sb.Append ("@" + i); return; }
		seen.Add (o);
		sb.Append ("#" + (seen.Count - 1) + ":");
		if (o is string) { sb.Append ("\"" + Escape ((string)o) + "\""); return; }
		if (o is Array) {
			sb.Append (t.Name + "[");
			foreach (object e in (Array)o) { Dump (e, sb, seen); sb.Append (","); }
			sb.Append ("]");
			return;
		}
		DumpFields (o, t, sb, seen, true);
	}

	static void DumpFields (object o, Type t, StringBuilder sb, ArrayList seen, bool persistentOnly)
	{
		sb.Append (t.Name + "{");
		var flags = BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic;
		for (Type k = t; k != null && k != typeof (object); k = k.BaseType)
			foreach (FieldInfo f in k.GetFields (flags | BindingFlags.DeclaredOnly)) {
				if (persistentOnly && f.GetCustomAttributes (typeof (SPersistentFieldAttribute), false).Length == 0)
					continue;
				sb.Append (f.Name + "=");
				Dump (f.GetValue (o), sb, seen);
				sb.Append (";");
			}
		sb.Append ("}");
	}

	static string Prim (object o)
	{
		if (o is float) return "f" + BitConverter.ToInt32 (BitConverter.GetBytes ((float)o), 0);
		if (o is double) return "d" + BitConverter.DoubleToInt64Bits ((double)o);
		if (o is char) return "c" + (int)(char)o;
		if (o is DateTime) return "t" + ((DateTime)o).ToBinary ();
		return o.GetType ().Name + ":" + o;
	}

	static string Escape (string s)
	{
		var sb = new StringBuilder ();
		foreach (char ch in s) sb.Append (ch < 128 ? ch.ToString () : "\\u" + ((int)ch).ToString ("x4"));
		return sb.ToString ();
	}

	static string DumpRoots (object[] roots)
	{
		var sb = new StringBuilder ();
		var seen = new ArrayList ();
		foreach (object r in roots) { Dump (r, sb, seen); sb.Append ("\n"); }
		return sb.ToString ();
	}

	// The restored Closing objects, let go: each one's finalizer runs.
	[System.Runtime.CompilerServices.MethodImpl (System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
	static void LetGo (Shelf shelf)
	{
		T.Eq (99, shelf.Items [99].Id, "restored finalizable objects");
		shelf.Items = null;
	}

	static void CheckFinalizers (Shelf shelf)
	{
		Closing.Finalized = 0;
		LetGo (shelf);
		for (int i = 0; i < 5 && Closing.Finalized < 100; i++) {
			GC.Collect ();
			GC.WaitForPendingFinalizers ();
		}
		T.Eq (100, Closing.Finalized, "finalizers of restored objects that were let go");
	}

	static int Main (string[] args)
	{
		if (args [0] == "write") {
			T.Check (!SPC.IsWarmRestart (), "first run is a cold start");
			Node a = Build ();
			int r1 = SPC.AddRoot (a);
			int r2 = SPC.AddRoot (a.Next.Next);     // c: shared with root 1's graph
			int r3 = SPC.AddRoot (new int [] { 42 });
			T.Eq (1, r1, "first root id"); T.Eq (2, r2, "second root id"); T.Eq (3, r3, "third root id");
			var shelf = new Shelf { Items = new Closing [100] };
			for (int i = 0; i < 100; i++)
				shelf.Items [i] = new Closing { Id = i };
			T.Eq (4, SPC.AddRoot (shelf), "fourth root id");
			SPC.SendPData ();
			Console.Write (DumpRoots (new object [] { SPC.RecvPData (1), SPC.RecvPData (2), SPC.RecvPData (3) }));
			return 0;
		}
		T.Check (SPC.IsWarmRestart (), "second run is a warm restart");
		Node.ConstructorRuns = 0;
		var ra = (Node)SPC.RecvPData (1);
		var rc = (Node)SPC.RecvPData (2);
		var rarr = (int[])SPC.RecvPData (3);
		T.Eq (0, Node.ConstructorRuns, "no constructor ran on restore");
		T.Check (object.ReferenceEquals (ra.Next.Next, rc), "root 2 is the object root 1 reaches");
		T.Check (object.ReferenceEquals (rc.Next, ra), "cycle closes on root 1");
		T.Check (object.ReferenceEquals (rc.Any, rc), "self reference");
		T.Check (object.ReferenceEquals (ra.Any, ra.Ints), "array shared through object field");
		T.Check (object.ReferenceEquals (ra.Children [0], ra.Children [2]), "shared array elements");
		T.Check (object.ReferenceEquals (ra.Tag.Link, rc), "reference inside a struct field");
		T.Eq (2.0, ra.Tag.P.Y, "an [SPersistent] struct's unmarked field is persisted (the struct is whole)");
		T.Eq (-8.0, ra.Points [1].Y, "the same in an array of structs");
		T.Eq (0, ra.Transient, "non-persistent field has its default");
		T.Eq (null, ra.TransientText, "non-persistent reference field is null");
		T.Eq (0, ra.NotPersistentInBase, "non-persistent base field has its default");
		T.Eq (42, rarr [0], "array root");
		CheckFinalizers ((Shelf)SPC.RecvPData (4));
		Console.Write (DumpRoots (new object [] { ra, rc, rarr }));
		return 0;
	}
}
