// SpdumpDelta: a small state whose every value is a function of the period, so
// that test_spdump.sh knows what spdump must print at each snapshot of a chain
// (--sp-delta=on: the first snapshot full, then deltas).
//
//   SpdumpDelta.exe P     periods 1..P, each: mutate, SendPData (snapshot p
//                         holds the state after period p)
//
// Period p gives the root again (Period = p), patches one element every
// period (Values[10] = 100 + p: the latest patch must win) and one element of
// its own far from it (Values[512 * p + 1] = 900000 + p: a delta patches the
// 4 KiB cards of a large array that changed, so the state at p takes elements
// from every part of its chain), adds
// new objects that an old array refers to (Items[p] = { Id = p, Name =
// "item p" }) and changes an object of the full snapshot (Items[0].Id = 1000 + p).
using SPersistence;

[SPersistent]
class Item
{
	[SPersistentField] public int Id;
	[SPersistentField] public string Name;
}

[SPersistent]
class State
{
	[SPersistentField] public int Period;
	[SPersistentField] public long [] Values;
	[SPersistentField] public Item [] Items;
}

static class Program
{
	static int Main (string [] args)
	{
		var s = new State { Values = new long [16384], Items = new Item [16] };
		for (int i = 0; i < s.Values.Length; i++)
			s.Values [i] = 7;
		s.Items [0] = new Item { Id = 1000, Name = "first" };
		SPC.AddRoot (s);
		int last = int.Parse (args [0]);
		for (int p = 1; p <= last; p++) {
			s.Period = p;
			s.Values [10] = 100 + p;
			s.Values [512 * p + 1] = 900000 + p;
			s.Items [p] = new Item { Id = p, Name = "item " + p };
			s.Items [0].Id = 1000 + p;
			SPC.SendPData ();
		}
		return 0;
	}
}
