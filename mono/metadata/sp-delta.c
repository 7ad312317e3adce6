/*
 * sp-delta.c: delta snapshots (--sp-delta=on; docs/FORMAT.md, "Deltas";
 * docs/INCREMENTAL.md, "Delta snapshots").  Part of the client
 * (sp-mono-state.h), after sp-cycle.c.
 *
 * A chain is a full snapshot (its base) and deltas, each holding what the
 * program changed since the snapshot before it.  The serializer keeps the
 * LIDs it handed out from one snapshot of a chain to the next (they are the
 * objects' identities in the chain), so a delta needs to know only which of
 * those objects were stored into since the last snapshot:
 *
 *   - the store barrier stays armed between snapshots.  Its slow path
 *     (sp_delta_barrier) finds the object's LID and adds it to the changed
 *     set, once: the thread then remembers the object (sp_unseen's ways) and
 *     its next stores into it stay on the barrier's short path;
 *   - SendPData takes the changed set at one instant for every thread
 *     (sp_delta_take_stopped, with the world stopped: stop-the-world mode's
 *     sp_delta_take, or an incremental cycle's start) and starts a new one;
 *     every thread's remembered objects expire then (the generation of
 *     sp_unseen), so the next store into one adds it again;
 *   - an object with no LID is new: the delta reaches it through a changed
 *     object or a root, and writes it whole;
 *   - the taken set goes to the serializer as a list (sp_delta_give_taken),
 *     which writes many of its objects in LID order, the graph's, as a full
 *     snapshot meets them: a delta costs less than a full snapshot however
 *     much of the state changed, and is taken whenever the chain can go on.
 *
 * A store through a pointer that no object barrier covered is logged
 * (sp-unseen.c, as in an incremental cycle), and the object it fell into is
 * found at the next snapshot's instant, with the world stopped
 * (sp_unseen_objects_logged).  What cannot be attributed to an object makes
 * the next snapshot a full one, never a delta that misses it
 * (sp_delta_force_full): a log that overflowed, native code in flight with
 * arguments it may write when a snapshot is taken, a snapshot that failed
 * (its changed set was consumed).  A full snapshot is also taken
 * first, and whenever the chain's deltas add up to --sp-delta-ratio percent
 * of its base and cannot be folded (sp-fold-task.c): restore time and
 * storage stay proportional to the state.  Incremental mode's delta cycles
 * are at the end of this file.
 *
 * Objects the chain's snapshots named stay in the LID table, and so alive,
 * until the next base: a program that drops many objects keeps them at most
 * that long.
 *
 * Locking: the changed set has its own OS mutex (sp_delta.set_lock), held
 * only around adding a LID, never across a safepoint: so while the world is
 * stopped no thread holds it, and the snapshot's instant takes the set
 * without it.  An object with an identity slot names its LID without a lock
 * (the slot, checked against the LID table), so that a program's stores do
 * not wait for a snapshot being written on another thread.  Others (arrays,
 * strings, collections' innards) are looked up in the serializer's LID map,
 * which needs sp_lock; when SendPData holds it (stop-the-world mode holds
 * it while it serializes, milliseconds to seconds), the object is put aside
 * instead, in a list pinned as a conservative GC root, and looked up at the
 * next snapshot's instant (sp_delta_defer): the store waits for nothing.
 * Only when that list is full does a store wait for the lock.
 *
 * Cost: the first store into an object in a period takes the slow path,
 * about 380 ns at 1,000,000 objects (10,000 such stores: 4.6 ms, against
 * 0.8 ms with no barrier; perf: the misses on the object's header, its LID
 * table entry and its byte of in_changed, and the thunk saving registers).
 * Later stores into it stay on the thunk's short path.
 */

static struct {
	gboolean armed;              /* the barrier is armed between snapshots (after the first SPC call) */
	gboolean chained;            /* sp_ser's LIDs are the chain's: the next snapshot may be a delta */
	gboolean recording;          /* stores into objects with LIDs are recorded: sp_ser's LIDs are the chain's, or the running cycle's */
	gboolean cycle_open;         /* incremental: a cycle runs (from its stopped instant on): the barrier serves it first */
	gboolean cycle_is_delta;     /* ... and it writes a delta */
	uint64_t base_seq;           /* the chain's full snapshot */
	uint64_t prev_seq;           /* its newest snapshot ... */
	uint32_t prev_crc;           /* ... that one's checksum ... */
	uint64_t base_bytes;         /* the base's size, and ... */
	uint64_t delta_bytes;        /* ... its deltas' so far (for --sp-delta-ratio) */
	GArray *bases;               /* the first files of the chains kept (--sp-keep of them: full snapshots, folds), oldest first */
	GArray *changed;             /* LIDs of the chain stored into since the last snapshot */
	guint8 *in_changed;          /* [lid]: in `changed` */
	size_t in_changed_cap;
	GArray *taken;               /* what `changed` held at the last snapshot's instant: that snapshot's changed objects */
	guint8 *in_taken;            /* [lid]: in `taken` (read without a lock by a delta cycle's barriers: never grown during one) */
	size_t in_taken_cap;
	guint taken_cleared;         /* taken's first LIDs whose in_taken marks are cleared already (sp_delta_clear_taken_step) */
	mono_mutex_t set_lock;       /* changed, in_changed */
	gboolean full_due;           /* the next snapshot must be full: why says why */
	char why [SP_ERROR_MAX];
	/* Incremental: the cycles in flight (the running one, and the one committing before it), by seq & 1. */
	struct {
		gboolean delta;              /* a delta (else a full snapshot) */
		uint64_t base;               /* its chain's base */
		uint64_t objects;            /* objects written, once its last one is */
	} flight [2];
	/* Incremental: the last cycle ended keeping its LIDs (the next may be a delta on it) and is not committed yet. */
	gboolean head_pending;
	uint64_t head_seq;
} sp_delta;

/*
 * Objects without an identity slot stored into while sp_lock was held
 * (sp_delta_barrier), their LIDs looked up at the next instant.  A
 * conservative GC root: the objects stay where they are until then.
 * Under set_lock.
 */
#define SP_DELTA_DEFERRED_MAX 4096
static struct {
	MonoObject *objects [SP_DELTA_DEFERRED_MAX];
	guint count;
} sp_delta_deferred;

static gboolean
sp_delta_on (void)
{
	return sp_options.delta;
}

/* The barrier stays armed from the first SPC call on: it records what changes for the next delta. */
static gboolean
sp_delta_armed (void)
{
	return sp_delta.armed;
}

/* Between two snapshots of a chain, the barrier finds what changed (in incremental mode, a running cycle is served first). */
static gboolean
sp_delta_between_snapshots (void)
{
	return sp_delta.armed && !__atomic_load_n (&sp_delta.cycle_open, __ATOMIC_ACQUIRE);
}

/* The next snapshot is full, whatever the chain's length (said once, with --sp-verbose). */
static void
sp_delta_force_full (const char *why)
{
	if (sp_delta.full_due)
		return;
	sp_delta.full_due = TRUE;
	g_strlcpy (sp_delta.why, why, sizeof sp_delta.why);
	if (sp_options.verbose)
		fprintf (stderr, "spmono: the next snapshot will be full: %s\n", why);
}

static void
sp_delta_init_sets (void)
{
	if (sp_delta.changed)
		return;
	sp_delta.changed = g_array_new (FALSE, FALSE, sizeof (guint32));
	sp_delta.taken = g_array_new (FALSE, FALSE, sizeof (guint32));
	sp_delta.bases = g_array_new (FALSE, FALSE, sizeof (guint64));
	mono_os_mutex_init (&sp_delta.set_lock);
	mono_gc_register_root ((char *)sp_delta_deferred.objects, sizeof sp_delta_deferred.objects, MONO_GC_DESCRIPTOR_NULL,
		MONO_ROOT_SOURCE_EXTERNAL, NULL, "spmono: objects stored into while a snapshot was written");
	sp_ser_track_cards (&sp_ser);       /* long arrays: only their changed cards go in a delta */
}

/* At the end of the first SPC call's start (the store open, a chain maybe restored): armed from now on. */
static void
sp_delta_arm (void)
{
	if (!sp_delta_on () || sp_delta.armed)
		return;
	sp_delta_init_sets ();
	sp_unseen_init ();
	sp_delta.armed = TRUE;
	__atomic_store_n (&sp_barrier_active, 1, __ATOMIC_RELEASE);
}

/* Under set_lock (or with the world stopped): LID lid of the chain changed. */
static void
sp_delta_add (uint32_t lid)
{
	if (lid >= sp_delta.in_changed_cap) {
		size_t cap = sp_delta.in_changed_cap ? sp_delta.in_changed_cap : 4096;
		while (cap <= lid)
			cap *= 2;
		guint8 *grown = g_realloc (sp_delta.in_changed, cap);
		memset (grown + sp_delta.in_changed_cap, 0, cap - sp_delta.in_changed_cap);
		sp_delta.in_changed = grown;
		sp_delta.in_changed_cap = cap;
	}
	if (sp_delta.in_changed [lid])
		return;
	sp_delta.in_changed [lid] = SP_SER_DUE;       /* as the serializer reads it when these are taken (sp_ser_set_due) */
	g_array_append_val (sp_delta.changed, lid);
}

/* FALSE when nothing is recorded (no chain yet, or its LIDs are being forgotten). */
static gboolean
sp_delta_add_locking (uint32_t lid)
{
	mono_os_mutex_lock (&sp_delta.set_lock);
	gboolean recording = sp_delta.recording;
	if (recording)
		sp_delta_add (lid);
	mono_os_mutex_unlock (&sp_delta.set_lock);
	return recording;
}

/*
 * The serializer's LIDs are let go (a full snapshot comes next, from new
 * ones): nothing is recorded until a cycle hands them out again, and what
 * was recorded names LIDs that will mean nothing.  Under sp_lock.
 */
static void
sp_delta_forget (void)
{
	if (!sp_delta_on ())
		return;
	mono_os_mutex_lock (&sp_delta.set_lock);
	sp_delta.recording = FALSE;
	sp_delta.chained = FALSE;
	sp_delta.head_pending = FALSE;
	for (guint i = 0; i < sp_delta.changed->len; i++)
		sp_delta.in_changed [g_array_index (sp_delta.changed, guint32, i)] = 0;
	g_array_set_size (sp_delta.changed, 0);
	memset (sp_delta_deferred.objects, 0, sp_delta_deferred.count * sizeof (MonoObject *));
	sp_delta_deferred.count = 0;
	mono_os_mutex_unlock (&sp_delta.set_lock);
}

/*
 * Under sp_lock (or with the world stopped): obj was stored into; remember
 * its LID if the chain has it (an object without one is new since the last
 * snapshot: written whole when reached).  FALSE when there is no chain yet.
 */
static gboolean
sp_delta_note_locked (MonoObject *obj)
{
	if (!sp_delta.recording)
		return FALSE;
	uint32_t lid = sp_ser_lid_if_known (&sp_ser, obj);
	return lid ? sp_delta_add_locking (lid) : TRUE;
}

static void
sp_delta_note_found (MonoObject *obj)
{
	(void)sp_delta_note_locked (obj);
}

/*
 * sp_lock is busy (a snapshot being written): obj, which has no identity
 * slot, is put aside for the next instant to look up (sp_delta_note_deferred).
 * FALSE when nothing is recorded now (no chain) or the list is full: the
 * caller then waits for sp_lock, as before.
 */
static gboolean
sp_delta_defer (MonoObject *obj)
{
	mono_os_mutex_lock (&sp_delta.set_lock);
	gboolean deferred = sp_delta.recording && sp_delta_deferred.count < SP_DELTA_DEFERRED_MAX;
	if (deferred) {
		sp_delta_deferred.objects [sp_delta_deferred.count++] = obj;
		sp_stats [SP_STAT_DELTA_DEFERRED]++;
	}
	mono_os_mutex_unlock (&sp_delta.set_lock);
	return deferred;
}

/* obj has no identity slot: looked up under sp_lock now if it is free, else put aside (waiting only when that fails). */
static gboolean
sp_delta_note_slotless (MonoObject *obj)
{
	if (mono_coop_mutex_trylock (&sp_lock) != 0) {
		if (sp_delta_defer (obj))
			return TRUE;
		mono_coop_mutex_lock (&sp_lock);
	}
	gboolean recorded = sp_delta_note_locked (obj);
	mono_coop_mutex_unlock (&sp_lock);
	return recorded;
}

/* At an instant (the world stopped, sp_lock held): the objects put aside since the last one, to the changed set. */
static void
sp_delta_note_deferred (void)
{
	for (guint i = 0; i < sp_delta_deferred.count; i++) {
		sp_delta_note_found (sp_delta_deferred.objects [i]);
		sp_delta_deferred.objects [i] = NULL;
	}
	sp_delta_deferred.count = 0;
}

/*
 * obj's LID in the chain from its identity slot, without a lock: the slot
 * holds it (0: no slot, or none yet).  A serializer handing out LIDs
 * meanwhile stores the slot first and publishes nobjects after the bind, so
 * a half-made binding reads as none.  `bound`: also only if the LID table
 * binds it to obj (as sp_ser_slot_lid checks); else the slot may be a
 * clone's copy of another object's LID, or one of an earlier chain.
 */
static uint32_t
sp_delta_slot_lid (MonoObject *obj, gboolean bound)
{
	uint32_t slot = sp_client_lid_slot (obj);
	if (!slot)
		return 0;
	uint32_t lid = __atomic_load_n ((uint32_t *)((uint8_t *)obj + slot), __ATOMIC_ACQUIRE) & SP_LID_MAX;
	if (!lid || lid > __atomic_load_n (&sp_ser.nobjects, __ATOMIC_ACQUIRE))
		return 0;
	return !bound || sp_client_lid_object (lid) == obj ? lid : 0;
}

/*
 * The barrier's slow path between snapshots.  The thread remembers obj under
 * the generation read before the lock: if a snapshot took the changed set
 * meanwhile, that generation is stale and the next store comes back here.
 * Before the chain's first snapshot is committed nothing is recorded, and
 * nothing remembered: a store into an object that snapshot has written
 * already must come back here once the chain exists.
 */
static void
sp_delta_barrier (MonoObject *obj)
{
	if (!obj || sp_unseen_object_known (obj))
		return;
	gint32 gen = __atomic_load_n (&sp_unseen.gen, __ATOMIC_ACQUIRE);
	/*
	 * Between snapshots a store only records a LID for the next delta, so
	 * the slot's LID is taken unchecked: the LID table's entry was a cache
	 * miss on every first store, 40% of this path at 1,000,000 objects.  An
	 * object of the chain holds its own LID in its slot (written when it was
	 * bound, and only the serializer writes slots).  Any other value (a
	 * clone's copy, a LID of an earlier chain) makes the object it names
	 * rewritten once for nothing, and obj itself, not in the chain, is
	 * written whole by the next snapshot that reaches it.
	 */
	uint32_t lid = sp_delta_slot_lid (obj, FALSE);
	gboolean recorded;
	if (lid) {
		recorded = sp_delta_add_locking (lid);
	} else {
		recorded = sp_delta_note_slotless (obj);
	}
	if (recorded)
		sp_unseen_object_handled_in (obj, gen);
}

/*
 * Folds fell behind: the chain's deltas past what the fold task has folded
 * (or is folding) passed SP_FOLD_BEHIND times the ratio, so the next
 * snapshot is full.  Said once on stderr (every time with --sp-verbose):
 * the program did nothing wrong, and yet its snapshots cost a whole state
 * again, and in incremental mode a full cycle spans many periods, during
 * which a program that changes much of its state may change most of it,
 * so that the snapshot after it is full too (a 1 kHz loop updating 1,000 of
 * 1,000,000 objects on one CPU then wrote only full snapshots, 680 periods
 * each, and skipped every SendPData between them: session 24).
 */
static void
sp_delta_say_folds_behind (uint64_t beyond)
{
	static gboolean said;
	if (said && !sp_options.verbose)
		return;
	fprintf (stderr, "spmono: warning: the fold task fell behind: the delta chain on snapshot %llu grew %llu bytes past what it "
		 "folded, more than %u times --sp-delta-ratio=%u%% of its base (%llu bytes), so the next snapshot is full; the fold "
		 "task runs at the lowest priority and needs about a fold's time every %u%% of the base in deltas: leave it CPU "
		 "time, or raise --sp-delta-ratio%s\n", (unsigned long long)sp_delta.base_seq, (unsigned long long)beyond,
		 SP_FOLD_BEHIND, sp_options.delta_ratio, (unsigned long long)sp_delta.base_bytes, sp_options.delta_ratio,
		 said ? "" : " (said once; --sp-verbose says it every time)");
	said = TRUE;
}

/*
 * Should the snapshot about to be taken be a delta?  Whenever the chain can
 * go on: not when a full snapshot is due, nor when the chain has grown past
 * --sp-delta-ratio of its base and no fold ends it.  However much of the
 * state changed: a delta writes the changed objects in LID order, the
 * graph's, as a full snapshot does, and each costs less than in a full one
 * (its LID is known).  Session 25, 1,000,000 objects, 632,000 of them
 * changed: stop-the-world 27 ms against 52 for a full snapshot,
 * incremental 30 ms of increments against 80.  (Before, more than half the
 * state changed made a full snapshot, when a delta gave its objects in the
 * order they were stored: and an incremental full cycle long enough for the
 * program to change half its state meanwhile was followed by another, for
 * good.)  Under sp_lock.
 */
static gboolean
sp_delta_next_is_delta (void)
{
	if (!sp_delta_on () || !(sp_delta.chained || sp_delta.head_pending) || sp_delta.full_due)
		return FALSE;
	/* Folding ends a chain's growth off the program's path; a full snapshot only if folds fall behind. */
	if (sp_fold_usable ()) {
		uint64_t beyond = sp_delta.delta_bytes - sp_fold_covered (sp_delta.base_seq);
		if (beyond * 100 < (uint64_t)sp_options.delta_ratio * SP_FOLD_BEHIND * sp_delta.base_bytes)
			return TRUE;
		sp_delta_say_folds_behind (beyond);
		return FALSE;
	}
	return sp_delta.delta_bytes * 100 < (uint64_t)sp_options.delta_ratio * sp_delta.base_bytes;
}

/*
 * The instant of a snapshot, with the world stopped (no thread between a
 * barrier and its store) and sp_lock held: the changed set becomes
 * sp_delta.taken, and a new one begins; every thread's remembered objects
 * expire, and so do their allocation areas (what they allocate from now on
 * is younger than this snapshot: sp-unseen.c).  in_taken says which LIDs
 * were taken, until the next instant (for a delta cycle's barriers: the
 * chain's objects it does not hold need nothing from it).  FALSE when a
 * store through a pointer could not be attributed to an object: a delta
 * taken now would miss it.
 */
static gboolean
sp_delta_take_stopped (void)
{
	sp_delta_note_deferred ();
	gboolean attributed = sp_unseen_objects_logged (sp_delta_note_found);
	/*
	 * What the last snapshot left to clear: nothing, once it ended well (its
	 * hand-over, or stop-the-world's SendPData, cleared them); traced
	 * ("taken-left") when there is, since it costs every thread here.
	 */
	if (sp_delta.taken_cleared < sp_delta.taken->len) {
		uint64_t t0 = sp_mono_monotonic_ns ();
		for (guint i = sp_delta.taken_cleared; i < sp_delta.taken->len; i++)
			sp_delta.in_taken [g_array_index (sp_delta.taken, guint32, i)] = 0;
		sp_trace_run ("taken-left", t0, sp_mono_monotonic_ns ());
	}
	/* The cleared marks become the next set's; the changed set's become the taken ones. */
	guint8 *marks = sp_delta.in_taken;
	size_t cap = sp_delta.in_taken_cap;
	sp_delta.in_taken = sp_delta.in_changed;
	sp_delta.in_taken_cap = sp_delta.in_changed_cap;
	sp_delta.in_changed = marks;
	sp_delta.in_changed_cap = cap;
	GArray *taken = sp_delta.taken;
	sp_delta.taken = sp_delta.changed;
	sp_delta.changed = taken;
	g_array_set_size (sp_delta.changed, 0);
	sp_delta.taken_cleared = 0;
	sp_unseen_clear ();
	sgen_clear_tlabs ();
	return attributed;
}

/*
 * Incremental mode, in the hand-over of a cycle whose barriers are done
 * (its last object written, or it failed; stop-the-world mode: every step
 * once its snapshot is written, sp_delta_clear_taken): clear a step of its taken marks,
 * which the next instant would otherwise clear with the world stopped (280
 * us for 100,000 of them, session 24).  A barrier that read a mark before
 * the cycle closed and finds it gone records its store for the next
 * snapshot, where it belongs.  TRUE: more to clear.
 */
#define SP_DELTA_CLEAR_STEP 16384
static gboolean
sp_delta_clear_taken_step (void)
{
	if (__atomic_load_n (&sp_delta.cycle_open, __ATOMIC_ACQUIRE))
		return FALSE;
	guint len = sp_delta.taken->len, end = MIN (len, sp_delta.taken_cleared + SP_DELTA_CLEAR_STEP);
	for (; sp_delta.taken_cleared < end; sp_delta.taken_cleared++)
		sp_delta.in_taken [g_array_index (sp_delta.taken, guint32, sp_delta.taken_cleared)] = 0;
	return sp_delta.taken_cleared < len;
}

/*
 * Stop-the-world mode, once the delta or full snapshot is written: the
 * taken marks cleared now, by the caller, with the other threads running,
 * not at the next instant with them stopped (100,000 changed of 1,000,000:
 * a thread on the other CPU lost 94-394 us at each instant, session 25,
 * PROBE=1 bench/run-delta.sh).  Between snapshots no barrier reads them.
 */
static void
sp_delta_clear_taken (void)
{
	while (sp_delta_clear_taken_step ())
		;
}

/* Was chain object lid taken at the running delta cycle's instant?  Without a lock (in_taken does not change during a cycle). */
static gboolean
sp_delta_taken (uint32_t lid)
{
	return lid < sp_delta.in_taken_cap && sp_delta.in_taken [lid];
}

/*
 * Stop-the-world mode: the instant of the snapshot, under sp_lock.  Native
 * code running now may write what it was given after this instant, with no
 * barrier: the snapshot after this one is then full.
 */
static void
sp_delta_take (void)
{
	SpStartPriority priority;
	sp_start_stop_world (&priority);
	gboolean unattributed = !sp_delta_take_stopped ();
	gboolean native_busy = sp_native_any_in_flight ();
	sp_start_restart_world (&priority);
	/* Said once the world runs again (--sp-verbose prints it). */
	if (unattributed)
		sp_delta_force_full ("a store through a pointer that no barrier saw, into an object that cannot be found");
	if (native_busy)
		sp_delta_force_full ("native code was running with arguments it may write");
}

/*
 * The delta's header fields: its chain.  On a snapshot whose commit is still
 * pending (incremental mode's pipelined cycles), prev_crc is not known yet:
 * TRUE, and the writer fills it in before it writes the header
 * (sp_writer_patch_prev_crc).  Under sp_lock.
 */
static gboolean
sp_delta_header (SpSnapHeader *h)
{
	if (sp_delta.head_pending) {
		h->base_sequence = sp_delta.flight [sp_delta.head_seq & 1].base;
		h->prev_sequence = sp_delta.head_seq;
		h->prev_crc = 0;
		return TRUE;
	}
	h->base_sequence = sp_delta.base_seq;
	h->prev_sequence = sp_delta.prev_seq;
	h->prev_crc = sp_delta.prev_crc;
	return FALSE;
}

/*
 * Either mode: the delta gets the objects taken at its instant as a list,
 * each fed to the serializer as its steps reach it (or, in incremental
 * mode, as a barrier meets it first): the instant costs nothing per object.
 * Many of them are fed in LID order, found by their marks (sp_ser_set_due):
 * LIDs follow the graph's breadth-first order, which follows allocation
 * order, so the serializer meets them about in address order, as a full
 * snapshot does.  Their marks in in_taken are SP_SER_DUE (1, as the barrier
 * set them), SP_SER_FED once given.  (Session 25, 1,000,000 objects,
 * DeltaBench on tmpfs: stop-the-world sorted the list with qsort, 91 ms for
 * 632,000 changed where a full snapshot took 51; incremental mode fed it in
 * the order stored, 25-31 ms of increments for 95,000 changed, 10 ms in LID
 * order.)
 */
static void
sp_delta_give_taken (void)
{
	sp_ser_set_due (&sp_ser, (const uint32_t *)sp_delta.taken->data, sp_delta.taken->len, sp_delta.in_taken,
			sp_delta.in_taken_cap);
}

/*
 * The store keeps every snapshot from the first file of the oldest of the
 * --sp-keep newest chains on, and every file a fold in progress reads.
 * Under store_lock.
 */
static void
sp_delta_retain (void)
{
	while (sp_delta.bases->len > sp_options.keep)
		g_array_remove_index (sp_delta.bases, 0);
	uint64_t from = sp_delta.bases->len ? g_array_index (sp_delta.bases, guint64, 0) : 0;
	uint64_t folding = sp_fold_reading_from ();
	sp_store->retain_from = folding && folding < from ? folding : from;
}

/* The sequence of the current chain's first file: its base, or the fold that took the base's place. */
static uint64_t
sp_delta_first_file (void)
{
	return g_array_index (sp_delta.bases, guint64, sp_delta.bases->len - 1);
}

/*
 * Under sp_lock and store_lock, at SendPData: a fold that finished since the
 * last one.  Done, on the chain still being written: its folded snapshot is
 * the chain's first file now, its size the base the ratio counts against;
 * it counts as a new chain for --sp-keep (the files before it, which still
 * restore the chain up to the delta before it, go when older chains
 * would).  Failed: said (once, unless --sp-verbose); no more folds on that
 * chain, whose next snapshot is then full (it is past the ratio), and
 * folding resumes on the chain that starts.  Done on a chain a full
 * snapshot ended meanwhile: nothing (its files are retired as that chain's).
 */
static void
sp_delta_take_fold (void)
{
	SpFoldDone d;
	sp_fold_take (&d);
	if (!d.done)
		return;
	if (d.failed) {
		/* The next snapshot is full (the chain is past the ratio); folding resumes on the chain it starts. */
		static gboolean warned;
		if (sp_delta.chained && d.chain == sp_delta.base_seq)
			sp_fold.blocked = TRUE;
		if (!warned || sp_options.verbose)
			fprintf (stderr, "spmono: warning: folding delta chain %llu into snapshot %llu failed (%s); its new base "
				 "will be a full snapshot written by SendPData%s\n", (unsigned long long)d.chain, (unsigned long long)d.done,
				 d.why, warned ? "" : " (later failures are said with --sp-verbose)");
		warned = TRUE;
	} else if (sp_delta.chained && d.chain == sp_delta.base_seq) {
		sp_delta.base_bytes = d.bytes;
		sp_delta.delta_bytes -= d.delta_bytes;
		/* A new base, as a full snapshot is: the chain before it stays restorable while --sp-keep keeps it. */
		g_array_append_val (sp_delta.bases, d.done);
		sp_stats [SP_STAT_FOLDS]++;
		sp_stats [SP_STAT_LAST_FOLD_NS] = (gint64)d.ns;
		if (sp_options.verbose)
			fprintf (stderr, "spmono: chain folded into snapshot %llu (%llu bytes, %u of its %u objects no longer reached) "
				 "in %.1f ms, off the program's path\n", (unsigned long long)d.done, (unsigned long long)d.bytes,
				 d.unreached, d.objects, d.ns / 1e6);
		/* What the program dropped is held by its LIDs until a full snapshot starts a chain anew. */
		if ((uint64_t)d.unreached * 100 > (uint64_t)sp_options.delta_ratio * (d.objects - d.unreached))
			sp_delta_force_full ("the objects the program dropped outgrew --sp-delta-ratio of those it holds: "
					     "a full snapshot lets them go");
	}
	sp_delta_retain ();
}

/*
 * The chain has grown past --sp-delta-ratio of its base: the fold task
 * folds it up to its newest snapshot (when it can, and is not folding
 * already).  Under sp_lock and store_lock.
 */
static void
sp_delta_fold_if_long (void)
{
	if (sp_delta.chained && sp_delta.prev_seq != sp_delta_first_file () && sp_fold_usable () &&
	    sp_delta.delta_bytes * 100 >= (uint64_t)sp_options.delta_ratio * sp_delta.base_bytes)
		sp_fold_request (sp_delta.prev_seq, sp_delta.base_seq, sp_delta_first_file (), sp_delta.delta_bytes);
}

/* The fold task has started: a restored chain already long is folded now, not ended by a full snapshot. */
static void
sp_delta_fold_started (void)
{
	if (!sp_delta_on ())
		return;
	sp_fold_store_lock ();
	sp_delta_fold_if_long ();
	sp_delta_retain ();
	sp_fold_store_unlock ();
}

/* Snapshot seq (a delta or not) is committed: the chain goes on from it.  Under sp_lock and store_lock. */
static void
sp_delta_committed (uint64_t seq, gboolean delta, uint64_t bytes, uint32_t crc)
{
	if (!sp_delta_on ())
		return;
	if (!delta) {
		sp_delta.base_seq = seq;
		sp_delta.base_bytes = bytes;
		sp_delta.delta_bytes = 0;
		/* Incremental: cleared at the full cycle's instant (sp_delta_cycle_stopped): what came after it is the next one's. */
		if (sp_options.mode != SP_MODE_INCREMENTAL)
			sp_delta.full_due = FALSE;
		g_array_append_val (sp_delta.bases, seq);
		sp_stats [SP_STAT_FULL_SNAPSHOTS]++;
		sp_fold.blocked = FALSE;
	} else {
		sp_delta.delta_bytes += bytes;
	}
	/* Stop-the-world: the chain's LIDs from now on.  Incremental: its cycle's, unless it let them go at its end. */
	if (sp_options.mode != SP_MODE_INCREMENTAL)
		sp_delta.recording = TRUE;
	sp_delta.chained = sp_delta.recording;
	sp_delta.prev_seq = seq;
	sp_delta.prev_crc = crc;
	if (delta)
		sp_delta_fold_if_long ();
	sp_delta_retain ();
}

/* A snapshot failed: the changes it took are gone with it, so the next one is full. */
static void
sp_delta_failed (void)
{
	if (sp_delta_on ())
		sp_delta_force_full ("the last snapshot failed");
}

/*
 * After a warm restart: the restored chain's objects (lid -> object in
 * `objects`) become the serializer's, and the next snapshot a delta on the
 * chain.  The restored chain counts as the newest kept; older ones go.
 */
static int
sp_delta_adopt (const SpObjects *objects, const SpChainPart *parts, size_t n, const SpSnapshot *last, SpError *err)
{
	if (!sp_delta_on ())
		return 0;
	uint32_t count = last->trailer.nobjects;
	if (sp_mono_lid_table_grow (count + count / 4 + 1024, err) < 0)
		return -1;
	sp_ser_adopt_begin (&sp_ser);
	for (uint32_t lid = 1; lid <= count; lid++)
		if (sp_ser_adopt (&sp_ser, lid, sp_objects_get (objects, lid), err) < 0)
			return -1;
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += parts [i].size;
	sp_delta.chained = sp_delta.recording = TRUE;
	sp_delta.base_seq = n > 1 ? last->header.base_sequence : last->header.sequence;
	sp_delta.base_bytes = parts [0].size;
	sp_delta.delta_bytes = bytes - parts [0].size;
	sp_delta.prev_seq = last->header.sequence;
	sp_delta.prev_crc = last->trailer.crc;
	sp_delta_init_sets ();
	/* The chain's first file: its base, or the folded snapshot that took a delta's place. */
	uint64_t first = sp_get_le (parts [0].data + 16, 8);
	g_array_set_size (sp_delta.bases, 0);
	g_array_append_val (sp_delta.bases, first);
	sp_delta_retain ();
	return 0;
}

/* ---- incremental mode: delta cycles ------------------------------------------
 *
 * A cycle in delta mode (sp-cycle.c calls these) is a delta or a full
 * snapshot, and either way keeps recording what changes for the next one:
 *
 *   request   the cycle's kind (sp_delta_cycle_kind): a delta when the
 *             serializer still holds the chain's LIDs and the chain allows;
 *             a full snapshot when it holds none; when it holds them but a
 *             full snapshot is due, they are let go first, in the SP task's
 *             increments (that SendPData takes no snapshot, as during a
 *             cycle, unless the last one failed: then it waits, and takes
 *             one).  A delta may start while the snapshot before it is
 *             being committed, when it is on that one (pipelined: the
 *             writer fills that snapshot's checksum into the delta's header
 *             once it is committed, and never writes the delta if it is
 *             not; sp_writer_patch_prev_crc); a full snapshot waits for the
 *             commit before it.
 *   instant   with the world stopped (sp_delta_cycle_stopped): the changed
 *             set is taken and, in a delta, each taken object is due again
 *             (sp_ser_changed); no marking: a delta's objects are the taken
 *             ones and what they and the roots reach that has no LID yet;
 *   during    a store into an object of the snapshot not written yet writes
 *             it first, as in any cycle; every store is recorded for the
 *             next snapshot as between snapshots.  A chain object the delta
 *             did not take, or one written already, needs no lock
 *             (sp_delta_cycle_shortcut);
 *   end       the barrier stays armed; the serializer keeps its LIDs when
 *             the next snapshot may be a delta (sp_delta_keep_after_cycle),
 *             else they are forgotten as after any cycle;
 *   commit    the chain goes on from the snapshot (sp_delta_cycle_committed).
 */

/* Under sp_lock, the cycle before committed (or failed): what the next cycle is. */
static SpDeltaCycleKind
sp_delta_cycle_kind (void)
{
	sp_fold_sync ();
	sp_fold_store_lock ();
	sp_delta_take_fold ();
	/* A store log that overflowed cannot be attributed at the instant: known now, the cycle is full. */
	if (sp_unseen.log.overflowed)
		sp_delta_force_full ("more stores through pointers than the log holds, which no barrier saw");
	gboolean delta = sp_delta_next_is_delta ();
	sp_fold_store_unlock ();
	if (delta)
		return SP_DELTA_CYCLE_DELTA;
	return sp_ser.clean || !sp_ser.nobjects ? SP_DELTA_CYCLE_FULL : SP_DELTA_CYCLE_FORGET_FIRST;
}

/*
 * A cycle's instant, with the world stopped (and its roots registered):
 * the changed set taken; in a delta, each taken object is due again.
 * FALSE: a delta that cannot hold all that changed (a logged store could
 * not be attributed); the cycle must fail, and the next be full.
 */
static gboolean
sp_delta_cycle_stopped (gboolean delta, SpError *err)
{
	/* A full snapshot answers why it was due; what the instant finds (stores in flight) is the next one's. */
	if (!delta)
		sp_delta.full_due = FALSE;
	gboolean attributed = sp_delta_take_stopped ();
	/*
	 * The taken objects go to the serializer as a list (sp_delta_give_taken).
	 * Given one by one here, with the world stopped, they took 1.1-1.4 ms
	 * for 100,000 changed objects of 1,000,000 and 2.5-3.0 ms for 400,000
	 * (session 24, SPMONO_TRACE), past any --sp-pause.
	 */
	if (delta)
		sp_delta_give_taken ();
	sp_delta.recording = TRUE;
	sp_delta.cycle_is_delta = delta;
	__atomic_store_n (&sp_delta.cycle_open, TRUE, __ATOMIC_RELEASE);
	if (delta && !attributed)
		sp_error_set (err, "a store through a pointer that no barrier saw fell where no object could be found: "
			      "this delta could miss it, so it is not committed, and the next snapshot is full");
	return !delta || attributed;
}

/* The cycle's last object is written, or it failed: the barrier goes back to finding what changes between snapshots. */
static void
sp_delta_cycle_closed (gboolean failed)
{
	__atomic_store_n (&sp_delta.cycle_open, FALSE, __ATOMIC_RELEASE);
	if (failed) {
		sp_delta_forget ();
		sp_delta_failed ();
	}
}

/*
 * At a cycle's end, under sp_lock: may the next snapshot be a delta on this
 * one?  Then the serializer keeps its LIDs.  Not when a full one is due
 * already (letting the LIDs go here, in the hand-over, rather than at the
 * next SendPData, which would skip it).
 */
static gboolean
sp_delta_keep_after_cycle (uint64_t seq)
{
	sp_delta.flight [seq & 1].objects = sp_ser.objects_written;
	/*
	 * A barrier met objects it could not write (holding something that
	 * cannot be persisted; the snapshot did not reach them): the snapshot
	 * holds placeholders for them, which a chain must not build on.
	 */
	if (sp_ser.npoison)
		sp_delta_force_full ("a barrier met objects that could not be written (they held what cannot be persisted)");
	gboolean keep = !sp_delta.full_due;
	if (!keep)
		sp_delta_forget ();
	/* The next cycle may be a delta on this one before its commit (sp_cycle_request: pipelined). */
	sp_delta.head_pending = keep;
	sp_delta.head_seq = seq;
	return keep;
}

/* Cycle seq has started (its instant is past): a delta on `base`, or a full snapshot (base: seq). */
static void
sp_delta_cycle_started (uint64_t seq, gboolean delta, uint64_t base)
{
	sp_delta.flight [seq & 1].delta = delta;
	sp_delta.flight [seq & 1].base = base;
	sp_delta.flight [seq & 1].objects = 0;
}

/*
 * Under sp_lock: may a delta start now on the cycle before, whose commit is
 * pending?  Decided without store_lock, which the writer holds while it
 * commits (taking it here made SendPData wait for the commit: 5-58 of 5,000
 * periods of a 1 kHz loop missed on tmpfs).  So the folds' state is not looked at
 * (sp_delta_cycle_kind does, at the next SendPData after a commit): a chain
 * whose folds fell behind gets its full snapshot a cycle later.
 */
static gboolean
sp_delta_may_pipeline (uint64_t pending_seq)
{
	return sp_delta.head_pending && sp_delta.head_seq == pending_seq && !sp_delta.full_due && sp_delta_on () &&
	       !sp_unseen.log.overflowed;
}

/* Snapshot seq of a delta-mode cycle failed: the next is full (and nothing is a delta on it). */
static void
sp_delta_cycle_failed (uint64_t seq)
{
	if (sp_delta.head_pending && sp_delta.head_seq == seq)
		sp_delta.head_pending = FALSE;
	sp_delta_failed ();
}

/*
 * The barrier in a delta-mode cycle, before it takes sp_lock: what needs
 * nothing from this snapshot.  An object of the chain the delta did not
 * take (unchanged since the last snapshot), or one new in this delta and
 * written already (its slot says so), is only recorded for the next; a
 * young object (allocated since the instant) or one of a class that is
 * never persisted needs nothing.  TRUE: handled, and remembered under
 * generation gen.
 */
static gboolean
sp_delta_cycle_shortcut (MonoObject *obj, gint32 gen)
{
	/* Checked against the LID table: a clone taken for its original would skip a copy this snapshot needs (test_identity "late"). */
	uint32_t lid = sp_delta_slot_lid (obj, TRUE);
	if (lid) {
		uint32_t prior = __atomic_load_n (&sp_ser.prior, __ATOMIC_ACQUIRE);
		if (lid <= prior ? sp_delta_taken (lid) : !sp_ser_written_hint (&sp_ser, obj))
			return FALSE;
		if (sp_delta_add_locking (lid))
			sp_unseen_object_handled_in (obj, gen);
		return TRUE;
	}
	if (!sp_mono_class_known_unpersistable (mono_object_class (obj)) &&
	    !sp_unseen_young ((uintptr_t)obj, (uintptr_t)obj + 1))
		return FALSE;
	sp_unseen_object_handled_in (obj, gen);
	return TRUE;
}

/* Snapshot seq of a delta-mode cycle (`bytes` long, its checksum crc) is committed.  Under sp_lock. */
static void
sp_delta_cycle_committed (uint64_t seq, uint64_t bytes, uint32_t crc)
{
	gboolean delta = sp_delta.flight [seq & 1].delta;
	if (sp_delta.head_pending && sp_delta.head_seq == seq)
		sp_delta.head_pending = FALSE;      /* the next delta names its checksum as usual */
	sp_fold_store_lock ();
	sp_delta_committed (seq, delta, bytes, crc);
	sp_fold_store_unlock ();
	sp_fold_retire_later ();
	/* As stop-the-world's SendPData says it. */
	if (sp_options.verbose)
		fprintf (stderr, "spmono: %s %llu: %llu objects, %llu bytes, committed\n", delta ? "delta" : "snapshot",
			 (unsigned long long)seq, (unsigned long long)sp_delta.flight [seq & 1].objects, (unsigned long long)bytes);
}
