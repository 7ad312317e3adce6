// TestUtil: assertions for the runtime tests' C# programs. A failed check exits
// with status 1 and says what differed, so the shell side only checks status.
using System;

static class T
{
	public static void Check (bool ok, string what)
	{
		if (!ok) {
			Console.Error.WriteLine ("CHECK FAILED: " + what);
			Environment.Exit (1);
		}
	}

	public static void Eq<V> (V expected, V actual, string what)
	{
		if (!object.Equals (expected, actual))
			Check (false, what + ": expected <" + expected + "> got <" + actual + ">");
	}

	public static void Throws<E> (Action a, string mustContain, string what) where E : Exception
	{
		try {
			a ();
		} catch (E e) {
			Check (mustContain == null || e.Message.Contains (mustContain),
				what + ": message <" + e.Message + "> lacks <" + mustContain + ">");
			Console.WriteLine (what + " threw: " + e.Message);
			return;
		}
		Check (false, what + ": no " + typeof (E).Name + " thrown");
	}

	// One snapshot: SendPData, then WaitPersisted.  False when the cycle was
	// refused with a message holding `refusal` (null: no refusal expected);
	// any other failure is a failed check.
	public static bool Persist (string refusal)
	{
		SPersistence.SPC.SendPData ();
		try {
			SPersistence.SPC.WaitPersisted ();
			return true;
		} catch (SPersistence.SPersistenceException e) {
			Check (refusal != null && e.Message.Contains (refusal), "snapshot failed: " + e.Message);
			return false;
		}
	}
}
