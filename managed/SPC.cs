// SPC: the whole persistence API a program needs (paper section 3.1, Listing 2).
// Every method is a thin wrapper over an internal call into the runtime
// (mono/metadata/sp-mono.c); the native side reports failure as a message,
// which becomes an SPersistenceException here.
using System;
using System.Runtime.CompilerServices;

namespace SPersistence
{
	/// <summary>Schedulable persistence: roots, snapshots and warm restart.</summary>
	public static class SPC
	{
		/// <summary>
		/// Registers a persistent root and returns its id. Ids are 1, 2, 3, ... in
		/// registration order, so a program that registers its roots in the same
		/// order gets the same ids after a restart. On a warm restart the roots of
		/// the snapshot are registered already, with their ids.
		/// </summary>
		public static int AddRoot (object root)
		{
			if (root == null)
				throw new ArgumentNullException ("root");
			int id;
			Check (sp_add_root (root, out id));
			return id;
		}

		/// <summary>Stops persisting root <paramref name="id"/>.</summary>
		public static void RemoveRoot (int id)
		{
			Check (sp_remove_root (id));
		}

		/// <summary>
		/// Persists everything reachable from the roots through persistent fields,
		/// as it is at the instant of the call. In stop-the-world mode (the
		/// default) it returns once the snapshot is durable; with
		/// <c>--sp-mode=incremental</c> it returns at once and the SP task writes
		/// the snapshot in increments while the program runs. A call while the
		/// previous cycle is still being written first waits until it is
		/// (counted in <see cref="SPStats.SendPDataWaits"/>): every snapshot is
		/// the state at a call's instant.
		/// </summary>
		public static void SendPData ()
		{
			Check (sp_send ());
		}

		/// <summary>
		/// Blocks until the snapshot of the latest <see cref="SendPData"/> is
		/// durable; throws if its cycle failed. Returns at once in stop-the-world mode.
		/// </summary>
		public static void WaitPersisted ()
		{
			Check (sp_wait ());
		}

		/// <summary>The object registered as root <paramref name="id"/> (after a warm restart, the restored one).</summary>
		public static object RecvPData (int id)
		{
			object root;
			Check (sp_recv (id, out root));
			return root;
		}

		/// <summary>True when this run started from a persisted snapshot.</summary>
		public static bool IsWarmRestart ()
		{
			bool warm;
			Check (sp_is_warm (out warm));
			return warm;
		}

		/// <summary>
		/// False once another process committed to this program's store since this one
		/// last did: on a replicated store (<c>--sp-store=nats://...</c>), a standby took
		/// over. This process is then no longer the primary: its commits fail from then on
		/// (SendPData or WaitPersisted throw, saying so), and it should stop acting on its
		/// state. True otherwise, and always for a file or pmem store (one process at a
		/// time holds those).
		/// </summary>
		public static bool IsPrimary ()
		{
			bool primary;
			Check (sp_is_primary (out primary));
			return primary;
		}

		/// <summary>Figures of the latest snapshot and of the restore.</summary>
		public static SPStats GetStats ()
		{
			var v = new long [SPStats.Count];
			Check (sp_stats (v));
			return new SPStats (v);
		}

		/// <summary>Buckets of <see cref="GetPauseHistogram"/>: 0 to 9,999 us, and 10 ms or more.</summary>
		public const int PauseHistogramBuckets = 10001;

		/// <summary>
		/// The increments of the SP task (incremental mode) since the program
		/// started or the histogram was last reset, by pause: element i counts
		/// the increments that took at least i and less than i + 1
		/// microseconds; the last element counts those of 10 ms or more.
		/// <paramref name="reset"/> empties it after reading.
		/// </summary>
		public static long [] GetPauseHistogram (bool reset)
		{
			var v = new long [PauseHistogramBuckets];
			Check (sp_pause_histogram (v, reset));
			return v;
		}

		static void Check (string error)
		{
			if (error != null)
				throw new SPersistenceException (error);
			if (!upgradesTaken)
				RunUpgrades ();
		}

		static bool upgradesTaken;

		/*
		 * After the restore, which the first SPC call made: the upgrade hooks of
		 * the restored objects whose class changed (ISPersistentUpgrade), once.
		 * The runtime hands them over once (sp_take_upgrades): five entries an
		 * object, the object, its former class name, what changed, the old
		 * fields' names and their values.
		 */
		static void RunUpgrades ()
		{
			object [] pending;
			upgradesTaken = true;
			string error = sp_take_upgrades (out pending);
			if (error != null)
				throw new SPersistenceException (error);
			Exception first = null;
			string firstClass = null;
			for (int i = 0; pending != null && i + 4 < pending.Length; i += 5) {
				var context = new SPUpgradeContext ((string)pending [i + 1], (string)pending [i + 2],
								   (string [])pending [i + 3], (object [])pending [i + 4]);
				try {
					((ISPersistentUpgrade)pending [i]).OnRestored (context);
				} catch (Exception e) {
					if (first == null) {
						first = e;
						firstClass = pending [i].GetType ().FullName;
					}
				}
			}
			if (first != null)
				throw new SPersistenceException ("the upgrade of a restored " + firstClass + " failed (OnRestored threw): " +
								 first.Message, first);
		}

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_add_root (object root, out int id);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_remove_root (int id);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_send ();

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_wait ();

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_recv (int id, out object root);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_is_warm (out bool warm);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_is_primary (out bool primary);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_stats (long [] values);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_pause_histogram (long [] values, bool reset);

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_take_upgrades (out object [] pending);
	}

	/// <summary>Measurements for benchmarks; not needed by programs.</summary>
	public static class SPDiagnostics
	{
		/// <summary>
		/// Decodes the newest snapshot of the store again into new objects (which
		/// are dropped) and returns how long the decode took, in nanoseconds:
		/// validate, construct, fix up, as a warm restore would.
		/// </summary>
		public static long TimeDecodeOfNewest ()
		{
			long ns;
			string error = sp_bench_decode (out ns);
			if (error != null)
				throw new SPersistenceException (error);
			return ns;
		}

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern string sp_bench_decode (out long ns);

		/// <summary>
		/// Where instances of <paramref name="type"/> keep their identity slot
		/// (the 4 bytes spmono adds to an [SPersistent] class of automatic layout,
		/// see docs/FORMAT.md), as an offset from the object's start; 0 when they
		/// have none and the serializer finds their identity in its LID map.
		/// </summary>
		public static int IdentitySlotOf (Type type)
		{
			if (type == null)
				throw new ArgumentNullException ("type");
			return sp_identity_slot (type);
		}

		[MethodImpl (MethodImplOptions.InternalCall)]
		static extern int sp_identity_slot (Type type);
	}

	/// <summary>Persistence statistics (times in nanoseconds).</summary>
	public sealed class SPStats
	{
		internal const int Count = 34;

		/// <summary>Snapshots committed by this process.</summary>
		public readonly long Snapshots;
		public readonly long LastSequence, LastObjects, LastBytes, LastSerializeNs, LastCommitNs;
		/// <summary>SendPData calls that failed.</summary>
		public readonly long Failures;
		/// <summary>The snapshot this process started from (0: cold start).</summary>
		public readonly long RestoredSequence, RestoredObjects, RestoredBytes;
		/// <summary>Opening the store and restoring, in total.</summary>
		public readonly long RestoreNs;
		/// <summary>Of that, decoding the snapshot from memory: validate, construct, fix up.</summary>
		public readonly long RestoreDecodeNs;
		/// <summary>Incremental mode, the latest cycle written (the rows of the paper's Table 1):
		/// increments, their longest and average pause, the stopped instant at its start
		/// (roots and marking), the cycle's length from start to written, store barrier
		/// calls and the objects they wrote, and the times the SP task waited for the writer.</summary>
		public readonly long CycleIncrements, CycleMaxPauseNs, CycleAvgPauseNs, CycleStartPauseNs, CycleNs;
		public readonly long CycleBarrierCalls, CycleBarrierWrites, CycleWriterWaits;
		/// <summary>Incremental mode, since the start: SendPData calls that had to wait for the
		/// previous cycle to be written before starting theirs, and their total wait.</summary>
		public readonly long SendPDataWaits, SendPDataWaitNs;
		/// <summary>Incremental mode, since the start, with --sp-busy=skip (the default): SendPData
		/// calls made while a cycle was being written, which took no snapshot.</summary>
		public readonly long SendPDataSkips;
		/// <summary>Incremental mode, the latest cycle: the writer task's time (its slices and the
		/// commit), and what the cost model predicted at the cycle's start from the state as the
		/// cycle before saw it (docs/INCREMENTAL.md, "The cost model"): the cycle's length, the
		/// periods it spans, and the bytes; 0 when nothing was known yet.</summary>
		public readonly long CycleWriterNs, PredictedCycleNs, PredictedPeriods, PredictedBytes;
		/// <summary>Incremental mode, since the start: SendPData calls made sooner after the previous
		/// one than the cost model says a cycle of the state takes (the schedulability test; the
		/// first one is also reported on stderr).</summary>
		public readonly long UnschedulableSends;
		/// <summary>Incremental mode, the latest cycle: long arrays of primitives that a store
		/// barrier copied before the store (the rest of the array not written yet, taken outside
		/// the cycle's lock, so that no other thread waits for it), and the bytes copied.</summary>
		public readonly long CycleBarrierCopies, CycleBarrierCopyBytes;
		/// <summary>With --sp-delta=on, since the start: full snapshots written by SendPData (a
		/// chain's first, or a new base when a chain could not go on), chains folded into a new
		/// base by the fold task (off the program's path), and the latest fold's time.</summary>
		public readonly long FullSnapshots, Folds, LastFoldNs;
		/// <summary>With --sp-delta=on, since the start: first stores in a period into objects
		/// without an identity slot (arrays, strings) made while a snapshot was being written,
		/// which were put aside for the next snapshot's instant instead of waiting for it.</summary>
		public readonly long DeltaStoresDeferred;

		internal SPStats (long [] v)
		{
			Snapshots = v [0]; LastSequence = v [1]; LastObjects = v [2]; LastBytes = v [3];
			LastSerializeNs = v [4]; LastCommitNs = v [5]; Failures = v [6];
			RestoredSequence = v [7]; RestoredObjects = v [8]; RestoredBytes = v [9]; RestoreNs = v [10]; RestoreDecodeNs = v [11];
			CycleIncrements = v [12]; CycleMaxPauseNs = v [13]; CycleAvgPauseNs = v [14]; CycleStartPauseNs = v [15];
			CycleNs = v [16]; CycleBarrierCalls = v [17]; CycleBarrierWrites = v [18]; CycleWriterWaits = v [19];
			SendPDataWaits = v [20]; SendPDataWaitNs = v [21]; SendPDataSkips = v [22];
			CycleWriterNs = v [23]; PredictedCycleNs = v [24]; PredictedPeriods = v [25]; PredictedBytes = v [26];
			UnschedulableSends = v [27]; CycleBarrierCopies = v [28]; CycleBarrierCopyBytes = v [29];
			FullSnapshots = v [30]; Folds = v [31]; LastFoldNs = v [32]; DeltaStoresDeferred = v [33];
		}
	}

	/// <summary>A persistence operation failed; the message says what and where.</summary>
	[Serializable]
	public class SPersistenceException : Exception
	{
		public SPersistenceException (string message) : base (message)
		{
		}

		public SPersistenceException (string message, Exception inner) : base (message, inner)
		{
		}
	}
}
