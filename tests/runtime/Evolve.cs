// Evolve: one program in several versions (mcs -define), each restoring what
// another wrote (class evolution, docs/FORMAT.md "Class evolution").
//
//   (no define)  the first version.
//   ADD          fields added (Added, with a Default; Spare, a reference;
//                Pos.Z), one removed (Removed), the rest declared in another
//                order: restores both ways, each version carrying the other's
//                fields as unknown data.
//   DROP         the first version, its Plant saying DropUnknown.
//   (Mode, an enum field, gains a value in ADD: nothing changes.)
//   WIDEN        fields widened (Level int -> long, Gain float -> double,
//                Count short -> int, Pos.X float -> double, in Trail's
//                elements too): restores forward; back, narrowing is refused.
//   REFTYPE      Main's declared type changes (Valve -> Pump): refused.
//   TOREF        Count becomes a string: refused.
//
//   Evolve.exe write P           the state of period P, persisted.
//   Evolve.exe check P [HOW [P0]]  the restored state is period P's; the
//                                fields only this version has are (HOW) its
//                                own of period P ("own", the default), at
//                                their defaults ("fresh": the state comes from
//                                a version that never had them), or as this
//                                version left them at period P0 ("carried":
//                                through a version that did not know them).
//   Evolve.exe rewrite P [HOW [P0]] the restored state (period P - 1, HOW)
//                                checked, updated to period P, persisted by this version.
//   Evolve.exe loop              periods 1, 2, ... (or on from the restored one)
//                                persisted until killed (kill -9).
//   Evolve.exe check-any [HOW [P0]] the restored state is one whole period's.
//   Evolve.exe refused TEXT      the restore is refused with TEXT in the message.
using System;
using SPersistence;

[SPersistent]
public struct Point
{
#if WIDEN
	[SPersistentField] public double X;
#else
	[SPersistentField] public float X;
#endif
	[SPersistentField] public int Y;
#if ADD
	[SPersistentField] public int Z;
#endif
}

// Enum values added (Manual) change nothing: the field is its underlying int in both versions.
#if ADD
public enum Mode { Off, Auto, Manual }
#else
public enum Mode { Off, Auto }
#endif

[SPersistent]
public class Valve
{
	[SPersistentField] public int Opening;
}

[SPersistent]
public class Pump
{
	[SPersistentField] public int Opening;
}

#if DROP
[SPersistent (DropUnknown = true)]
#else
[SPersistent]
#endif
public class Plant
{
#if ADD
	[SPersistentField] public string Name;
	[SPersistentField] public Valve Spare;
	[SPersistentField (Default = -1)] public int Added;
#else
	[SPersistentField] public int Removed;
#endif
#if WIDEN
	[SPersistentField] public long Level;
	[SPersistentField] public double Gain;
	[SPersistentField] public int Count;
#elif TOREF
	[SPersistentField] public int Level;
	[SPersistentField] public float Gain;
	[SPersistentField] public string Count;
#else
	[SPersistentField] public int Level;
	[SPersistentField] public float Gain;
	[SPersistentField] public short Count;
#endif
#if REFTYPE
	[SPersistentField] public Pump Main;
#else
	[SPersistentField] public Valve Main;
#endif
	[SPersistentField] public Point Pos;
	[SPersistentField] public Point [] Trail;
	[SPersistentField] public Mode Mode;
#if !ADD
	[SPersistentField] public string Name;
#endif
}

static class Program
{
#if ADD
	const string Version = "ADD";
#elif WIDEN
	const string Version = "WIDEN";
#else
	const string Version = "V1";
#endif

	// Period p's values; the wider types hold them all, negative ones included (sign extension).
	static int LevelOf (int p) { return -100000 * p - 7; }
	static float GainOf (int p) { return 0.5f * p + 0.25f; }
	static short CountOf (int p) { return (short)(-3 * p); }

#if !TOREF && !REFTYPE
	static Plant Make (int p)
	{
		var plant = new Plant { Main = new Valve (), Trail = new Point [3] };
		Update (plant, p);
		SetOwnFields (plant, p);
		return plant;
	}

	// The fields only this version has, as period p has them.
	static void SetOwnFields (Plant plant, int p)
	{
#if ADD
		plant.Added = 1000 + p;
		plant.Spare = new Valve { Opening = -p };
		plant.Pos.Z = p;
#else
		plant.Removed = 40 + p;
#endif
	}

	// The fields only this version has: `how` they are when period p is restored (see the top), p0 for "carried".
	static void CheckOwnFields (Plant plant, int p, string how, int p0, string at)
	{
		bool fresh = how == "fresh";
		int q = how == "carried" ? p0 : p;
		at += " (" + how + (how == "carried" ? " from " + p0 : "") + ")";
#if ADD
		// Fields the old version did not have start at their Default, or at the default of an object made without its constructor.
		T.Eq (fresh ? -1 : 1000 + q, plant.Added, at + ": Added");
		T.Check (fresh ? plant.Spare == null : plant.Spare != null && plant.Spare.Opening == -q, at + ": Spare");
		T.Eq (fresh ? 0 : q, plant.Pos.Z, at + ": Pos.Z");
#else
		T.Eq (fresh ? 0 : 40 + q, plant.Removed, at + ": Removed");
#endif
	}

	static void Update (Plant plant, int p)
	{
		plant.Level = LevelOf (p);
		plant.Gain = GainOf (p);
		plant.Count = CountOf (p);
		plant.Main.Opening = p;
		plant.Pos.X = GainOf (p);
		plant.Pos.Y = p;
		for (int i = 0; i < 3; i++) {
			plant.Trail [i].X = GainOf (p + i);
			plant.Trail [i].Y = p + i;
		}
		plant.Name = "period " + p;
		plant.Mode = (Mode)(p % 3);     /* 2: a value only ADD names */
	}

	// The state of one period, whole (`how`, p0: CheckOwnFields).
	static void CheckPeriod (Plant plant, int p, string how, int p0)
	{
		string at = Version + " reading period " + p;
		T.Eq ((long)LevelOf (p), (long)plant.Level, at + ": Level");
		T.Eq ((double)GainOf (p), (double)plant.Gain, at + ": Gain");
		T.Eq ((int)CountOf (p), (int)plant.Count, at + ": Count");
		T.Eq (p, plant.Main.Opening, at + ": Main");
		T.Eq ((double)GainOf (p), (double)plant.Pos.X, at + ": Pos.X");
		T.Eq (p, plant.Pos.Y, at + ": Pos.Y");
		T.Eq (3, plant.Trail.Length, at + ": Trail");
		for (int i = 0; i < 3; i++) {
			T.Eq ((double)GainOf (p + i), (double)plant.Trail [i].X, at + ": Trail.X");
			T.Eq (p + i, plant.Trail [i].Y, at + ": Trail.Y");
		}
		T.Eq ("period " + p, plant.Name, at + ": Name");
		T.Eq (p % 3, (int)plant.Mode, at + ": Mode");
		CheckOwnFields (plant, p, how, p0, at);
	}

	static string How (string[] args, int at) { return args.Length > at ? args [at] : "own"; }
	static int From (string[] args, int at) { return args.Length > at ? int.Parse (args [at]) : 0; }

	static Plant Restored ()
	{
		T.Check (SPC.IsWarmRestart (), "a warm restart");
		return (Plant)SPC.RecvPData (1);
	}
#endif

	static int Main (string[] args)
	{
		switch (args [0]) {
#if !TOREF && !REFTYPE
		case "write": {
			int p = int.Parse (args [1]);
			SPC.AddRoot (Make (p));
			T.Check (T.Persist (null), "persisted");
			return 0;
		}
		case "check": {
			CheckPeriod (Restored (), int.Parse (args [1]), How (args, 2), From (args, 3));
			return 0;
		}
		case "rewrite": {
			// The restored state, checked, then persisted again as period P by this version.
			Plant plant = Restored ();
			int p = int.Parse (args [1]);
			CheckPeriod (plant, p - 1, How (args, 2), From (args, 3));
			Update (plant, p);
			SetOwnFields (plant, p);
			GC.Collect ();      /* restored objects move: their unknown data follows them (by identity hash) */
			T.Check (T.Persist (null), "persisted again");
			return 0;
		}
		case "loop": {
			// Warm: on from the restored period, the fields this version does not know carried along.
			bool warm = SPC.IsWarmRestart ();
			var plant = warm ? Restored () : Make (1);
			if (!warm)
				SPC.AddRoot (plant);
			int first = warm ? plant.Pos.Y + 1 : 1;
			for (int p = first; ; p++) {
				Update (plant, p);
				SetOwnFields (plant, p);
				SPC.SendPData ();
				SPC.WaitPersisted ();
				if (p == first)
					Console.WriteLine ("persisting");
			}
		}
		case "check-any": {
			Plant plant = Restored ();
			CheckPeriod (plant, plant.Pos.Y, How (args, 1), From (args, 2));
			Console.WriteLine ("period " + plant.Pos.Y);
			return 0;
		}
#endif
		case "refused":
			T.Throws<SPersistenceException> (() => SPC.IsWarmRestart (), args [1], "restore refused");
			return 0;
		}
		return 2;
	}
}
