// Unseen: stores through pointers the JIT could not tie to an object while it
// compiled them -- a ref or Span taken before SendPData and used after, a span
// made by new Span<T>(array), a fixed pointer -- must never tear a snapshot
// silently.  Either the cycle refuses the snapshot (WaitPersisted throws,
// the previous snapshot stays the restart's), or the snapshot is exact.
//
//   Unseen.exe write HOW [small]   generation 1 persisted; then generation 2
//       set, a pointer taken as HOW says, SendPData, a store of 999 through it
//       while the cycle runs (the target is the last element of an array,
//       which the SP task reaches last), WaitPersisted.  Prints "REFUSED:
//       <why>" or "COMMITTED".  The arrays are large objects (the barrier
//       finds the object a store lands in: covered), or with "small" ordinary
//       ones (it cannot: refused).
//   Unseen.exe check G      (warm restart) every element and field is G
//   Unseen.exe fresh C      C cycles; during each, stores through pointers
//       made while it runs (ldelema, AsSpan, a struct element by ref,
//       Interlocked), at random: every cycle commits, and "check C" then finds
//       the last generation exact
// mcs takes a ref local that is only stored through for an unused variable (CS0219).
#pragma warning disable 219
using System;
using System.Threading;
using SPersistence;

[SPersistent]
class Plant
{
	[SPersistentField] public int [] Ballast;     // written first: the store below lands before the SP task reaches Levels
	[SPersistentField] public int [] Levels;
	[SPersistentField] public Valve [] Valves;
	[SPersistentField] public int Generation;

	[SPersistentUpdate]
	public static void SetThrough (ref int slot, int v) { slot = v; }
}

struct Valve
{
	public int Open, Flow;
}

static class Program
{
	const int N = 4 * 1024 * 1024;

	// Small: under SGen's 8,000-byte threshold for large objects.
	static Plant Make (bool small = false)
	{
		return new Plant { Ballast = new int [small ? N : 0], Levels = new int [small ? 1000 : N], Valves = new Valve [small ? 400 : 4096] };
	}

	static void SetGeneration (Plant p, int g)
	{
		p.Generation = g;
		for (int i = 0; i < p.Levels.Length; i++)
			p.Levels [i] = g;
		for (int i = 0; i < p.Valves.Length; i++)
			p.Valves [i] = new Valve { Open = g, Flow = g };
	}

	// Whether the snapshot SendPData started was refused, and why.
	static void Report ()
	{
		try {
			SPC.WaitPersisted ();
			Console.WriteLine ("COMMITTED");
		} catch (SPersistenceException e) {
			Console.WriteLine ("REFUSED: " + e.Message);
			T.Check (SPC.GetStats ().Failures >= 1, "the refused cycle is counted");
		}
	}

	static unsafe int Write (string how, bool small)
	{
		Plant p = Make (small);
		SPC.AddRoot (p);
		SetGeneration (p, 1);
		SPC.SendPData ();
		SPC.WaitPersisted ();
		SetGeneration (p, 2);
		int last = p.Levels.Length - 1, lastValve = p.Valves.Length - 1;
		switch (how) {
		case "ref": {                                   // a ref local across SendPData
			ref int r = ref p.Levels [last];
			SPC.SendPData ();
			r = 999;
			break;
		}
		case "ref-annotated": {                         // the same, stored by an [SPersistentUpdate] method
			ref int r = ref p.Levels [last];
			SPC.SendPData ();
			Plant.SetThrough (ref r, 999);
			break;
		}
		case "interlocked": {                           // Interlocked through a ref taken before
			ref int r = ref p.Levels [last];
			SPC.SendPData ();
			Interlocked.Exchange (ref r, 999);
			break;
		}
		case "span": {                                  // a span across SendPData
			Span<int> s = p.Levels.AsSpan ();
			SPC.SendPData ();
			s [last] = 999;
			break;
		}
		case "span-fill": {                             // Span.Fill (the class library's loop)
			Span<int> s = p.Levels.AsSpan ();
			SPC.SendPData ();
			s.Slice (last - 99).Fill (999);
			break;
		}
		case "span-copy": {                             // Span.CopyTo (memmove in the runtime)
			Span<int> s = p.Levels.AsSpan ();
			var src = new int [1000];
			for (int i = 0; i < src.Length; i++)
				src [i] = 999;
			SPC.SendPData ();
			src.AsSpan ().CopyTo (s.Slice (last - 999));
			break;
		}
		case "new-span": {                              // a span made without AsSpan, during the cycle
			SPC.SendPData ();
			var s = new Span<int> (p.Levels);
			s [last] = 999;
			break;
		}
		case "struct-ref": {                            // a struct element by ref, a field set through it
			ref Valve v = ref p.Valves [lastValve];
			SPC.SendPData ();
			v.Flow = 999;
			break;
		}
		case "struct-copy": {                           // a struct copied ref to ref (ldobj+stobj, which the JIT folds)
			ref Valve v = ref p.Valves [lastValve];
			var source = new [] { new Valve { Open = 999, Flow = 999 } };
			ref Valve w = ref source [0];
			SPC.SendPData ();
			v = w;
			break;
		}
		case "fixed":                                   // a fixed pointer across SendPData
			fixed (int* q = p.Levels) {
				SPC.SendPData ();
				q [last] = 999;
			}
			break;
		case "unused": {                                // a ref across SendPData, not stored through
			ref int r = ref p.Levels [last];
			SPC.SendPData ();
			T.Eq (2, r, "read through the ref");
			break;
		}
		case "written-first": {                         // stored through only after a barrier wrote the array
			ref int r = ref p.Levels [last];
			SPC.SendPData ();
			p.Levels [0] = 2;                       // the barrier writes the whole array, as of now
			r = 2;
			break;
		}
		default:
			Console.Error.WriteLine ("unknown way: " + how);
			return 2;
		}
		Report ();
		return 0;
	}

	static int Check (int g)
	{
		T.Check (SPC.IsWarmRestart (), "a warm restart");
		var p = (Plant)SPC.RecvPData (1);
		T.Eq (g, p.Generation, "generation");
		for (int i = 0; i < p.Levels.Length; i++)
			if (p.Levels [i] != g)
				T.Check (false, "Levels [" + i + "] = " + p.Levels [i] + ", generation " + g);
		for (int i = 0; i < p.Valves.Length; i++)
			if (p.Valves [i].Open != g || p.Valves [i].Flow != g)
				T.Check (false, "Valves [" + i + "] torn");
		Console.WriteLine ("generation " + g + " exact");
		return 0;
	}

	// Refs and spans made while cycles run are harmless: no cycle may be refused.
	static int Fresh (int cycles)
	{
		Plant p = Make ();
		SPC.AddRoot (p);
		var rnd = new Random (5);
		for (int g = 1; g <= cycles; g++) {
			SetGeneration (p, g);
			SPC.SendPData ();
			// While this cycle runs: stores through fresh pointers, in random order (the snapshot keeps g).
			var text = new System.Text.StringBuilder ();
			for (int k = 0; k < 200000; k++) {
				int i = rnd.Next (N);
				switch (k % 6) {
				case 0: { ref int r = ref p.Levels [i]; r = -g; break; }
				case 1: { Span<int> s = p.Levels.AsSpan (i, 1); s [0] = -g; break; }
				case 2: { ref Valve v = ref p.Valves [i % 4096]; v.Flow = -g; break; }
				case 3: Interlocked.Exchange (ref p.Levels [i], -g); break;
				// The class library builds strings and buffers through pointers into new objects: nothing to log.
				case 4: text.Append (i.ToString ()).Append (',').Append (1.5 * i); break;
				default: if (string.Concat ("level ", i.ToString ("x"), text.Length > 100000 ? text.Clear ().ToString () : "").Length == 0) return 1; break;
				}
			}
			SPC.WaitPersisted ();
		}
		T.Eq (0L, SPC.GetStats ().Failures, "refused cycles");
		Console.WriteLine ("fresh ok: " + cycles + " cycles");
		return 0;
	}

	static int Main (string [] args)
	{
		switch (args [0]) {
		case "write": return Write (args [1], args.Length > 2 && args [2] == "small");
		case "check": return Check (int.Parse (args [1]));
		case "fresh": return Fresh (int.Parse (args [1]));
		}
		return 2;
	}
}
