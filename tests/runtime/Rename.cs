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
//   Rename.exe check P     the restored state is period P's.
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
	static int Main (string[] args)
	{
		int p = int.Parse (args [1]);
#if RENAME
		T.Check (args [0] == "check", "the renamed version only checks");
		T.Check (SPersistence.SPC.IsWarmRestart (), "a warm restart");
		var u = (Site.Unit)SPC.RecvPData (1);
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
#else
		if (args [0] == "write") {
			var plant = new Plant { Level = -1000 * p, Main = new Valve { Opening = p } };
			plant.Pos.X = p + 0.5f;
			plant.Pos.Y = p;
			plant.Trail = new Point [2];
			for (int i = 0; i < 2; i++)
				plant.Trail [i].Y = p + i;
			plant.Spares = new List<Valve> ();
			for (int i = 0; i < 3; i++)
				plant.Spares.Add (new Valve { Opening = p * 10 + i });
			SPC.AddRoot (plant);
			T.Check (T.Persist (null), "persisted");
		}
#endif
		return 0;
	}
}
#endif
