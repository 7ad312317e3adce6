// Rename: one program in two versions (mcs -define), the second renaming what
// the first persisted, and saying so with FormerNames (class evolution).
//
//   (no define)  Plant { int Level; Valve Main; Point Pos; Point [] Trail; List<Valve> Spares }
//   RENAME       the same state under new names: Plant -> Site.Unit, Valve ->
//                Site.Actuator (so Main's declared type, the List's generic
//                argument follow), Point -> Site.Point (so the array of it
//                follows), Level -> Height (widened to long on the way),
//                Point.Y -> Point.Row.
//
//   RENAME;MOVED the same, with Site.Actuator in another assembly (parts.dll,
//                this file built with -define:PARTS alone).
//
//   Rename.exe write P     the state of period P, persisted.
//   Rename.exe loop        periods 1, 2, ... persisted until killed (kill -9).
//   Rename.exe check P     the restored state is period P's (renamed version).
//   Rename.exe check-any   the restored state is one whole period's.
using System;
using System.Collections.Generic;
using SPersistence;

#if PARTS || (RENAME && !MOVED)
namespace Site
{
	[SPersistent (FormerNames = new [] { "Valve" })]
	public class Actuator
	{
		[SPersistentField] public int Opening;
	}
}
#endif

#if PARTS
#elif RENAME
namespace Site
{
	[SPersistent (FormerNames = new [] { "Point" })]
	public struct Point
	{
		[SPersistentField] public float X;
		[SPersistentField (FormerNames = new [] { "Y" })] public int Row;
	}

	[SPersistent (FormerNames = new [] { "Plant", "Old.Plant" })]
	public class Unit
	{
		[SPersistentField (FormerNames = new [] { "Level" })] public long Height;
		[SPersistentField] public Actuator Main;
		[SPersistentField] public Point Pos;
		[SPersistentField] public Point [] Trail;
		[SPersistentField] public List<Actuator> Spares;
	}
}
#else
[SPersistent]
public class Valve
{
	[SPersistentField] public int Opening;
}

public struct Point
{
	public float X;
	public int Y;
}

[SPersistent]
public class Plant
{
	[SPersistentField] public int Level;
	[SPersistentField] public Valve Main;
	[SPersistentField] public Point Pos;
	[SPersistentField] public Point [] Trail;
	[SPersistentField] public List<Valve> Spares;
}
#endif

#if !PARTS
static class Program
{
#if RENAME
	// The state of period p, under the new names (p: the Pos.Row the state says, for "any").
	static void Check (int p)
	{
		T.Check (SPersistence.SPC.IsWarmRestart (), "a warm restart");
		var u = (Site.Unit)SPC.RecvPData (1);
		if (p < 0)
			p = u.Pos.Row;
		T.Eq (-1000L * p, u.Height, "Level -> Height");
		T.Eq (p, u.Main.Opening, "Main");
		T.Eq (p + 0.5f, u.Pos.X, "Pos.X");
		T.Eq (p, u.Pos.Row, "Pos.Y -> Pos.Row");
		T.Eq (2, u.Trail.Length, "Trail");
		for (int i = 0; i < 2; i++)
			T.Eq (p + i, u.Trail [i].Row, "Trail.Y -> Trail.Row");
		T.Eq (3, u.Spares.Count, "Spares");
		for (int i = 0; i < 3; i++)
			T.Eq (p * 10 + i, u.Spares [i].Opening, "Spares' elements");
		Console.WriteLine ("period " + p);
	}
#else
	// Period p's values, into plant.
	static void Update (Plant plant, int p)
	{
		plant.Level = -1000 * p;
		plant.Main.Opening = p;
		plant.Pos.X = p + 0.5f;
		plant.Pos.Y = p;
		for (int i = 0; i < 2; i++)
			plant.Trail [i].Y = p + i;
		for (int i = 0; i < 3; i++)
			plant.Spares [i].Opening = p * 10 + i;
	}
#endif

	// write P | loop (the first version); check P | check-any (the renamed one).
	static int Main (string[] args)
	{
#if RENAME
		T.Check (args [0].StartsWith ("check"), "the renamed version only checks");
		Check (args [0] == "check-any" ? -1 : int.Parse (args [1]));
		return 0;
#else
		var plant = new Plant { Main = new Valve (), Trail = new Point [2], Spares = new List<Valve> () };
		for (int i = 0; i < 3; i++)
			plant.Spares.Add (new Valve ());
		SPC.AddRoot (plant);
		if (args [0] == "write") {
			Update (plant, int.Parse (args [1]));
			T.Check (T.Persist (null), "persisted");
			return 0;
		}
		for (int p = 1; ; p++) {        /* loop: until killed */
			Update (plant, p);
			SPC.SendPData ();
			SPC.WaitPersisted ();
			if (p == 1)
				Console.WriteLine ("persisting");
		}
#endif
	}
}
#endif
