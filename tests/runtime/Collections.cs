// Collections: List<T> in persistent fields is persisted (its items, count and
// version), restored as a working list with shared elements kept shared, and
// kept exact by the marking barrier while the program changes the lists
// through List's own methods during a cycle.  A Dictionary<K,V> field is
// refused, naming the field and the type.
//
//   spmono ... coll.exe write N GENERATIONS   generations of lists, each persisted while being scrambled
//   spmono ... coll.exe check N GENERATIONS   the restored lists are generation GENERATIONS exactly
//   spmono ... coll.exe dictionary            SendPData refuses a Dictionary field
using System;
using System.Collections.Generic;
using SPersistence;

[SPersistent]
class Part {
	[SPersistentField] public int Value;
	[SPersistentField] public List<Part> Children;
}

[SPersistent]
class Lists {
	[SPersistentField] public List<int> Ints;
	[SPersistentField] public List<Part> Parts;
	[SPersistentField] public List<Part> Again;      // the same parts, in another order: sharing survives
	[SPersistentField] public List<string> Names;
	[SPersistentField] public List<Part> Empty;
	[SPersistentField] public List<Part> None;
	[SPersistentField] public int Generation;
}

[SPersistent]
class WithDictionary {
	[SPersistentField] public Dictionary<int, string> Map;
}

static class Program {
	// Generation g of the lists: every value derived from g and the index.
	static void SetGeneration (Lists l, int n, int g)
	{
		l.Ints.Clear ();
		l.Parts.Clear ();
		l.Again.Clear ();
		l.Names.Clear ();
		for (int i = 0; i < n; i++) {
			l.Ints.Add (g * 1000 + i);
			var p = new Part { Value = g + i, Children = new List<Part> () };
			l.Parts.Add (p);
			l.Names.Add ("name-" + g + "-" + i);
		}
		for (int i = 0; i < n; i++) {
			l.Again.Add (l.Parts [(i * 7) % n]);
			l.Parts [i].Children.Add (l.Parts [(i + 1) % n]);
		}
		l.Generation = g;
	}

	// Everything a program does to lists, while the cycle runs.
	static void Scramble (Lists l, int g)
	{
		for (int i = 0; i < l.Ints.Count; i++)
			l.Ints [i] = -g;
		l.Ints.Add (-1);
		l.Ints.RemoveAt (0);
		l.Ints.Sort ();
		l.Ints.Reverse ();
		l.Parts.Reverse ();
		l.Parts [0].Value = -g;
		l.Parts [0].Children.Clear ();
		l.Again.RemoveRange (0, l.Again.Count / 2);
		l.Names.Insert (0, "inserted");
		l.Names [1] = "replaced";
		l.Empty.Add (new Part ());
		l.Again.Clear ();
		l.Again.TrimExcess ();
	}

	static int Check (int n, int g)
	{
		var l = (Lists)SPC.RecvPData (1);
		var want = new Lists { Ints = new List<int> (), Parts = new List<Part> (), Again = new List<Part> (), Names = new List<string> () };
		SetGeneration (want, n, g);
		T.Eq (g, l.Generation, "Generation");
		T.Eq (n, l.Ints.Count, "Ints.Count");
		T.Eq (n, l.Parts.Count, "Parts.Count");
		T.Eq (n, l.Again.Count, "Again.Count");
		for (int i = 0; i < n; i++) {
			T.Eq (want.Ints [i], l.Ints [i], "Ints[" + i + "]");
			T.Eq (want.Names [i], l.Names [i], "Names[" + i + "]");
			T.Eq (want.Parts [i].Value, l.Parts [i].Value, "Parts[" + i + "].Value");
			T.Check (object.ReferenceEquals (l.Again [i], l.Parts [(i * 7) % n]), "Again[" + i + "] is the shared part");
			T.Eq (1, l.Parts [i].Children.Count, "Children.Count");
			T.Check (object.ReferenceEquals (l.Parts [i].Children [0], l.Parts [(i + 1) % n]), "child " + i + " is shared");
		}
		T.Eq (0, l.Empty.Count, "Empty.Count");
		T.Check (l.None == null, "a null list stays null");
		// A restored list works as a list.
		l.Ints.Add (7);
		l.Empty.Add (l.Parts [0]);
		T.Eq (n + 1, l.Ints.Count, "Add on a restored list");
		T.Eq (7, l.Ints [n], "the added item");
		T.Check (l.Ints.Contains (want.Ints [0]), "Contains on a restored list");
		Console.WriteLine ("lists of generation {0} restored exactly: {1} items each", g, n);
		return 0;
	}

	static int Main (string [] args)
	{
		if (args [0] == "dictionary") {
			SPC.AddRoot (new WithDictionary { Map = new Dictionary<int, string> { { 1, "one" } } });
			T.Throws<SPersistenceException> (() => { SPC.SendPData (); SPC.WaitPersisted (); }, "Dictionary", "a Dictionary field");
			Console.WriteLine ("dictionary refused");
			return 0;
		}
		int n = int.Parse (args [1]), generations = int.Parse (args [2]);
		if (args [0] == "check")
			return Check (n, generations);
		var lists = new Lists { Ints = new List<int> (), Parts = new List<Part> (), Again = new List<Part> (),
					Names = new List<string> (), Empty = new List<Part> () };
		SPC.AddRoot (lists);
		for (int g = 1; g <= generations; g++) {
			SetGeneration (lists, n, g);
			SPC.SendPData ();
			Scramble (lists, g);
			SPC.WaitPersisted ();
			lists.Empty.Clear ();
			SPStats s = SPC.GetStats ();
			Console.WriteLine ("generation {0}: {1} objects, {2} by barriers", g, s.LastObjects, s.CycleBarrierWrites);
		}
		return 0;
	}
}
