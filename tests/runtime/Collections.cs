// Collections: List<T> and Dictionary<K,V> (keys of primitive, enum or string
// type) in persistent fields are persisted, restored as working collections
// with shared elements kept shared, and kept exact by the barrier (in every
// mode) while the program changes them through their own methods during a
// cycle.
// A dictionary keyed by objects, or with a comparer of its own, is refused,
// naming the field and the reason.
//
//   spmono ... coll.exe write N GENERATIONS   generations of lists, each persisted while being scrambled
//   spmono ... coll.exe write-unguarded N G    the same, and stores into the parts no barrier mode but marking guards
//   spmono ... coll.exe check N GENERATIONS   the restored lists are generation GENERATIONS exactly
//   spmono ... coll.exe dictionary            SendPData refuses unpersistable dictionaries
using System;
using System.Collections.Generic;
using SPersistence;

[SPersistent]
class Part {
	[SPersistentField] public int Value;
	[SPersistentField] public List<Part> Children;

	// Guarded in every barrier mode (a method of an [SPersistent] class, marked).
	[SPersistentUpdate]
	public void Set (int value)
	{
		Value = value;
	}
}

[SPersistent]
class Lists {
	[SPersistentField] public List<int> Ints;
	[SPersistentField] public List<Part> Parts;
	[SPersistentField] public List<Part> Again;      // the same parts, in another order: sharing survives
	[SPersistentField] public List<string> Names;
	[SPersistentField] public List<Part> Empty;
	[SPersistentField] public List<Part> None;
	[SPersistentField] public Dictionary<int, string> ById;
	[SPersistentField] public Dictionary<string, Part> ByName;
	[SPersistentField] public int Generation;
}

[SPersistent]
class WithObjectKeys {
	[SPersistentField] public Dictionary<Part, int> Map;
}

[SPersistent]
class WithComparer {
	[SPersistentField] public Dictionary<string, int> Map;
}

static class Program {
	// Generation g of the lists: every value derived from g and the index.
	static void SetGeneration (Lists l, int n, int g)
	{
		l.Ints.Clear ();
		l.Parts.Clear ();
		l.Again.Clear ();
		l.Names.Clear ();
		l.ById.Clear ();
		l.ByName.Clear ();
		for (int i = 0; i < n; i++) {
			l.Ints.Add (g * 1000 + i);
			var p = new Part { Value = g + i, Children = new List<Part> () };
			l.Parts.Add (p);
			l.Names.Add ("name-" + g + "-" + i);
			l.ById [i * 7] = "id-" + g + "-" + i;
			l.ByName ["part-" + i] = p;
		}
		for (int i = 0; i < n; i += 3)
			l.ById.Remove (i * 7);                 // free entries in the middle
		for (int i = 0; i < n; i++) {
			l.Again.Add (l.Parts [(i * 7) % n]);
			l.Parts [i].Children.Add (l.Parts [(i + 1) % n]);
		}
		l.Generation = g;
	}

	// Everything a program does to lists, while the cycle runs: from a method
	// no barrier mode selects, so that only the class library's own stores
	// are guarded (they are in every mode), and the part's through Part.Set.
	static void Scramble (Lists l, int g)
	{
		for (int i = 0; i < l.Ints.Count; i++)
			l.Ints [i] = -g;
		l.Ints.Add (-1);
		l.Ints.RemoveAt (0);
		l.Ints.Sort ();
		l.Ints.Reverse ();
		l.Parts.Reverse ();
		l.Parts [0].Set (-g);
		l.Parts [0].Children.Clear ();
		l.Again.RemoveRange (0, l.Again.Count / 2);
		l.Names.Insert (0, "inserted");
		l.Names [1] = "replaced";
		l.Empty.Add (new Part ());
		l.Again.Clear ();
		l.Again.TrimExcess ();
		for (int i = 0; i < l.Parts.Count; i += 2)
			l.ById [i * 7] = "changed";
		l.ById.Remove (7);
		l.ById [-5] = "new";
		l.ByName.Remove ("part-0");
		l.ByName ["extra"] = new Part ();
		l.ByName.Clear ();
	}

	// Stores into the parts that marking-v2 and annotating do not guard.
	static void ScrambleUnguarded (Lists l, int g)
	{
		foreach (Part p in l.Parts)
			p.Value = -g;
	}

	static int Check (int n, int g)
	{
		var l = (Lists)SPC.RecvPData (1);
		var want = new Lists { Ints = new List<int> (), Parts = new List<Part> (), Again = new List<Part> (), Names = new List<string> (),
				       ById = new Dictionary<int, string> (), ByName = new Dictionary<string, Part> () };
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
		T.Eq (want.ById.Count, l.ById.Count, "ById.Count");
		foreach (var kv in want.ById) {
			string v;
			T.Check (l.ById.TryGetValue (kv.Key, out v) && v == kv.Value, "ById [" + kv.Key + "] found by its hash after the restart");
		}
		T.Check (!l.ById.ContainsKey (0), "a removed key stays removed");
		T.Eq (n, l.ByName.Count, "ByName.Count");
		for (int i = 0; i < n; i++)
			T.Check (object.ReferenceEquals (l.ByName ["part-" + i], l.Parts [i]), "ByName shares the parts");
		l.ById [123456] = "after";                       // a restored dictionary works as one
		T.Eq ("after", l.ById [123456], "an entry added after the restart");
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
			int keyed = SPC.AddRoot (new WithObjectKeys { Map = new Dictionary<Part, int> { { new Part (), 1 } } });
			T.Throws<SPersistenceException> (() => { SPC.SendPData (); SPC.WaitPersisted (); }, "may hash differently", "object keys");
			SPC.RemoveRoot (keyed);
			SPC.AddRoot (new WithComparer { Map = new Dictionary<string, int> (StringComparer.OrdinalIgnoreCase) { { "a", 1 } } });
			T.Throws<SPersistenceException> (() => { SPC.SendPData (); SPC.WaitPersisted (); }, "_comparer", "a comparer of its own");
			Console.WriteLine ("dictionary refused");
			return 0;
		}
		int n = int.Parse (args [1]), generations = int.Parse (args [2]);
		if (args [0] == "check")
			return Check (n, generations);
		var lists = new Lists { Ints = new List<int> (), Parts = new List<Part> (), Again = new List<Part> (),
					Names = new List<string> (), Empty = new List<Part> (),
					ById = new Dictionary<int, string> (), ByName = new Dictionary<string, Part> () };
		SPC.AddRoot (lists);
		for (int g = 1; g <= generations; g++) {
			SetGeneration (lists, n, g);
			SPC.SendPData ();
			Scramble (lists, g);
			if (args [0] == "write-unguarded")
				ScrambleUnguarded (lists, g);
			SPC.WaitPersisted ();
			lists.Empty.Clear ();
			SPStats s = SPC.GetStats ();
			Console.WriteLine ("generation {0}: {1} objects, {2} by barriers", g, s.LastObjects, s.CycleBarrierWrites);
		}
		return 0;
	}
}
