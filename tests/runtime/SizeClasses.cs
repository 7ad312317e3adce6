// SizeClasses: the old generation's slot for an object of each size from 72
// to 120 bytes is that size (runtime patch 0017), seen from the program:
// GC.GetTotalMemory counts a major block's used slots at the block's slot
// size, so the heap's growth over N promoted objects of one class, divided
// by N, is the slot their size took.
//   SizeClasses.exe   prints "class object_bytes slot_bytes" lines
// Sizes are for a 64-bit runtime: a 16-byte header, then the fields; a
// persistent class's instances have an identity slot of 8 bytes (patch 0008).
using System;
using SPersistence;

// The fields are there for their size; nothing reads or writes them.
#pragma warning disable 649

class L7 { public long A, B, C, D, E, F, G; }                  // 16 + 56 = 72
class L9 { public long A, B, C, D, E, F, G, H, I; }            // 88
class L11 { public long A, B, C, D, E, F, G, H, I, J, K; }     // 104
class L12 { public long A, B, C, D, E, F, G, H, I, J, K, M; }  // 112
class L13 { public long A, B, C, D, E, F, G, H, I, J, K, M, N; } // 120

[SPersistent]
class P6                                                        // 16 + 48 + identity 8 = 72
{
	[SPersistentField] public long A, B, C, D, E, F;
}

static class Program
{
	const int Objects = 200000;

	static long UsedAfterCollection ()
	{
		GC.Collect ();
		GC.WaitForPendingFinalizers ();
		GC.Collect ();
		return GC.GetTotalMemory (true);
	}

	// The slot one object of `make`'s class takes once promoted to the old generation.
	static double SlotBytes (Func<object> make)
	{
		var keep = new object [Objects];
		long before = UsedAfterCollection ();
		for (int i = 0; i < Objects; i++)
			keep [i] = make ();
		long after = UsedAfterCollection ();
		GC.KeepAlive (keep);
		return (double)(after - before) / Objects;
	}

	static void Print (string name, int objectBytes, Func<object> make)
	{
		Console.WriteLine ("{0} {1} {2:F1}", name, objectBytes, SlotBytes (make));
	}

	static int Main ()
	{
		Print ("L7", 72, () => new L7 ());
		Print ("L9", 88, () => new L9 ());
		Print ("L11", 104, () => new L11 ());
		Print ("L12", 112, () => new L12 ());
		Print ("L13", 120, () => new L13 ());
		Print ("P6", 72, () => new P6 ());
		return 0;
	}
}
