// RecoveryBench: how fast a killed application serves again (issue 4, item 6).
//
//   RecoveryBench.exe serve MECH N FILE   the application: if a persisted state
//       exists, restore it (SP: the warm restart; bf: FILE deserialized), else
//       build N objects (a ring of accounts, each with a balance and a link);
//       then serve periods of 1 ms: move money between two accounts and
//       persist (SP: SendPData; bf: serialize into FILE), printing "served K"
//       once the first one is durable (SP incremental: WaitPersisted).  Money is conserved, so a restored state that is
//       torn shows in the total.  The first line says how it started:
//       "start cold|warm restore_ns".
//   RecoveryBench.exe check MECH N FILE   the persisted state is whole: N
//       accounts, the total as built.
//   RecoveryBench.exe commit sp N K       a cold start of N accounts, then K
//       periods each moving money and persisting (SendPData, stop-the-world),
//       one line each: "commit NS BYTES", the call's time by the program's
//       clock and the snapshot's bytes (bench/run-replicated.sh).
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.Serialization.Formatters.Binary;
using SPersistence;

[Serializable, SPersistent]
public class Account
{
	[SPersistentField] public long Balance;
	[SPersistentField] public int Id;
	[SPersistentField] public Account Next;
}

[Serializable, SPersistent]
public class Bank
{
	[SPersistentField] public Account [] Accounts;
	[SPersistentField] public long Period;
}

static class RecoveryBench
{
	const long Initial = 1000;

	static Bank Build (int n)
	{
		var b = new Bank { Accounts = new Account [n] };
		for (int i = 0; i < n; i++)
			b.Accounts [i] = new Account { Balance = Initial, Id = i };
		for (int i = 0; i < n; i++)
			b.Accounts [i].Next = b.Accounts [(i + 1) % n];
		return b;
	}

	static Bank Load (string mech, string file, out long ns)
	{
		var sw = Stopwatch.StartNew ();
		Bank b = null;
		if (mech == "sp") {
			if (SPC.IsWarmRestart ())
				b = (Bank)SPC.RecvPData (1);
			ns = SPC.GetStats ().RestoreNs;
			return b;
		}
		if (File.Exists (file))
			using (var f = File.OpenRead (file))
				b = (Bank)new BinaryFormatter ().Deserialize (f);
		ns = (long)(sw.ElapsedTicks * (1e9 / Stopwatch.Frequency));
		return b;
	}

	static void Persist (string mech, Bank b, string file, BinaryFormatter bf)
	{
		if (mech == "sp") {
			SPC.SendPData ();
			return;
		}
		string tmp = file + ".tmp";
		using (var f = new FileStream (tmp, FileMode.Create)) {
			bf.Serialize (f, b);
			f.Flush (true);
		}
		// Renamed over the old file: a kill leaves one whole file or the other.
		if (File.Exists (file))
			File.Replace (tmp, file, null);
		else
			File.Move (tmp, file);
	}

	static int Serve (string mech, int n, string file)
	{
		long ns;
		Bank b = Load (mech, file, out ns);
		bool warm = b != null;
		if (!warm)
			b = Build (n);
		if (mech == "sp" && !warm)
			SPC.AddRoot (b);
		Console.WriteLine ("start {0} {1}", warm ? "warm" : "cold", ns);
		var bf = new BinaryFormatter ();
		var rng = new Random ();
		for (long k = 1; ; k++) {
			Account from = b.Accounts [rng.Next (n)], to = from.Next;
			long amount = rng.Next (10);
			from.Balance -= amount;
			to.Balance += amount;
			b.Period++;
			Persist (mech, b, file, bf);
			if (k == 1) {
				// Served once the first period is durable (incremental mode: its cycle written and committed).
				if (mech == "sp")
					SPC.WaitPersisted ();
				Console.WriteLine ("served {0}", b.Period);
			}
			System.Threading.Thread.Sleep (1);
		}
	}

	static int Check (string mech, int n, string file)
	{
		long ns;
		Bank b = Load (mech, file, out ns);
		if (b == null || b.Accounts.Length != n) {
			Console.Error.WriteLine ("CHECK FAILED: no state or {0} accounts", b == null ? 0 : b.Accounts.Length);
			return 1;
		}
		long total = 0;
		foreach (Account a in b.Accounts)
			total += a.Balance;
		if (total != Initial * n) {
			Console.Error.WriteLine ("CHECK FAILED: the total is {0}, not {1}: a torn state", total, Initial * n);
			return 1;
		}
		return 0;
	}

	static int Commit (int n, int periods)
	{
		Bank b = Build (n);
		SPC.AddRoot (b);
		var rng = new Random ();
		for (int k = 0; k < periods; k++) {
			Account from = b.Accounts [rng.Next (n)];
			from.Balance--;
			from.Next.Balance++;
			b.Period++;
			var sw = Stopwatch.StartNew ();
			SPC.SendPData ();
			long ns = (long)(sw.ElapsedTicks * (1e9 / Stopwatch.Frequency));
			Console.WriteLine ("commit {0} {1}", ns, SPC.GetStats ().LastBytes);
		}
		return 0;
	}

	static int Main (string [] args)
	{
		string mech = args [1];
		int n = int.Parse (args [2]);
		if (args [0] == "serve")
			return Serve (mech, n, args [3]);
		if (args [0] == "check")
			return Check (mech, n, args [3]);
		if (args [0] == "commit")
			return Commit (n, int.Parse (args [3]));
		return 2;
	}
}
