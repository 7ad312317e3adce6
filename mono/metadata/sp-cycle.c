/*
 * sp-cycle.c: incremental persistence (--sp-mode=incremental): the cycle, the
 * SP task, the writer task and the store barrier's slow path (paper sections
 * 3.2-3.3 and 4).
 *
 * Part of the client (sp-mono-state.h), whose state it shares: sp_lock, the
 * serializer sp_ser and its buffer sp_out, the store, the roots, the
 * statistics.
 *
 * A cycle, from SendPData to a durable snapshot:
 *
 *   start     (the caller of SendPData) the world is stopped for an instant:
 *             the roots are given their LIDs and sp_barrier_active is set, so
 *             every store after that instant, on any thread, meets the
 *             barrier; stopping the world makes the instant one for all
 *             threads (a thread is never stopped between the barrier's test
 *             and its store: they have no safepoint between them).  The
 *             instant's length does not depend on the graph's size.
 *   marking   the SP task gives every object reachable from the roots its LID,
 *             in increments (paper section 3.2.2).  Meanwhile a store into an
 *             object not written yet writes it first, whether it has a LID or
 *             not (it may be reachable through objects marking has not
 *             reached yet): so marking follows the references of the start,
 *             and objects met only by barriers end up in the snapshot
 *             unreferenced (counted; sp-serialize.h, sp_ser_write_now);
 *   writing   the SP task writes queued objects in increments of at most
 *             --sp-pause, one per --sp-period, released at absolute times;
 *             a store into an object of the snapshot that is not written yet
 *             writes it first (sp_barrier_store), under sp_lock, so exactly one
 *             of them writes each object, with its state at the start;
 *   handing   the finished snapshot's buffer is swapped with the writer task's
 *             (double buffering: the SP task waits, counted, only when the
 *             writer still holds the previous one), and the writer commits
 *             it to the store (write, fsync, rename) outside sp_lock.
 *
 * SendPData during a cycle waits until that cycle is written (counted), then
 * starts its own: every snapshot is the state at a SendPData instant.
 * SPC.WaitPersisted waits until the newest requested snapshot is durable.
 *
 * GC: the SP task is a runtime thread.  During an increment it runs in GC-
 * unsafe mode, so a collection waits at most one increment; between
 * increments it sleeps in GC-safe mode, and objects may move (the LID table is
 * a GC root and the LID map follows the GC epoch).
 */
#include <mono/metadata/threads-types.h>
#include <mono/sgen/sgen-gc.h>
#include <mono/utils/mono-threads-api.h>
#include <mono/utils/mono-threads-coop.h>

#include <pthread.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/resource.h>

/*
 * Objects that need nothing more in the running cycle, for barriers to find
 * without sp_lock (spersist/sp-wset.h).  2^17 slots (1 MiB): about 100,000
 * objects a cycle before adds start finding their 16 probe slots full; the
 * objects not added then just take the lock.
 */
#define SP_WRITTEN_SET_LOG2 17
static SpWrittenSet sp_written;

static volatile gint32 sp_barrier_flag_fallback;
volatile gint32 *sp_barrier_flag = &sp_barrier_flag_fallback;

void
sp_barrier_flag_init (void)
{
#if defined(__x86_64__) && defined(MAP_32BIT)
	void *low = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low != MAP_FAILED && (uintptr_t)low + 4096 <= 0x80000000u)
		sp_barrier_flag = low;
#endif
}

/* Statistics of a cycle (the rows of the paper's Table 1), see SPStats. */
typedef struct SpCycleStats {
	uint64_t increments;
	uint64_t max_pause_ns;
	uint64_t total_pause_ns;
	uint64_t start_pause_ns;     /* the stopped instant at the start (roots) */
	uint64_t marking_ns;         /* from the start until marking was complete */
	uint64_t marking_increments; /* increments that marked (the last may also have written) */
	uint64_t stop_ns;            /* of which stopping the world took */
	uint64_t barrier_calls;      /* slow-path calls while the cycle ran */
	uint64_t barrier_writes;     /* objects the barrier wrote */
	uint64_t writer_waits;       /* times the SP task waited for the writer */
	uint64_t started_ns;
} SpCycleStats;

static struct {
	gboolean task_started;
	gboolean running;            /* a cycle is being written */
	gboolean handing_over;       /* its snapshot goes to the writer, its objects are forgotten: no new cycle yet */
	gboolean exiting;            /* the runtime shuts down: the tasks park (sp_task_park) */
	int parked;                  /* tasks parked */
	uint64_t next_seq;           /* sequence of the next cycle (from the store at start) */
	uint64_t seq;                /* the running cycle's */
	uint64_t requested_seq;      /* newest sequence a SendPData started */
	uint64_t durable_seq;        /* newest committed */
	uint64_t failed_seq;         /* newest that failed */
	char failure [SP_ERROR_MAX];
	SpCycleStats stats;
	MonoCoopCond wake;           /* the SP task: a cycle started */
	MonoCoopCond idle;           /* SendPData: no cycle is running or handing over any more */
	MonoCoopCond durable;        /* WaitPersisted: a snapshot was committed or failed */
} sp_cycle;

/*
 * Every increment since the start (or the last reset), by its pause in whole
 * microseconds; the last bucket counts the pauses that long or longer
 * (SPC.GetPauseHistogram; SPC.PauseHistogramBuckets must match).
 */
#define SP_PAUSE_BUCKETS 10001
static gint64 sp_pause_histogram [SP_PAUSE_BUCKETS];

static struct {
	SpBuf buf;                   /* the writing buffer */
	uint64_t seq;
	gboolean busy;               /* holds a snapshot to commit */
	MonoCoopCond cond;           /* busy changed (under sp_lock) */
} sp_writer;

gboolean
sp_mono_method_needs_barrier (MonoMethod *method)
{
	if (sp_options.mode != SP_MODE_INCREMENTAL || !method)
		return FALSE;
	switch (sp_options.barrier) {
	case SP_BARRIER_MARKING:
		return TRUE;
	case SP_BARRIER_MARKING_V2:
		return sp_mono_is_persistent_class (method->klass) || sp_mono_is_state_writing_library_class (method->klass);
	case SP_BARRIER_ANNOTATING: {
		if (sp_mono_is_state_writing_library_class (method->klass))
			return TRUE;
		ERROR_DECL (error);
		return sp_mono_attrs_have (mono_custom_attrs_from_method_checked (method, error), error, "SPersistentUpdateAttribute");
	}
	}
	return FALSE;
}

gboolean
sp_mono_refuses_aot_code (MonoImage *image, MonoMethod *method, guint32 token)
{
	if (sp_options.mode != SP_MODE_INCREMENTAL || image != mono_defaults.corlib)
		return FALSE;
	if (!method) {
		ERROR_DECL (error);
		method = mono_get_method_checked (image, token, NULL, NULL, error);
		mono_error_cleanup (error);
		if (!method)
			return FALSE;
	}
	return method->wrapper_type == MONO_WRAPPER_NONE && sp_mono_method_needs_barrier (method);
}

gboolean
sp_mono_barriers_everywhere (void)
{
	return sp_options.mode == SP_MODE_INCREMENTAL && sp_options.barrier == SP_BARRIER_MARKING;
}

/*
 * Incremental mode needs threads to stop only at safepoints: a thread stopped
 * between a barrier's test and its store (MONO_THREADS_SUSPEND=preemptive)
 * would store unguarded after the snapshot's instant.
 */
static int
sp_cycle_check_runtime (SpError *err)
{
	if (sp_options.mode == SP_MODE_INCREMENTAL && !mono_threads_are_safepoints_enabled ())
		return sp_error_set (err, "--sp-mode=incremental needs cooperative or hybrid thread suspension "
				     "(MONO_THREADS_SUSPEND=preemptive is set)");
	return 0;
}

/* ---- the priority of the tasks ------------------------------------------ */

/*
 * Name the task (`top -H`, /proc/PID/task/TID/comm: "sp-task", "sp-writer")
 * and give it --sp-priority: SCHED_FIFO at that priority; when that is not
 * permitted, the highest SCHED_FIFO priority RLIMIT_RTPRIO allows, with a
 * warning; when none is, the default policy, with a warning.
 */
static void
sp_task_set_priority (const char *task, const char *thread_name)
{
	mono_native_thread_set_name (mono_native_thread_id_get (), thread_name);
	if (!sp_options.priority)
		return;
	struct sched_param param = { .sched_priority = (int)sp_options.priority };
	int rc = pthread_setschedparam (pthread_self (), SCHED_FIFO, &param);
	if (rc == 0)
		return;
	struct rlimit limit;
	if (getrlimit (RLIMIT_RTPRIO, &limit) == 0 && limit.rlim_cur > 0) {
		param.sched_priority = limit.rlim_cur < sp_options.priority ? (int)limit.rlim_cur : (int)sp_options.priority;
		if (pthread_setschedparam (pthread_self (), SCHED_FIFO, &param) == 0) {
			fprintf (stderr, "spmono: warning: the %s task cannot run with SCHED_FIFO priority %u (%s); "
				 "it runs with SCHED_FIFO priority %d, the highest RLIMIT_RTPRIO allows\n",
				 task, sp_options.priority, strerror (rc), param.sched_priority);
			return;
		}
	}
	fprintf (stderr, "spmono: warning: the %s task cannot run with SCHED_FIFO priority %u (%s); it runs with the default policy "
		 "(give the program CAP_SYS_NICE, or raise RLIMIT_RTPRIO: ulimit -r)\n", task, sp_options.priority, strerror (rc));
}

/* ---- the writer task -------------------------------------------------------- */

/* Under sp_lock: snapshot `seq` (and every request before it) failed; WaitPersisted reports why. */
static void
sp_cycle_record_failure (uint64_t seq, const SpError *err)
{
	sp_cycle.failed_seq = seq;
	g_strlcpy (sp_cycle.failure, err->msg, sizeof sp_cycle.failure);
	sp_stats [SP_STAT_FAILURES]++;
	mono_coop_cond_broadcast (&sp_cycle.durable);
}

/* Under sp_lock: the outcome of the writer's commit of `seq`. */
static void
sp_cycle_committed (uint64_t seq, int rc, const SpError *err, uint64_t commit_ns)
{
	if (rc == 0) {
		sp_cycle.durable_seq = seq;
		sp_stats [SP_STAT_SNAPSHOTS]++;
		sp_stats [SP_STAT_LAST_SEQUENCE] = (gint64)seq;
		sp_stats [SP_STAT_LAST_COMMIT_NS] = (gint64)commit_ns;
		mono_coop_cond_broadcast (&sp_cycle.durable);
	} else {
		sp_cycle_record_failure (seq, err);
	}
}

/*
 * The writer task: commits each snapshot handed to it, outside sp_lock and in
 * GC-safe mode (a collection never waits for an fsync).
 */
/*
 * A task that holds no managed object, on its stack or in handles, can be
 * left out when the world stops, as Mono's idle finalizer is: the writer
 * always, the SP task while it waits (for a cycle, or for its next
 * increment), either when parked.  Otherwise hybrid suspension suspends it
 * with a signal at every stop; measured at 100,000 objects on one CPU, about
 * half of SendPData's starts then took 0.7-2.3 ms to stop the world (none
 * with this).  Leaving the state takes the GC lock, so the task never touches
 * an object while a collection runs.
 */
static void
sp_task_outside_the_world (gboolean outside)
{
	mono_thread_info_set_flags (outside ? MONO_THREAD_INFO_FLAGS_NO_GC : MONO_THREAD_INFO_FLAGS_NONE);
}

/*
 * The program's end.  The runtime frees its per-thread state when it shuts
 * down (mono_cleanup), after which any GC-state transition on a thread it
 * still runs aborts the process ("Cannot enter GC safe region if the thread
 * is not attached").  So when shutdown begins (the profiler's event, before
 * finalizers and cleanup) the SP and writer tasks park for good, outside the
 * world, where they make no more runtime calls.  The end waits for the
 * writer's commit in progress and for the SP task's next check (at most an
 * increment and a period); it does not wait for a running cycle, which is
 * abandoned (WaitPersisted before exiting makes it durable).
 */
static void
sp_task_park (void)
{
	sp_task_outside_the_world (TRUE);
	sp_cycle.parked++;
	mono_coop_cond_broadcast (&sp_cycle.idle);
	mono_coop_mutex_unlock (&sp_lock);
	MONO_ENTER_GC_SAFE;
	for (;;)
		pause ();
	MONO_EXIT_GC_SAFE;
}

static void
sp_cycle_shutdown_begin (MonoProfiler *prof)
{
	(void)prof;
	mono_coop_mutex_lock (&sp_lock);
	if (sp_cycle.task_started) {
		sp_cycle.exiting = TRUE;
		mono_coop_cond_broadcast (&sp_cycle.wake);
		mono_coop_cond_broadcast (&sp_writer.cond);
		while (sp_cycle.parked < 2)
			mono_coop_cond_wait (&sp_cycle.idle, &sp_lock);
	}
	mono_coop_mutex_unlock (&sp_lock);
}

static gsize
sp_writer_main (gpointer arg)
{
	(void)arg;
	sp_task_set_priority ("writer", "sp-writer");
	/*
	 * The writer never touches a managed object (its buffer is native memory),
	 * so the world stops without it, as without an idle finalizer thread.
	 * Otherwise every stop (SendPData's start, every collection) would
	 * suspend it with a signal, which waits until the system call it is in
	 * ends: a write of a whole snapshot, or an fsync to disk.  (The SP task
	 * does the same while it waits.)
	 */
	sp_task_outside_the_world (TRUE);
	mono_coop_mutex_lock (&sp_lock);
	for (;;) {
		while (!sp_writer.busy && !sp_cycle.exiting)
			mono_coop_cond_wait (&sp_writer.cond, &sp_lock);
		if (!sp_writer.busy)
			sp_task_park ();            /* exiting, and nothing handed over to commit */
		uint64_t seq = sp_writer.seq;
		mono_coop_mutex_unlock (&sp_lock);
		SpError err = { 0 };
		uint64_t t0 = sp_mono_monotonic_ns ();
		int rc;
		MONO_ENTER_GC_SAFE;
		/* The checksum reads the whole snapshot: here, not in the SP task's last increment. */
		sp_ser_seal (&sp_writer.buf);
		/* Only this task commits in incremental mode. */
		rc = sp_store_commit (sp_store, sp_writer.buf.data, sp_writer.buf.len, seq, &err);
		MONO_EXIT_GC_SAFE;
		if (rc < 0)
			sp_error_prefix (&err, "snapshot %llu", (unsigned long long)seq);
		mono_coop_mutex_lock (&sp_lock);
		sp_cycle_committed (seq, rc, &err, sp_mono_monotonic_ns () - t0);
		sp_writer.busy = FALSE;
		mono_coop_cond_broadcast (&sp_writer.cond);
	}
	return 0;
}

/* Under sp_lock: swap the finished snapshot into the writing buffer; waits (counted) while the writer holds the previous one. */
static void
sp_writer_hand_over (uint64_t seq)
{
	if (sp_writer.busy) {
		sp_cycle.stats.writer_waits++;
		while (sp_writer.busy)
			mono_coop_cond_wait (&sp_writer.cond, &sp_lock);
	}
	SpBuf full = sp_out;
	sp_out = sp_writer.buf;
	sp_writer.buf = full;
	sp_writer.seq = seq;
	sp_writer.busy = TRUE;
	mono_coop_cond_broadcast (&sp_writer.cond);
}

/* ---- a cycle ---------------------------------------------------------------- */

static void
sp_cycle_fail (SpError *err)
{
	sp_error_prefix (err, "snapshot %llu", (unsigned long long)sp_cycle.seq);
	__atomic_store_n (&sp_barrier_active, 0, __ATOMIC_RELEASE);
	sp_wset_close (&sp_written, sp_client_gc_epoch ());
	sp_unseen_clear ();
	sp_cycle.running = FALSE;
	sp_client_lid_reset ();
	sp_cycle_record_failure (sp_cycle.requested_seq, err);
	mono_coop_cond_broadcast (&sp_cycle.idle);
}

/*
 * Roots with the world stopped, then the barrier armed.  While the world is
 * stopped nothing may allocate (the GC lock is held) nor take a lock a
 * stopped thread may hold (the loader lock: no class map is built): 0, or
 * SP_START_RETRY when the LID table was too small or a class had no map yet
 * (the caller makes room or builds the map, then tries again), or -1.
 */
#define SP_START_RETRY 1
#define SP_START_BARRIERS_WAIT 2

/*
 * Barriers waiting for sp_lock (sp_barrier_store).  When one waits, the SP
 * task ends its increment after the unit in hand and leaves the lock to the
 * program: a store then waits for a unit (microseconds), not for the rest of
 * the increment, and the barriers' writes advance the cycle meanwhile.
 * (Handing the lock over after every unit instead made the SP task and a
 * storing thread take turns object by object, each turn a futex wake-up:
 * slower for both.)  The rest of the period's budget is not lost: the SP task
 * resumes once the barriers are quiet (sp_task_await_quiet).  And no cycle
 * starts while one waits (sp_cycle_start_stopped).
 */
static gint32 sp_lock_waiters;

static int
sp_cycle_start_stopped (SpError *err)
{
	int rc = 0;
	gboolean native_unknown = FALSE;
	uint64_t t0 = sp_mono_monotonic_ns ();
	sgen_gc_lock ();
	sgen_stop_world (0, FALSE);
	sp_cycle.stats.stop_ns = sp_mono_monotonic_ns () - t0;
	/*
	 * A barrier waiting for sp_lock waits in GC-safe mode, so its thread
	 * did not hold up the stop: it came in under the cycle before, and the
	 * code after it trusts barriers that ran then (the JIT drops repeats
	 * and moves loop-invariant ones out of loops, sp-jit.h), which would
	 * not guard this snapshot.  It goes first.  Read with the world stopped:
	 * a barrier not waiting yet is in managed code's GC-unsafe mode, and
	 * counts itself before it waits.
	 */
	if (__atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE)) {
		sgen_restart_world (0, FALSE);
		sgen_gc_unlock ();
		return SP_START_BARRIERS_WAIT;
	}
	sp_lid_table_frozen = TRUE;
	sp_lid_table_needed = 0;
	sp_class_maps_frozen = TRUE;
	sp_class_map_needed = NULL;
	for (guint i = 0; i < sp_roots->len && rc == 0; i++) {
		SpRoot *root = sp_mono_root_at (i);
		rc = sp_ser_root (&sp_ser, root->id, mono_gchandle_get_target_internal (root->handle), err);
	}
	if (rc == 0) {
		sp_wset_open (&sp_written, sp_client_gc_epoch ());
		__atomic_store_n (&sp_barrier_active, 1, __ATOMIC_RELEASE);
		/* What P/Invokes running now write lands after the instant, unseen (sp-unseen.c). */
		native_unknown = !sp_native_log_in_flight ();
	}
	sp_lid_table_frozen = FALSE;
	sp_class_maps_frozen = FALSE;
	sgen_restart_world (0, FALSE);
	sgen_gc_unlock ();
	if (native_unknown)
		fprintf (stderr, "spmono: a thread was in native code with more than %d arguments it may write (or more than %d "
			 "threads made such calls): what they write cannot be checked, so this snapshot will not be committed\n",
			 SP_NATIVE_ARGS, SP_NATIVE_THREADS);
	if (rc < 0)
		sp_client_lid_reset ();
	return rc < 0 && (sp_lid_table_needed || sp_class_map_needed) ? SP_START_RETRY : rc;
}

/* The instant of the snapshot. */
static int
sp_cycle_start (SpError *err)
{
	SpSnapHeader h = { .sequence = sp_cycle.next_seq, .time_ns = sp_mono_now_ns () };
	/* What could allocate (class maps, LID table room) happens before the world stops. */
	for (guint i = 0; i < sp_roots->len; i++) {
		MonoObject *root = mono_gchandle_get_target_internal (sp_mono_root_at (i)->handle);
		if (root && !sp_client_class_of (root, err))
			return sp_error_prefix (err, "root %u", sp_mono_root_at (i)->id);
	}
	/* The last snapshot's size, and some: marking (with the world running) grows the table further when needed. */
	uint32_t room = sp_ser.nobjects + sp_ser.nobjects / 4 + 1024;
	uint64_t t0;
	int rc;
	do {
		sp_ser.whole_objects = FALSE;
		if (sp_mono_lid_table_grow (room, err) < 0 || sp_ser_begin (&sp_ser, &sp_out, &h, err) < 0)
			return -1;
		t0 = sp_mono_monotonic_ns ();
		rc = sp_cycle_start_stopped (err);
		if (rc == SP_START_BARRIERS_WAIT)
			return rc;
		if (sp_lid_table_needed)
			room = sp_lid_table_needed * 2;
		/* A class met for the first time: its map now; the next try finds it (or why it cannot be persisted). */
		if (sp_class_map_needed) {
			SpError ignored = { 0 };
			sp_mono_class_map (sp_class_map_needed, &ignored);
		}
	} while (rc == SP_START_RETRY);
	if (rc < 0)
		return -1;
	sp_cycle.seq = sp_cycle.next_seq++;
	sp_cycle.running = TRUE;
	uint64_t stop_ns = sp_cycle.stats.stop_ns;
	memset (&sp_cycle.stats, 0, sizeof sp_cycle.stats);
	sp_cycle.stats.stop_ns = stop_ns;
	sp_cycle.stats.started_ns = t0;
	sp_cycle.stats.start_pause_ns = sp_mono_monotonic_ns () - t0;
	mono_coop_cond_broadcast (&sp_cycle.wake);
	return 0;
}

static void
sp_cycle_publish_stats (uint64_t end_ns)
{
	const SpCycleStats *c = &sp_cycle.stats;
	sp_stats [SP_STAT_LAST_OBJECTS] = (gint64)sp_ser.objects_written;
	sp_stats [SP_STAT_LAST_BYTES] = (gint64)sp_out.len;
	sp_stats [SP_STAT_LAST_SERIALIZE_NS] = (gint64)(c->total_pause_ns + c->start_pause_ns);
	sp_stats [SP_STAT_CYCLE_INCREMENTS] = (gint64)c->increments;
	sp_stats [SP_STAT_CYCLE_MAX_PAUSE_NS] = (gint64)c->max_pause_ns;
	sp_stats [SP_STAT_CYCLE_AVG_PAUSE_NS] = c->increments ? (gint64)(c->total_pause_ns / c->increments) : 0;
	sp_stats [SP_STAT_CYCLE_START_PAUSE_NS] = (gint64)c->start_pause_ns;
	sp_stats [SP_STAT_CYCLE_NS] = (gint64)(end_ns - c->started_ns);
	sp_stats [SP_STAT_CYCLE_BARRIER_CALLS] = (gint64)c->barrier_calls;
	sp_stats [SP_STAT_CYCLE_BARRIER_WRITES] = (gint64)c->barrier_writes;
	sp_stats [SP_STAT_CYCLE_WRITER_WAITS] = (gint64)c->writer_waits;
	if (sp_options.stats)
		fprintf (stderr, "spmono: cycle %llu: %llu increments (%llu marking, %.3f ms), pause max %.1f us avg %.1f us "
			 "(start %.1f us, of which stopping the world %.1f us), cycle %.3f ms, %llu objects (%llu by barriers, "
			 "%llu barrier calls, %llu unreferenced), %zu bytes, %llu writer waits, %u stores through pointers logged%s\n",
			 (unsigned long long)sp_cycle.seq, (unsigned long long)c->increments,
			 (unsigned long long)c->marking_increments, c->marking_ns / 1e6, c->max_pause_ns / 1e3,
			 c->increments ? c->total_pause_ns / 1e3 / c->increments : 0.0, c->start_pause_ns / 1e3, c->stop_ns / 1e3,
			 (end_ns - c->started_ns) / 1e6, (unsigned long long)sp_ser.objects_written,
			 (unsigned long long)c->barrier_writes, (unsigned long long)c->barrier_calls,
			 (unsigned long long)sp_ser.unreached_written, sp_out.len, (unsigned long long)c->writer_waits,
			 sp_unseen.log.count, sp_unseen.log.overflowed ? " (overflowed)" : "");
}

/*
 * Forget the cycle's objects: the LID table (so the GC may collect them), the
 * LID map and the states.  This costs in proportion to the snapshot, so it
 * runs with sp_lock released and after the last increment: neither an
 * increment nor a barrier (disarmed) waits for it; a SendPData meanwhile
 * waits for it (handing_over), as for the rest of a running cycle.  The LID table is emptied in GC-unsafe mode
 * (it is a GC root) with a safepoint between chunks, the rest in GC-safe mode.
 */
static void
sp_cycle_forget_objects (size_t next_size)
{
	sp_unseen_clear ();
	sp_client_lid_reset ();
	MONO_ENTER_GC_SAFE;
	sp_ser_reset (&sp_ser);
	/* The next snapshot's buffer, as large as this one and some, its pages faulted in now, not in the increments. */
	sp_buf_prepare (&sp_out, next_size);
	MONO_EXIT_GC_SAFE;
}

/* Every object is written: close the snapshot, disarm the barrier, hand it to the writer. */
static void
sp_cycle_finish (void)
{
	SpError err = { 0 };
	if (sp_ser_close (&sp_ser, &err) < 0) {
		sp_cycle_fail (&err);
		return;
	}
	__atomic_store_n (&sp_barrier_active, 0, __ATOMIC_RELEASE);
	sp_wset_close (&sp_written, sp_client_gc_epoch ());
	sp_cycle.running = FALSE;
	sp_cycle.handing_over = TRUE;
	sp_cycle_publish_stats (sp_mono_monotonic_ns ());
	sp_writer_hand_over (sp_cycle.seq);
	size_t next_size = sp_writer.buf.len + sp_writer.buf.len / 8;
	mono_coop_mutex_unlock (&sp_lock);
	sp_cycle_forget_objects (next_size);
	mono_coop_mutex_lock (&sp_lock);
	sp_cycle.handing_over = FALSE;
	mono_coop_cond_broadcast (&sp_cycle.idle);
}

/* One unit of an increment's work: marking until it is complete, then writing. */
static int
sp_cycle_work (SpError *err)
{
	if (sp_ser.mark_done)
		return sp_ser_step (&sp_ser, 8, err);
	int more = sp_ser_mark (&sp_ser, 8, err);
	if (more == 0) {
		sp_cycle.stats.marking_ns = sp_mono_monotonic_ns () - sp_cycle.stats.started_ns;
		return 1;               /* the writing starts */
	}
	return more;
}

/*
 * What a unit of work (sp_cycle_work) takes, by kind: marking, writing
 * objects, writing a piece of a long object.  A moving average of each, so
 * that an increment does not start a unit it has no time left for: its
 * length then overshoots the target by a unit's deviation from its average,
 * not by a whole unit.
 */
typedef enum { SP_UNIT_MARK, SP_UNIT_OBJECTS, SP_UNIT_PIECE, SP_UNIT_KINDS } SpUnitKind;
static uint64_t sp_unit_avg_ns [SP_UNIT_KINDS] = { 2000, 2000, 2000 };

static SpUnitKind
sp_cycle_next_unit (void)
{
	return !sp_ser.mark_done ? SP_UNIT_MARK : sp_ser.partial_lid ? SP_UNIT_PIECE : SP_UNIT_OBJECTS;
}

/* Why an increment ended. */
typedef enum { SP_INCREMENT_BUDGET_USED, SP_INCREMENT_YIELDED, SP_INCREMENT_CYCLE_ENDED } SpIncrementEnd;

/*
 * One increment: mark or write until `budget_ns` is used up, or until a
 * barrier waits for the lock.  Its length goes to *used_ns.
 */
static SpIncrementEnd
sp_cycle_increment (uint64_t budget_ns, uint64_t *used_ns)
{
	/* Back in the world before touching an object (sp_task_outside_the_world): a collection would not wait for us. */
	g_assert (!(mono_atomic_load_i32 ((gint32 *)&mono_thread_info_current ()->flags) & MONO_THREAD_INFO_FLAGS_NO_GC));
	SpError err = { 0 };
	uint64_t t0 = sp_mono_monotonic_ns (), t = t0;
	int more = 1;
	gboolean yielded = FALSE;
	if (!sp_ser.mark_done) {
		sp_cycle.stats.marking_increments++;
		/* Marking hands out LIDs: a chunk of room ahead, allocated here rather than in the middle of a step. */
		if (sp_mono_lid_table_grow (sp_ser.nobjects + SP_LID_CHUNK, &err) < 0)
			more = -1;
		t = sp_mono_monotonic_ns ();
	}
	for (bool first = true; more == 1; first = false) {
		SpUnitKind kind = sp_cycle_next_unit ();
		/* At least one unit an increment, whatever the target: a cycle always progresses. */
		if (!first && t - t0 + sp_unit_avg_ns [kind] > budget_ns)
			break;
		uint64_t u0 = t;
		more = sp_cycle_work (&err);
		t = sp_mono_monotonic_ns ();
		sp_unit_avg_ns [kind] += ((int64_t)(t - u0) - (int64_t)sp_unit_avg_ns [kind]) / 16;
		if (more == 1 && __atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE)) {
			yielded = TRUE;
			break;
		}
	}
	SpCycleStats *c = &sp_cycle.stats;
	sp_pause_histogram [MIN ((t - t0) / 1000, SP_PAUSE_BUCKETS - 1)]++;
	c->increments++;
	c->total_pause_ns += t - t0;
	if (t - t0 > c->max_pause_ns)
		c->max_pause_ns = t - t0;
	*used_ns = t - t0;
	if (more < 0)
		sp_cycle_fail (&err);
	else if (more == 0)
		sp_cycle_finish ();
	return more != 1 ? SP_INCREMENT_CYCLE_ENDED : yielded ? SP_INCREMENT_YIELDED : SP_INCREMENT_BUDGET_USED;
}

/* ---- the SP task ------------------------------------------------------------ */

static void
sp_timespec_add_ns (struct timespec *t, uint64_t ns)
{
	uint64_t total = (uint64_t)t->tv_nsec + ns;
	t->tv_sec += (time_t)(total / 1000000000u);
	t->tv_nsec = (long)(total % 1000000000u);
}

static uint64_t
sp_timespec_ns (const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/*
 * Sleep until the absolute `until` (periodic release without drift): with
 * sp_lock released, GC-safe and outside the world; back under sp_lock and in
 * the world, unless the runtime exits meanwhile (then parks for good; the
 * running cycle is abandoned).
 */
static void
sp_task_sleep_until (const struct timespec *until)
{
	mono_coop_mutex_unlock (&sp_lock);
	sp_task_outside_the_world (TRUE);
	MONO_ENTER_GC_SAFE;
	while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, until, NULL) == EINTR)
		;
	MONO_EXIT_GC_SAFE;
	mono_coop_mutex_lock (&sp_lock);
	if (sp_cycle.exiting)
		sp_task_park ();
	sp_task_outside_the_world (FALSE);
}

/*
 * Resuming after a yield.  An increment that ended because a barrier waited
 * for the lock leaves part of its period's budget unused; the SP task may
 * spend it later in the same period (a deferrable server, in scheduling
 * terms).  The program still has at least period - pause of every period and
 * no run is longer than the target, but a cycle is no longer stretched over
 * an extra period whenever the program stores right after SendPData (the
 * paper's Table 1 workload: otherwise every cycle took two periods).
 *
 * The SP task sleeps in doubling steps from SP_RESUME_STEP_NS and resumes
 * once no barrier has written an object for a whole step (the program is not
 * storing into the snapshot's objects now, so it will not wait), with what
 * is left of the budget.  It gives up when the run could not end at least a
 * target before the next release (so that its runs never come back to back)
 * or less than SP_RESUME_MIN_NS is left.  "No barrier has written" compares
 * the cycle's count of barrier writes before and after the step (both read
 * under sp_lock): a time stamp instead, a clock read in every barrier write,
 * cost a loop rewriting 10,000 objects about 200 us a period.
 */
#define SP_RESUME_STEP_NS 50000
#define SP_RESUME_MIN_NS 10000

/* The latest a resumed run may end: a target before the next release. */
static uint64_t
sp_task_resume_deadline (uint64_t next_release_ns)
{
	return next_release_ns - (uint64_t)sp_options.pause_us * 1000;
}

/* Under sp_lock: the budget of a resumed run in the period ending at `next_release_ns`, 0 for none. */
static uint64_t
sp_task_await_quiet (uint64_t next_release_ns, uint64_t budget_left_ns)
{
	uint64_t deadline = sp_task_resume_deadline (next_release_ns);
	for (uint64_t step = SP_RESUME_STEP_NS; budget_left_ns >= SP_RESUME_MIN_NS; step *= 2) {
		uint64_t wake = sp_mono_monotonic_ns () + step;
		if (wake + SP_RESUME_MIN_NS > deadline)
			return 0;
		struct timespec until = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
		uint64_t writes = sp_cycle.stats.barrier_writes;
		sp_task_sleep_until (&until);
		if (!sp_cycle.running)
			return 0;
		uint64_t now = sp_mono_monotonic_ns ();
		if (now + SP_RESUME_MIN_NS > deadline)
			return 0;
		if (sp_cycle.stats.barrier_writes == writes && !__atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE))
			return MIN (budget_left_ns, deadline - now);
	}
	return 0;
}

/* Under sp_lock: the SP task's work in the period released at `release`: an increment, and resumed runs after yields. */
static void
sp_task_run_period (const struct timespec *release)
{
	uint64_t left = (uint64_t)sp_options.pause_us * 1000;
	uint64_t next_release_ns = sp_timespec_ns (release) + (uint64_t)sp_options.period_us * 1000;
	for (uint64_t run = left; run > 0 && sp_cycle.running; run = sp_task_await_quiet (next_release_ns, left)) {
		uint64_t used;
		if (sp_cycle_increment (run, &used) != SP_INCREMENT_YIELDED)
			return;
		left = left > used ? left - used : 0;
	}
}

static gsize
sp_task_main (gpointer arg)
{
	(void)arg;
	sp_task_set_priority ("SP", "sp-task");
	mono_coop_mutex_lock (&sp_lock);
	for (;;) {
		sp_task_outside_the_world (TRUE);
		while (!sp_cycle.running && !sp_cycle.exiting)
			mono_coop_cond_wait (&sp_cycle.wake, &sp_lock);
		if (sp_cycle.exiting)
			sp_task_park ();
		sp_task_outside_the_world (FALSE);
		struct timespec release;
		clock_gettime (CLOCK_MONOTONIC, &release);
		for (;;) {
			sp_task_run_period (&release);
			if (!sp_cycle.running)
				break;
			sp_timespec_add_ns (&release, (uint64_t)sp_options.period_us * 1000);
			sp_task_sleep_until (&release);
		}
	}
	return 0;
}

/* The SP and writer tasks, the first time a cycle is asked for (under sp_lock). */
static int
sp_tasks_start (SpError *err)
{
	if (sp_cycle.task_started)
		return 0;
	mono_coop_cond_init (&sp_cycle.wake);
	mono_coop_cond_init (&sp_cycle.idle);
	mono_coop_cond_init (&sp_cycle.durable);
	mono_coop_cond_init (&sp_writer.cond);
	sp_buf_init (&sp_writer.buf);
	sp_cycle.next_seq = sp_store_next_sequence (sp_store);
	sp_unseen_init ();
	if (sp_wset_init (&sp_written, SP_WRITTEN_SET_LOG2) < 0)
		return sp_error_set (err, "out of memory for the set of written objects");
	sp_ser.written = &sp_written;
	gpointer mains [2] = { (gpointer)sp_writer_main, (gpointer)sp_task_main };
	for (int i = 0; i < 2; i++) {
		ERROR_DECL (error);
		MonoInternalThread *task = mono_thread_create_internal (mono_get_root_domain (), mains [i], NULL, MONO_THREAD_CREATE_FLAGS_NONE, error);
		/* The program's end does not wait for them (nor abort them): a snapshot not yet durable is not waited for. */
		if (is_ok (error))
			task->flags |= MONO_THREAD_FLAG_DONT_MANAGE;
		if (!is_ok (error)) {
			sp_error_set (err, "cannot start the %s task: %s", i ? "SP" : "writer", mono_error_get_message (error));
			mono_error_cleanup (error);
			return -1;
		}
	}
	sp_cycle.task_started = TRUE;
	return 0;
}

/*
 * SendPData, incremental: start a cycle at this instant.  While the previous
 * cycle is still being written (the program asks faster than its snapshots
 * can be written): by default (--sp-busy=skip) take no snapshot and return
 * at once, counted -- a periodic control loop keeps its deadlines, and the
 * running cycle's snapshot, of an earlier SendPData instant, is the newest;
 * with --sp-busy=wait, wait until that one is written, counted with the
 * time, then start this one.  Either way a snapshot always holds the state
 * of a SendPData instant, never a state the program was in the middle of
 * changing.  The short hand-over after a cycle is written (its objects
 * forgotten) is always waited for.  Under sp_lock.
 */
static int
sp_cycle_request (SpError *err)
{
	if (sp_cycle.exiting)
		return sp_error_set (err, "SendPData: the runtime is shutting down");
	if (sp_tasks_start (err) < 0)
		return -1;
	int rc;
	for (;;) {
		if (sp_cycle.running && !sp_options.busy_wait) {
			sp_stats [SP_STAT_SEND_SKIPS]++;
			return 0;
		}
		if (sp_cycle.running || sp_cycle.handing_over) {
			uint64_t t0 = sp_mono_monotonic_ns ();
			while (sp_cycle.running || sp_cycle.handing_over)
				mono_coop_cond_wait (&sp_cycle.idle, &sp_lock);
			sp_stats [SP_STAT_SEND_WAITS]++;
			sp_stats [SP_STAT_SEND_WAIT_NS] += (gint64)(sp_mono_monotonic_ns () - t0);
		}
		if ((rc = sp_cycle_start (err)) != SP_START_BARRIERS_WAIT)
			break;
		/* sp_lock is a priority-inheritance mutex: unlocking hands it to the waiting barrier. */
		mono_coop_mutex_unlock (&sp_lock);
		sched_yield ();
		mono_coop_mutex_lock (&sp_lock);
	}
	if (rc < 0) {
		sp_stats [SP_STAT_FAILURES]++;
		return sp_error_prefix (err, "SendPData");
	}
	sp_cycle.requested_seq = sp_cycle.seq;
	return 0;
}

/* SPC.WaitPersisted: until the newest requested snapshot is durable; an error if it failed.  Under sp_lock. */
static int
sp_cycle_wait (SpError *err)
{
	if (sp_options.mode != SP_MODE_INCREMENTAL || !sp_cycle.task_started)
		return 0;      /* stop-the-world: SendPData returned once durable */
	uint64_t want = sp_cycle.requested_seq;
	while (sp_cycle.durable_seq < want && sp_cycle.failed_seq < want)
		mono_coop_cond_wait (&sp_cycle.durable, &sp_lock);
	if (sp_cycle.durable_seq < want)
		return sp_error_set (err, "%s", sp_cycle.failure);
	return 0;
}

/* SPC.GetPauseHistogram.  Under sp_lock. */
static void
sp_cycle_pause_histogram (MonoArray *out, gboolean reset)
{
	for (uintptr_t i = 0; i < SP_PAUSE_BUCKETS && i < mono_array_length_internal (out); i++)
		mono_array_set_fast (out, gint64, i, sp_pause_histogram [i]);
	if (reset)
		memset (sp_pause_histogram, 0, sizeof sp_pause_histogram);
}

/* ---- the barrier's slow path ------------------------------------------------- */

void
sp_barrier_store (MonoObject *obj)
{
	/* Handled by this thread in this cycle already (written, or not in the snapshot): nothing to do, no lock. */
	if (!obj || sp_unseen_object_known (obj))
		return;
	/*
	 * Handled by anyone, or allocated by this thread since the cycle started
	 * (not part of the snapshot): no lock either, and the thread remembers it.
	 * The GC epoch is read here with obj in hand: this path has no safepoint,
	 * so obj cannot move in between, and no cycle can end and another start
	 * (that needs the world stopped).
	 */
	if (sp_wset_has (&sp_written, obj, sp_client_gc_epoch ()) || sp_unseen_in_young_object ((uintptr_t)obj, (uintptr_t)obj + 1)) {
		sp_unseen_object_handled (obj);
		return;
	}
	if (mono_coop_mutex_trylock (&sp_lock) != 0) {
		/* The SP task ends its increment after its current unit when someone waits (sp_lock_waiters). */
		__atomic_add_fetch (&sp_lock_waiters, 1, __ATOMIC_ACQ_REL);
		mono_coop_mutex_lock (&sp_lock);
		__atomic_sub_fetch (&sp_lock_waiters, 1, __ATOMIC_RELEASE);
	}
	if (sp_cycle.running) {
		sp_cycle.stats.barrier_calls++;
		SpError err;
		sp_error_clear (&err);   /* not "= { 0 }": zeroing its 512-byte message cost every barrier write */
		int rc = sp_ser_write_now (&sp_ser, obj, &err);
		if (rc > 0)
			sp_cycle.stats.barrier_writes++;
		if (rc < 0) {
			sp_cycle_fail (&err);
		} else {
			sp_wset_add (&sp_written, obj, sp_client_gc_epoch ());
			sp_unseen_object_handled (obj);
		}
	}
	mono_coop_mutex_unlock (&sp_lock);
}
