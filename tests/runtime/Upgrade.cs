// Upgrade: the upgrade hook (ISPersistentUpgrade) across a class change.
//
//   (no define)  Tank { int Level; float Gain; int Removed; Valve Old; string Name }
//                and Log { int Count } (Log never changes)
//   UPGRADE      Tank : ISPersistentUpgrade { long Level; double Gain;
//                string Label (FormerNames "Name"); int Derived } whose
//                OnRestored derives Derived from the removed fields; Log
//                implements the interface too, and must not be called.
//   THROW        the same, but Tank's hook throws for the second tank.
//
//   Upgrade.exe write     two tanks and a log of period 3, persisted.
//   Upgrade.exe loop      periods 1, 2, ... persisted until killed (kill -9).
//   Upgrade.exe check [any] (UPGRADE, THROW) the hooks ran, before the first
//                         SPC call returned, on period 3's state (any: on one
//                         whole period's, the log saying which).
using System;
using SPersistence;

[SPersistent]
public class Valve
{
	[SPersistentField] public int Opening;
}

#if UPGRADE || THROW
[SPersistent]
public class Tank : ISPersistentUpgrade
{
	[SPersistentField] public long Level;
	[SPersistentField] public double Gain;
	[SPersistentField (FormerNames = new [] { "Name" })] public string Label;
	[SPersistentField] public int Derived;
	public static int Calls;

	public void OnRestored (SPUpgradeContext context)
	{
		Calls++;
		T.Eq ("Tank", context.FormerClassName, "the former class name");
		T.Check (context.Changes.Contains ("'Removed' (int) is not in the loaded class: kept as unknown data"), "the changes: " + context.Changes);
		// The old values, in their old types: Level was an int, Gain a float; Name was renamed, Removed and Old are gone.
		T.Check (context.Old ("Level") is int, "Level's old value is an int");
		T.Eq ((int)Level, (int)context.Old ("Level"), "Level's old value");
		T.Check (context.Old ("Gain") is float, "Gain's old value is a float");
		T.Eq (Label, (string)context.Old ("Name"), "Name's old value, under its old name");
		T.Check (!context.Has ("Label") && !context.Has ("Derived"), "only the old version's fields are there");
		var old = (Valve)context.Old ("Old");
		Derived = context.Old<int> ("Removed") * 1000 + old.Opening;
		T.Eq ((long)context.Old<int> ("Removed"), context.Old<long> ("Removed"), "Old<T> converts");
		try {
			context.Old ("Nothing");
			T.Check (false, "an unknown field's old value");
		} catch (System.Collections.Generic.KeyNotFoundException e) {
			T.Check (e.Message.Contains ("has no changed field 'Nothing'"), "the unknown field's message: " + e.Message);
		}
#if THROW
		if (Calls == 2)
			throw new InvalidOperationException ("the second tank refuses");
#endif
	}
}

[SPersistent]
public class Log : ISPersistentUpgrade
{
	[SPersistentField] public int Count;
	public static int Calls;

	public void OnRestored (SPUpgradeContext context)
	{
		Calls++;
	}
}
#else
[SPersistent]
public class Tank
{
	[SPersistentField] public int Level;
	[SPersistentField] public float Gain;
	[SPersistentField] public int Removed;
	[SPersistentField] public Valve Old;
	[SPersistentField] public string Name;
}

[SPersistent]
public class Log
{
	[SPersistentField] public int Count;
}
#endif

static class Program
{
	static int Main (string[] args)
	{
#if UPGRADE || THROW
		bool warm = false;
#if THROW
		T.Throws<SPersistenceException> (() => warm = SPC.IsWarmRestart (), "the upgrade of a restored Tank failed (OnRestored threw): the second tank refuses", "a hook that throws");
		T.Eq (2, Tank.Calls, "every hook ran though one threw");
		warm = SPC.IsWarmRestart ();
		T.Eq (2, Tank.Calls, "the hooks ran once");
#else
		warm = SPC.IsWarmRestart ();
		T.Eq (2, Tank.Calls, "the hooks ran before the first SPC call returned");
#endif
		T.Check (warm, "a warm restart");
		var tanks = (Tank [])SPC.RecvPData (1);
		int p = ((Log)SPC.RecvPData (2)).Count;
		if (args.Length < 2)
			T.Eq (3, p, "the log");
		for (int i = 0; i < 2; i++) {
			T.Eq ((long)(-10 * (i + 1)), tanks [i].Level, "Level");
			T.Eq (Removed (p, i) * 1000 + 5 + i, tanks [i].Derived, "Derived from the old values of period " + p);
			T.Eq ("tank " + i, tanks [i].Label, "Label");
		}
		T.Eq (0, Log.Calls, "an unchanged class's hook is not called");
		Console.WriteLine ("period " + p);
#else
		var tanks = new Tank [2];
		for (int i = 0; i < 2; i++)
			tanks [i] = new Tank { Level = -10 * (i + 1), Gain = 0.5f, Old = new Valve { Opening = 5 + i }, Name = "tank " + i };
		var log = new Log ();
		SPC.AddRoot (tanks);
		SPC.AddRoot (log);
		for (int p = args [0] == "write" ? 3 : 1; ; p++) {
			for (int i = 0; i < 2; i++)
				tanks [i].Removed = Removed (p, i);
			log.Count = p;
			if (args [0] == "write") {
				T.Check (T.Persist (null), "persisted");
				break;
			}
			SPC.SendPData ();
			SPC.WaitPersisted ();
			if (p == 1)
				Console.WriteLine ("persisting");
		}
#endif
		return 0;
	}

	// Tank i's Removed in period p: the log's Count says which period the hooks saw.
	static int Removed (int p, int i) { return 5 * p + i; }
}
