// Generics: generic persistent classes (open over value and reference types),
// nested classes and generic structs keep their identity in the class cache.
using System;
using System.Collections.Generic;
using SPersistence;

[SPersistent] class Box<T> { [SPersistentField] public T Value; [SPersistentField] public Box<T> Next; }

static class Outer
{
	[SPersistent]
	public class Inner
	{
		[SPersistentField] public string S;
		[SPersistentField] public Box<int>[] Boxes;
		[SPersistentField] public KeyValuePair<int, long> Pair;
		[SPersistentField] public Box<string> Strings;
	}
}

static class Program
{
	static int Main (string[] args)
	{
		if (args [0] == "write") {
			var inner = new Outer.Inner {
				S = "x", Pair = new KeyValuePair<int, long> (3, long.MinValue),
				Boxes = new [] { new Box<int> { Value = 5, Next = new Box<int> { Value = 6 } } },
				Strings = new Box<string> { Value = "s" },
			};
			SPC.AddRoot (inner);
			SPC.SendPData ();
			return 0;
		}
		var r = (Outer.Inner)SPC.RecvPData (1);
		T.Eq ("x", r.S, "string");
		T.Eq (5, r.Boxes [0].Value, "Box<int>");
		T.Eq (6, r.Boxes [0].Next.Value, "Box<int>.Next");
		T.Eq (3, r.Pair.Key, "KeyValuePair key");
		T.Eq (long.MinValue, r.Pair.Value, "KeyValuePair value");
		T.Eq ("s", r.Strings.Value, "Box<string>");
		Console.WriteLine ("generics ok");
		return 0;
	}
}
