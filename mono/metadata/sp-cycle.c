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
 *   writing   the SP task writes the objects reachable from the roots,
 *             breadth first, giving each child its LID as it writes the
 *             record that refers to it, in increments of at most --sp-pause,
 *             one per --sp-period, released at absolute times.  Meanwhile a
 *             store into an object not written yet writes it first
 *             (sp_barrier_store), under sp_lock, so exactly one of them writes
 *             each object, with its state at the start, and whether it has a
 *             LID or not (it may be reachable through objects the steps have
 *             not reached yet): so the steps follow the references of the
 *             start, and objects met only by barriers end up in the snapshot
 *             unreferenced (counted; sp-serialize.h, sp_ser_write_now).  This
 *             is the paper's Annotating SP cycle (section 3.2.1), one pass
 *             over the state, about the work of a stop-the-world snapshot.
 *   or, with --sp-passes=2 (the paper's Marking SP, section 3.2.2):
 *   marking   the SP task first gives every object reachable from the roots
 *             its LID, in increments, recording each one's children
 *             (sp-kids.h), while stores write as above; then
 *   writing   the steps write the marked objects, and a store writes only an
 *             object of the snapshot (one with a LID) not written yet: a
 *             program storing into persistable objects outside its state
 *             pays for them only while marking runs, and the SP task does
 *             1.2-1.3x the work (the graph is read twice; docs/INCREMENTAL.md).
 *             A delta never marks (sp-delta.c).
 *   Either way:
 *   streaming all along, each full chunk buffer is swapped with the writer
 *             task's once the writer has drained it (double buffering), and
 *             the writer streams it to the store in slices outside sp_lock;
 *             the snapshot's last chunk ends with the store's commit;
 *   hand-over after the last object: the last chunk to the writer, the
 *             cycle's objects forgotten, in increments (sp_cycle_hand_over_step).
 *
 * The SP task and the writer share one budget a period (sp_budget).
 * SendPData during a cycle takes no snapshot (--sp-busy=skip) or waits for
 * it (wait): every snapshot is the state at a SendPData instant.
 * SPC.WaitPersisted waits until the newest requested snapshot is durable and
 * its cycle over.
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

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
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

/*
 * What a unit of work (sp_cycle_work) takes, by kind: marking, writing
 * objects, writing a piece of a long object.  A moving average of each, so
 * that an increment does not start a unit it has no time left for: its
 * length then overshoots the target by a unit's deviation from its average,
 * not by a whole unit.
 */
typedef enum { SP_UNIT_MARK, SP_UNIT_OBJECTS, SP_UNIT_PIECE, SP_UNIT_FORGET, SP_UNIT_KINDS } SpUnitKind;
static const char *const sp_unit_names [SP_UNIT_KINDS] = { "unit-mark", "unit-objects", "unit-piece", "unit-forget" };
static uint64_t sp_unit_avg_ns [SP_UNIT_KINDS] = { 2000, 2000, 2000, 2000 };

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
	uint64_t barrier_copies;     /* long arrays the barrier copied outside the lock (sp_barrier_copy) */
	uint64_t barrier_copy_bytes;
	uint64_t writer_waits;       /* increments that ended with both buffers full (the writer behind) */
	uint64_t bytes;              /* of the snapshot, handed to the writer so far */
	uint64_t bytes_total;        /* of the whole snapshot, once its last object is written */
	uint64_t units [SP_UNIT_KINDS]; /* units of work done, by kind */
	uint64_t work_cpu_ns;        /* CPU time of the increments and of the budgeted writer's slices (the model's W) */
	SpModelPrediction predicted; /* what the cost model said at the start (cycle_ns 0: nothing known yet) */
	uint64_t release_wait_ns;    /* from the start to the SP task's first release (sp_cycle_release_wait) */
	gboolean published;          /* the statistics went out (once the cycle is over and durable) */
	uint64_t started_ns;
} SpCycleStats;

static struct {
	gboolean task_started;
	gboolean running;            /* a cycle is being written */
	gboolean delta;              /* it writes a delta (--sp-delta: sp-delta.c, "incremental mode") */
	gboolean handing_over;       /* its snapshot goes to the writer, its objects are forgotten: no new cycle yet */
	gboolean final_pending;      /* its last chunk waits in sp_out for the writer's buffer */
	gboolean failed;             /* the cycle handing over failed: no statistics to publish */
	gboolean forgotten;          /* its objects are forgotten: only the last chunk may be left to hand over */
	gboolean exiting;            /* the runtime shuts down: the tasks park (sp_task_park) */
	int parked;                  /* tasks parked */
	uint64_t next_seq;           /* sequence of the next cycle (from the store at start) */
	uint64_t seq;                /* the running cycle's */
	uint64_t requested_seq;      /* newest sequence a SendPData started */
	uint64_t durable_seq;        /* newest committed */
	uint64_t failed_seq;         /* newest that failed */
	uint64_t patch_prev;         /* the running cycle is a delta on this snapshot, not committed at its start: the writer fills in its checksum */
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


/*
 * The writer task and the double buffers (paper Figure 2).  The SP task (and
 * barriers) serialize into sp_out; when it holds a chunk (--sp-buffer bytes)
 * the SP task swaps it with the writer's buffer, if the writer has drained
 * that, and goes on; the writer streams its chunk to the store in slices
 * (sp-stream.h: the checksum runs along, the store's finish is the commit).
 * So persistence holds two chunk buffers, not two snapshots.  When both are
 * full, the SP task ends its increment and leaves the rest of the period's
 * budget to the writer.
 */
static struct {
	SpBuf buf;                   /* the writing buffer: a chunk to drain */
	uint64_t seq;                /* the snapshot it belongs to */
	uint64_t patch_prev;         /* that snapshot's predecessor, whose checksum its header awaits (0: none) */
	uint64_t committed_seq;      /* the last snapshot the writer committed, and its checksum (the writer's own) */
	uint32_t committed_crc;
	gboolean busy;               /* holds a chunk (under sp_lock) */
	gboolean last;               /* the chunk ends its snapshot: commit after it */
	gboolean commit_due;         /* its last byte is written: the commit (sp_stream_finish) is the next run */
	size_t done;                 /* bytes of buf written (the writer's own, outside sp_lock) */
	SpStream stream;             /* the snapshot being streamed to the store (the writer's own) */
	uint64_t abandoned_seq;      /* a snapshot not to write any more (its cycle failed, or its writing did) */
	gboolean retiring;           /* snapshots beyond the newest --sp-keep are left to remove (a slice at a time) */
	SpError failure;             /* why the writer abandoned the running cycle's snapshot, for the SP task to fail it with */
	SpModelDuration slice;       /* a slice's time */
	SpModelDuration retire;      /* a retire slice's time (SP_WRITER_RETIRE_BYTES of an old snapshot removed) */
	SpModelDuration commit;      /* a commit's time, wall (an fsync sleeps, but the kernel's writeback takes the CPU) */
	SpModelDuration writeback;   /* a writeback step's time (sp_stream_writeback: SP_STREAM_WRITEBACK_BYTES queued) */
	uint64_t snapshot_ns;        /* writing time of the snapshot in progress (slices and commit) */
	uint64_t cycle_ns;           /* writing time in the running cycle (SPStats) */
	MonoCoopCond cond;           /* busy changed, or the writer may run (under sp_lock) */
} sp_writer;

/*
 * The persistence server's budget (--sp-writer=budget, the default): in each
 * of the SP task's periods, its increments and the writer's slices together
 * take at most --sp-pause of CPU, and run only within the period's window
 * after the release (sp_task_window_end: the program never loses more than a
 * target at a stretch, and any stretch of a period holds at most about a
 * target and a twentieth of a period of persistence work).  The
 * SP task runs first; the writer runs while the SP task sleeps, on what is
 * left.  When the writer holds a chunk at the release, the SP task leaves
 * it half the budget.  The SP task's wake-up (taking the lock, entering the
 * world) counts too.  Whatever the budget, each makes progress: the SP task
 * runs at least one unit a period, and the writer one slice a period when
 * the SP task stopped for want of it (a target smaller than a unit or a
 * slice is overshot by one, never starved).  Under sp_lock.
 */
static struct {
	uint64_t left_ns;            /* budget left in this period */
	uint64_t deadline_ns;        /* no run may end after this (sp_task_window_end) */
	gboolean sp_running;         /* the SP task runs: the writer waits */
	uint64_t woke_ns;            /* when the SP task was due back from its last sleep (the time since is charged when it sleeps again) */
	uint64_t called_ns;          /* when a starting cycle last called the SP task (atomic: read as it wakes, before the lock) */
	gboolean writer_owed;        /* the SP task could not go on for want of the writer: it gets a slice, whatever is left */
	gboolean commit_turn;        /* the SP task left this period to a commit that fits no period's rest (sp_task_run_period) */
	uint64_t start_ns;           /* a cycle's stopped instant not charged yet: the next period's budget pays for it */
	uint64_t ran_until_ns;       /* when the last run (the SP task's or the writer's) ended */
	uint64_t last_release_ns;    /* the SP task's last period's release (0: none yet) */
} sp_budget;

/* The SP task's sleep through periods kept for the writer only, which a starting cycle cuts short (sp_task_sleep_nudgeable). */
static struct {
	sem_t nudge;
	gboolean nudgeable;          /* the SP task sleeps so (under sp_lock) */
	int schedstat_fd;            /* the SP task's /proc/thread-self/schedstat, -1 if none (sp_task_queued_ns) */
	uint64_t awake_ns;           /* when it last came back from a sleep or an idle wait (for SPMONO_TRACE) */
	uint64_t awake_cpu_ns;       /* its CPU time then */
	uint64_t increments_ns;      /* its increments since then */
} sp_task;
/* Broadcast when a barrier's copy is attached (or its cycle fails): stores into the same array go on. */
static MonoCoopCond sp_copy_attached;
static void sp_task_nudge (void);

gboolean
sp_mono_method_needs_barrier (MonoMethod *method)
{
	if (!sp_mono_guards_stores () || !method)
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

/* The arguments of a P/Invoke get the barrier in every method (sp_jit_emit_call_barrier says why). */
gboolean
sp_mono_native_call_needs_barrier (void)
{
	return sp_mono_guards_stores ();
}

gboolean
sp_mono_refuses_aot_code (MonoImage *image, MonoMethod *method, guint32 token)
{
	if (!sp_mono_guards_stores () || image != mono_defaults.corlib)
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
	return sp_mono_guards_stores () && sp_options.barrier == SP_BARRIER_MARKING;
}

/*
 * Incremental mode needs threads to stop only at safepoints: a thread stopped
 * between a barrier's test and its store (MONO_THREADS_SUSPEND=preemptive)
 * would store unguarded after the snapshot's instant.
 */
static int
sp_cycle_check_runtime (SpError *err)
{
	if (sp_mono_guards_stores () && !mono_threads_are_safepoints_enabled ())
		return sp_error_set (err, "%s needs cooperative or hybrid thread suspension (MONO_THREADS_SUSPEND=preemptive is set)",
				     sp_options.mode == SP_MODE_INCREMENTAL ? "--sp-mode=incremental" : "--sp-delta=on");
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

static gboolean sp_writer_take_chunk (gboolean last);
static void sp_cycle_end (void);
static void sp_cycle_publish_when_done (void);
static void sp_cycle_publish_stats (uint64_t end_ns);
static gboolean sp_task_has_own_work (void);

/* Under sp_lock: the outcome of the writer's commit of `seq`. */
static void
sp_cycle_committed (uint64_t seq, int rc, const SpError *err, uint64_t commit_ns)
{
	if (rc == 0) {
		sp_writer.committed_seq = seq;
		sp_writer.committed_crc = sp_writer.stream.crc;
		if (sp_options.delta)
			sp_delta_cycle_committed (seq, sp_writer.stream.bytes, sp_writer.stream.crc);
		sp_cycle.durable_seq = seq;
		sp_stats [SP_STAT_SNAPSHOTS]++;
		sp_stats [SP_STAT_LAST_SEQUENCE] = (gint64)seq;
		sp_stats [SP_STAT_LAST_COMMIT_NS] = (gint64)commit_ns;
		sp_cycle_publish_when_done ();
		mono_coop_cond_broadcast (&sp_cycle.durable);
	} else {
		sp_delta_cycle_failed (seq);
		sp_cycle_record_failure (seq, err);
	}
}

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
	/*
	 * Safe before it counts itself parked: once counted, the shutdown goes on
	 * to free this thread's runtime state, and a transition after that
	 * aborted (seen on one CPU, the task preempted between the unlock and
	 * the transition).  Hence the plain broadcast: the coop one makes a
	 * transition of its own.
	 */
	MONO_ENTER_GC_SAFE;
	sp_cycle.parked++;
	mono_os_cond_broadcast (&sp_cycle.idle.c);
	mono_coop_mutex_unlock (&sp_lock);
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
	sp_trace_write ();
	mono_coop_mutex_unlock (&sp_lock);
}


/*
 * What a task's switches cost beyond what it can time itself: the SP task's
 * entry into its sleep (after its last clock read), and the writer's
 * switch-in after a wake-up (before its first).  Charged to the budget as
 * allowances, so that the program's loss per period stays within the target
 * with them (measured from the program's side, bench/run-mmu.sh).
 */
#define SP_SLEEP_ENTRY_NS 10000
#define SP_SWITCH_IN_NS 5000

/* Under sp_lock: a run ends (the SP task's, or a slice of the writer's), `ns` of the period's budget spent. */
static void
sp_budget_charge (uint64_t ns)
{
	sp_budget.left_ns = sp_budget.left_ns > ns ? sp_budget.left_ns - ns : 0;
	sp_budget.ran_until_ns = sp_mono_monotonic_ns ();
}

/* Bytes of a slice: small enough for a few tens of microseconds of writing, a piece of the pause. */
#define SP_WRITER_SLICE (64u << 10)

/*
 * Under sp_lock: are commits longer than half a budget, on average?  On disk
 * a commit is an fsync of 1.0-1.1 ms here, during which the kernel's
 * writeback took about 300 us of the program's CPU; run right after a
 * period's own run, it made stretches of one period that lost 770-895 us at
 * a 500 us target (session 22).  Such a commit runs alone: where the budget
 * left fits its high estimate, or else at the start of the next period,
 * which the SP task leaves to it (sp_task_run_period).  A shorter commit (a
 * rename on tmpfs, 30-50 us) is placed as a slice is.  Judged by the
 * average: by the high estimate, one stalled commit on tmpfs made the next
 * tens of commits of a 1 kHz delta loop run in periods of their own, and a
 * delta cycle took two periods (half the SendPData calls skipped).
 */
static gboolean
sp_writer_commit_alone (void)
{
	return sp_writer.commit.avg_ns > (uint64_t)sp_options.pause_us * 1000 / 2;
}

/* Under sp_lock: may the writer write a slice, or commit, now? */
static gboolean
sp_writer_may_run (void)
{
	if (!sp_writer.busy && !sp_writer.retiring)
		return FALSE;
	if (sp_options.writer == SP_WRITER_BACKGROUND || sp_cycle.exiting)
		return TRUE;
	if (sp_budget.sp_running)
		return FALSE;
	/*
	 * The progress slice is for a chunk; removing old snapshots waits for a
	 * budget it fits (a retire slice after a hand-over of 420 us took the
	 * period's run to 580 us at --sp-pause=500), unless it is longer than half
	 * a target, which a period may never leave.  A retire slice's fit is
	 * judged by the high estimate of such runs (sp_model_duration_add): they
	 * vary from 35 to 90 us.  A chunk's slice is judged by its average: the
	 * 64 KiB writes that grow a file on tmpfs stall for 60-230 us about one
	 * time in 36 (the page allocation; writes over the spare file do not),
	 * too rarely for a high estimate to foresee and too often for a margin
	 * of that size (it left the writer a few slices a period and lengthened
	 * first cycles by 10-20%).  docs/INCREMENTAL.md has the figures.  A
	 * commit is judged as a slice, or as sp_writer_commit_alone says; a
	 * writeback step by its high estimate, as a retire slice.
	 */
	gboolean alone = sp_writer.busy && sp_writer.commit_due && sp_writer_commit_alone ();
	if (alone && sp_budget.commit_turn)
		return TRUE;
	uint64_t need = !sp_writer.busy ? sp_writer.retire.high_ns : alone ? sp_writer.commit.high_ns
		: sp_writer.commit_due ? sp_writer.commit.avg_ns
		: sp_writer.stream.writeback_due ? sp_writer.writeback.high_ns : sp_writer.slice.avg_ns;
	if (sp_budget.writer_owed && !alone && (sp_writer.busy || sp_writer.retire.avg_ns > (uint64_t)sp_options.pause_us * 1000 / 2))
		return TRUE;
	return sp_budget.left_ns >= need && sp_mono_monotonic_ns () + need <= sp_budget.deadline_ns;
}

/* Under sp_lock: snapshot seq is not to be written (its cycle failed, or its writing did). */
static void
sp_writer_abandon (uint64_t seq)
{
	sp_writer.abandoned_seq = seq;
	if (sp_writer.busy && sp_writer.seq == seq) {
		sp_writer.busy = FALSE;
		sp_writer.commit_due = FALSE;
		mono_coop_cond_broadcast (&sp_writer.cond);
	}
}

/* Under sp_lock: writing snapshot seq failed (err); the running cycle fails with it, or it is reported now. */
static void
sp_writer_failed (uint64_t seq, SpError *err)
{
	sp_writer_abandon (seq);
	if (sp_cycle.running && sp_cycle.seq == seq) {
		sp_writer.failure = *err;        /* sp_cycle_increment fails the cycle with it (sp_cycle_fail names the snapshot) */
	} else {
		sp_error_prefix (err, "snapshot %llu", (unsigned long long)seq);
		sp_cycle_committed (seq, -1, err, 0);
	}
}

/* A chunk drained: a buffer grown past a few chunks (a barrier wrote a large object into it) shrinks back. */
static void
sp_writer_chunk_done (void)
{
	sp_writer.busy = FALSE;
	sp_writer.commit_due = FALSE;
	sp_writer.done = 0;
	if (sp_writer.buf.cap > 4 * (size_t)sp_options.buffer)
		sp_buf_free (&sp_writer.buf);
	mono_coop_cond_broadcast (&sp_writer.cond);
	/*
	 * The last chunk of a finished cycle waits: take it now rather than at
	 * the SP task's next release.  The cycle ends here if its hand-over has
	 * nothing else left once a step of its taken marks is cleared (with
	 * deltas): a few thousand of them are, here, and the next SendPData
	 * need not wait for the SP task's next release to find the cycle over.
	 * Ended with most of them left, as before session 25, the next instant
	 * cleared them with every thread stopped: 1-2 ms at 632,000 changed of
	 * 1,000,000.
	 */
	if (sp_cycle.final_pending && !sp_cycle.running && sp_writer_take_chunk (TRUE)) {
		sp_cycle.final_pending = FALSE;
		if (sp_cycle.forgotten && !(sp_options.delta && sp_delta_clear_taken_step ()))
			sp_cycle_end ();
	}
}

/*
 * One slice of the chunk in hand, with sp_lock released and in GC-safe mode
 * (a collection never waits for a write or an fsync): the stream begun when
 * the chunk starts a snapshot, the slice appended, the snapshot committed
 * after its last slice.  The last slice of a chunk holds at least the
 * trailer (the checksum field is set in the last one).
 */
/*
 * A delta started while the snapshot before it was still being committed
 * (sp_cycle_request) names that one's checksum, which only its commit
 * gave: filled into the header (the first bytes of the first chunk) before
 * the stream begins, so the checksum of the delta covers it.  A delta whose
 * predecessor was not committed is never written: a chain never holds a
 * delta on a snapshot that is not in it.
 */
static int
sp_writer_patch_prev_crc (uint64_t seq, uint64_t prev, SpError *err)
{
	if (sp_writer.committed_seq != prev)
		return sp_error_set (err, "delta %llu applies to snapshot %llu, which was not committed: it is not written either "
				     "(the next snapshot is full)", (unsigned long long)seq, (unsigned long long)prev);
	if (sp_writer.done != 0 || sp_writer.buf.len < SP_FORMAT_HEADER_MAX)
		return sp_error_set (err, "internal error: delta %llu's header is not at the start of its first chunk", (unsigned long long)seq);
	sp_put_le (sp_writer.buf.data + SP_FORMAT_PREV_CRC_OFFSET, sp_writer.committed_crc, 4);
	return 0;
}

static int
sp_writer_slice (uint64_t seq, uint64_t patch_prev, gboolean last, SpError *err)
{
	size_t n = MIN (SP_WRITER_SLICE, sp_writer.buf.len - sp_writer.done);
	if (sp_writer.buf.len - sp_writer.done - n < SP_FORMAT_TRAILER_SIZE)
		n = sp_writer.buf.len - sp_writer.done;
	gboolean final = last && sp_writer.done + n == sp_writer.buf.len;
	int rc = 0;
	if (sp_writer.stream.sequence != seq) {
		sp_stream_abort (&sp_writer.stream);        /* an abandoned snapshot's */
		sp_writer.snapshot_ns = 0;
		rc = patch_prev ? sp_writer_patch_prev_crc (seq, patch_prev, err) : 0;
		if (rc == 0 && (rc = sp_stream_begin (&sp_writer.stream, sp_store, seq, (uint64_t)sp_stats [SP_STAT_LAST_BYTES], err)) == 0)
			sp_stream_caller_writes_back (&sp_writer.stream);     /* a step of its own (sp_writer_run) */
	}
	if (rc == 0)
		rc = sp_stream_write (&sp_writer.stream, sp_writer.buf.data + sp_writer.done, n, final, err);
	__atomic_store_n (&sp_writer.done, sp_writer.done + n, __ATOMIC_RELAXED);   /* read by sp_writer_pending_ns */
	return rc < 0 ? -1 : final ? 1 : 0;
}

/*
 * Under sp_lock, the writer holding a chunk: what finishing it takes in this
 * period, at the average slice, and the commit if it is one that fits a
 * period's rest (one that does not gets a period of its own).
 */
static uint64_t
sp_writer_pending_ns (void)
{
	size_t left = sp_writer.buf.len - __atomic_load_n (&sp_writer.done, __ATOMIC_RELAXED);
	uint64_t ns = (left + SP_WRITER_SLICE - 1) / SP_WRITER_SLICE * sp_writer.slice.avg_ns;
	if (sp_store_writes_back (sp_store))
		ns += left / SP_STREAM_WRITEBACK_BYTES * sp_writer.writeback.avg_ns;
	if (sp_writer.last && !sp_writer_commit_alone ())
		ns += sp_writer.commit.avg_ns;
	return ns;
}

/*
 * Storage released a slice at a time, as writes are: unlinking a large file
 * on tmpfs frees its pages at once.  A quarter of a MiB is 30-40 us on tmpfs
 * here (1 MiB was 135-196 us: a slice that size, last in a period, made one
 * gap of 623 us at a 500 us target, and held up a cycle's start that came
 * during it, the program's thread waiting behind it to be stopped).
 */
#define SP_WRITER_RETIRE_BYTES (256u << 10)

/* Under sp_lock, with no chunk to write: a slice of removing old snapshots, charged to the budget. */
static void
sp_writer_retire_slice (void)
{
	mono_coop_mutex_unlock (&sp_lock);
	uint64_t t0 = sp_mono_monotonic_ns ();
	int more;
	MONO_ENTER_GC_SAFE;
	more = sp_store_retire (sp_store, SP_WRITER_RETIRE_BYTES);
	MONO_EXIT_GC_SAFE;
	uint64_t t1 = sp_mono_monotonic_ns ();
	mono_coop_mutex_lock (&sp_lock);
	sp_trace_run ("retire", t0, t1);
	uint64_t ns = sp_mono_monotonic_ns () - t0;
	sp_model_duration_add (&sp_writer.retire, ns);
	sp_budget_charge (ns);
	sp_writer.retiring = more;
}

/*
 * Under sp_lock, the writer holding a chunk: its next run, a slice or the
 * commit, with the lock released and in GC-safe mode, charged to the budget
 * (with the switch-in when the writer was asleep before it, `woken`).  A
 * short commit ends the last slice's run; a long one is a run of its own,
 * placed by the budget (sp_writer_commit_alone).  (Every commit a run of its
 * own, a 1 kHz delta loop on tmpfs left 300-750 of 5,000 periods
 * unpersisted against 12-300: a commit that no longer fit after the last
 * slice waited a period, and the next SendPData found its cycle busy.)
 */
static void
sp_writer_run (gboolean woken)
{
	uint64_t seq = sp_writer.seq, patch_prev = sp_writer.patch_prev;
	gboolean last = sp_writer.last, commit_only = sp_writer.commit_due, alone = sp_writer_commit_alone ();
	gboolean committing = FALSE, writeback = !commit_only && sp_writer.stream.writeback_due;
	uint64_t t0 = sp_mono_monotonic_ns (), cpu0 = sp_mono_thread_cpu_ns (), t_slice, cpu;
	mono_coop_mutex_unlock (&sp_lock);
	SpError err = { 0 };
	int rc;
	MONO_ENTER_GC_SAFE;
	/* The fold task retires old snapshots meanwhile (deltas): the store's list of them is shared (sp-fold-task.c). */
	sp_fold_store_lock ();
	if (writeback)
		sp_stream_writeback (&sp_writer.stream);
	rc = commit_only ? 1 : writeback ? 0 : sp_writer_slice (seq, patch_prev, last, &err);
	t_slice = sp_mono_monotonic_ns ();
	if (rc == 1 && (commit_only || !alone)) {
		committing = TRUE;
		rc = sp_stream_finish (&sp_writer.stream, &err) < 0 ? -1 : 1;
	}
	sp_fold_store_unlock ();
	cpu = sp_mono_thread_cpu_ns () - cpu0;
	MONO_EXIT_GC_SAFE;
	uint64_t t1 = sp_mono_monotonic_ns ();
	mono_coop_mutex_lock (&sp_lock);
	/* The run's cost with the lock's hand-offs around it; a slice's and a commit's learned apart. */
	uint64_t ns = sp_mono_monotonic_ns () - t0 + (woken ? SP_SWITCH_IN_NS : 0);
	uint64_t commit_ns = commit_only ? ns : committing ? t1 - t_slice : 0;
	if (!commit_only)
		sp_model_duration_add (writeback ? &sp_writer.writeback : &sp_writer.slice, ns - commit_ns);
	if (committing)
		sp_model_duration_add (&sp_writer.commit, commit_ns);
	sp_budget_charge (ns);
	sp_budget.commit_turn = FALSE;
	sp_writer.snapshot_ns += t1 - t0;
	sp_writer.cycle_ns += t1 - t0;
	if (sp_options.writer == SP_WRITER_BUDGET)
		sp_cycle.stats.work_cpu_ns += cpu;
	sp_trace_run (committing ? "commit" : writeback ? "writeback" : "writer", t0, t1);
	sp_writer.commit_due = rc == 1 && !committing && sp_writer.abandoned_seq != seq;
	if (rc < 0)
		sp_writer_failed (seq, &err);
	else if (rc == 1 && committing) {
		sp_cycle_committed (seq, 0, NULL, sp_writer.snapshot_ns);
		sp_writer.retiring = !sp_fold_retires ();       /* else the fold task's (sp_delta_cycle_committed woke it) */
	}
	if (sp_writer.abandoned_seq == seq || (sp_writer.done == sp_writer.buf.len && !sp_writer.commit_due))
		sp_writer_chunk_done ();
}

/*
 * The writer task: drains each chunk handed to it into the store, a slice at
 * a time, within the budget (sp_budget) unless --sp-writer=background.
 */
static gsize
sp_writer_main (gpointer arg)
{
	(void)arg;
	if (sp_options.writer == SP_WRITER_BUDGET)
		sp_task_set_priority ("writer", "sp-writer");
	else
		mono_native_thread_set_name (mono_native_thread_id_get (), "sp-writer");
	/*
	 * The writer never touches a managed object (its buffer is native memory),
	 * so the world stops without it, as without an idle finalizer thread.
	 * Otherwise every stop (SendPData's start, every collection) would
	 * suspend it with a signal, which waits until the system call it is in
	 * ends: a write, or an fsync to disk.  (The SP task does the same while
	 * it waits.)
	 */
	sp_task_outside_the_world (TRUE);
	mono_coop_mutex_lock (&sp_lock);
	gboolean woken = FALSE;
	for (;;) {
		while (!sp_writer_may_run () && !sp_cycle.exiting) {
			mono_coop_cond_wait (&sp_writer.cond, &sp_lock);
			woken = TRUE;
		}
		/*
		 * The program ends: a snapshot whose every object is written is
		 * still committed (the SP task parks, so the writer fetches its last
		 * chunk itself); one whose cycle was still running is abandoned.
		 */
		if (sp_cycle.exiting && !sp_writer.busy && sp_cycle.final_pending)
			sp_cycle.final_pending = !sp_writer_take_chunk (TRUE);
		gboolean unfinished = sp_cycle.running && sp_writer.seq == sp_cycle.seq;
		if (sp_cycle.exiting && (!sp_writer.busy || unfinished)) {
			sp_stream_abort (&sp_writer.stream);
			sp_task_park ();
		}
		if (!sp_writer.busy) {
			sp_budget.writer_owed = FALSE;
			sp_writer_retire_slice ();
			continue;
		}
		sp_budget.writer_owed = FALSE;
		sp_writer_run (woken);
		woken = FALSE;
	}
	return 0;
}

/*
 * Under sp_lock: the serializing buffer's bytes become the writer's chunk
 * (`last`: they end the running cycle's snapshot), if the writer's buffer is
 * drained; FALSE when it is not (both buffers are full).
 */
static gboolean
sp_writer_take_chunk (gboolean last)
{
	if (sp_writer.busy)
		return FALSE;
	SpBuf full = sp_out;
	sp_ser_handed_on (&sp_ser, full.len);
	sp_out = sp_writer.buf;
	sp_buf_reset (&sp_out);
	sp_writer.buf = full;
	sp_writer.seq = sp_cycle.seq;
	sp_writer.patch_prev = sp_cycle.patch_prev;
	sp_cycle.stats.bytes += full.len;
	sp_writer.last = last;
	sp_writer.done = 0;
	sp_writer.busy = TRUE;
	mono_coop_cond_broadcast (&sp_writer.cond);
	return TRUE;
}

/* ---- the cost model (spersist/sp-model.h) ---------------------------------- */

/* The state as the last cycle saw it (or a restored snapshot): the model's input. */
static SpModelState sp_model_state;
/* The SP task's wake-up, a moving average (sp_task_run_period). */
static uint64_t sp_wake_avg_ns = 20000;
/* k and u as past cycles showed them (sp-model.h). */
static SpModelLearned sp_learned;

static void sp_cycle_model_costs (SpModelCosts *costs);

/* A cycle is over (cycle_ns long): its state is the next prediction's input, and its use of the budget is learned. */
static void
sp_cycle_learn (uint64_t cycle_ns)
{
	const SpCycleStats *c = &sp_cycle.stats;
	sp_model_state = (SpModelState){
		.objects = sp_ser.objects_written, .marks = c->units [SP_UNIT_MARK], .writes = c->units [SP_UNIT_OBJECTS],
		.pieces = c->units [SP_UNIT_PIECE], .forgets = c->units [SP_UNIT_FORGET], .bytes = c->bytes_total,
	};
	/* A process's first cycle grows every table to the state and compiles its code: not a cycle to learn costs from. */
	static gboolean seen_one;
	if (!seen_one) {
		seen_one = TRUE;
		return;
	}
	SpModelCosts costs;
	sp_cycle_model_costs (&costs);
	sp_model_learn (&sp_learned, &sp_model_state, &costs, c->work_cpu_ns, cycle_ns, c->release_wait_ns);
}

/* The measured costs and the options, for the model. */
static void
sp_cycle_model_costs (SpModelCosts *costs)
{
	*costs = (SpModelCosts){
		.mark_ns = sp_unit_avg_ns [SP_UNIT_MARK], .objects_ns = sp_unit_avg_ns [SP_UNIT_OBJECTS],
		.piece_ns = sp_unit_avg_ns [SP_UNIT_PIECE], .forget_ns = sp_unit_avg_ns [SP_UNIT_FORGET],
		.slice_ns = sp_writer.slice.avg_ns, .slice_bytes = SP_WRITER_SLICE, .wake_ns = sp_wake_avg_ns,
		.commit_ns = sp_writer.commit.avg_ns,       /* the average, as sp_writer_commit_alone judges it */
		.writeback_ns = sp_store_writes_back (sp_store) ? sp_writer.writeback.avg_ns : 0,
		.writeback_bytes = SP_STREAM_WRITEBACK_BYTES, .buffer_bytes = sp_options.buffer,
		.use_permille = sp_learned.use_permille, .work_permille = sp_learned.work_permille,
		.latency_ns = sp_learned.latency_ns,
		.pause_ns = (uint64_t)sp_options.pause_us * 1000, .period_ns = (uint64_t)sp_options.period_us * 1000,
	};
	if (sp_options.writer == SP_WRITER_BACKGROUND)     /* the writer is not in the budget, and drains a buffer as soon as it gets it */
		costs->slice_ns = costs->commit_ns = costs->writeback_ns = costs->buffer_bytes = 0;
}

/* Under sp_lock: what a cycle of the state as last seen would take now; cycle_ns 0 when nothing is known yet. */
static void
sp_cycle_predict (SpModelPrediction *out)
{
	memset (out, 0, sizeof *out);
	if (!sp_model_state.objects && sp_stats [SP_STAT_RESTORED_OBJECTS])   /* after a warm restart: the restored snapshot */
		sp_model_state_estimate (&sp_model_state, (uint64_t)sp_stats [SP_STAT_RESTORED_OBJECTS],
					 (uint64_t)sp_stats [SP_STAT_RESTORED_BYTES], sp_options.mark_first);
	if (!sp_model_state.objects)
		return;
	SpModelCosts costs;
	sp_cycle_model_costs (&costs);
	sp_model_predict (&sp_model_state, &costs, out);
}

/*
 * Under sp_lock: whether the cycle being written cannot finish
 * (sp_model_starved), and if so, said once on stderr with what its
 * statistics tell of why.
 */
static gboolean
sp_cycle_starved (uint64_t now)
{
	static gboolean warned;
	const SpCycleStats *c = &sp_cycle.stats;
	uint64_t running = now - c->started_ns;
	uint64_t period = (uint64_t)sp_options.period_us * 1000, pause = (uint64_t)sp_options.pause_us * 1000;
	if (!sp_cycle.running || !sp_model_starved (running, c->work_cpu_ns, period, pause))
		return FALSE;
	if (warned)
		return TRUE;
	warned = TRUE;
	char priority [32], cpu_cause [512];
	if (sp_options.priority)
		snprintf (priority, sizeof priority, "SCHED_FIFO %u", sp_options.priority);
	else
		snprintf (priority, sizeof priority, "the default policy");
	snprintf (cpu_cause, sizeof cpu_cause, "threads above the SP task's priority (%s) on its CPU left it almost none: "
		  "a program that runs there without a pause, or whose stores while a cycle runs take more than its period has "
		  "spare (a store into a persistent object not written yet writes it then), starves it; leave it time in each "
		  "period (a longer --sp-period, a larger --sp-pause, the program on another CPU) or use --sp-mode=stw",
		  priority);
	gboolean waits_for_writer = c->increments && c->writer_waits * 2 > c->increments;
	uint64_t periods = running / period;
	fprintf (stderr, "spmono: warning: the snapshot SendPData started %.1f ms ago cannot finish: in those %llu periods "
		 "of --sp-period=%u its increments and the writer had %.3f ms of the CPU, where --sp-pause=%u gave them %.3f ms; %s. "
		 "Until it ends, SendPData calls %s (said once; SPStats.UnschedulableSends counts them)\n",
		 running / 1e6, (unsigned long long)periods, sp_options.period_us, c->work_cpu_ns / 1e6,
		 sp_options.pause_us, periods * pause / 1e6,
		 waits_for_writer ? "the SP task waited for the writer, whose buffers the store drains slower than the snapshot "
			"fills them: give the writer time (--sp-writer=budget, a faster store) or call SendPData less often" : cpu_cause,
		 sp_options.busy_wait ? "wait for it" : "take no snapshot");
	return TRUE;
}

/*
 * Under sp_lock, at every SendPData: the schedulability test.  A call that
 * comes sooner after the previous one than the model says a cycle of the
 * state takes, while that cycle still runs (a program that waits for each
 * cycle paces itself), is counted (UnschedulableSends).  Once the model's
 * costs are learned, a block of calls with many such (sp_model_verdict_add)
 * is said once on stderr, with what to change.  A call while a cycle runs
 * that cannot finish (sp_cycle_starved) counts too, and that is said at
 * once, learned or not: such a cycle is never learned from.
 */
static void
sp_cycle_check_schedule (void)
{
	static uint64_t last_ns;
	static gboolean warned;
	static SpModelVerdict verdict;
	static SpModelPrediction at_late;        /* the prediction at the block's latest late call */
	static SpModelIntervals intervals;
	static uint64_t typical;
	uint64_t now = sp_mono_monotonic_ns (), interval = now - last_ns;
	SpModelPrediction p;
	gboolean first = last_ns == 0;
	last_ns = now;
	if (!first)
		typical = sp_model_interval_add (&intervals, interval);
	sp_cycle_predict (&p);
	gboolean late = !first && p.cycle_ns && !sp_model_schedulable (&p, MAX (interval, typical)) && sp_task_has_own_work ();
	if (late)
		at_late = p;
	/*
	 * A cycle that cannot finish makes every call late, learned or not (its
	 * own warning), and is asked about at every call: a late call must not
	 * skip it, as the starved cycle's calls are all late once a prediction
	 * exists, and its warning would never be said.
	 */
	gboolean starved = sp_cycle_starved (now);
	if (late || starved)
		sp_stats [SP_STAT_UNSCHEDULABLE_SENDS]++;
	uint32_t late_calls;
	if (warned || sp_learned.cycles < SP_MODEL_CALIBRATION_CYCLES)
		return;
	if (!(late_calls = sp_model_verdict_add (&verdict, late)))
		return;
	p = at_late;
	warned = TRUE;
	fprintf (stderr, "spmono: warning: %d of the last %d SendPData calls came while a cycle ran: a cycle of this "
		 "state (%llu objects, %llu bytes) takes about %.3f ms at --sp-pause=%u --sp-period=%u (%llu periods), "
		 "the last call came %.3f ms after the one before (typically %.3f ms); calls made while a cycle runs %s; give persistence "
		 "more time (--sp-pause, --sp-period) or call SendPData less often (said once; "
		 "SPStats.UnschedulableSends counts them)\n",
		 (int)late_calls, (int)SP_MODEL_VERDICT_CALLS,
		 (unsigned long long)sp_model_state.objects, (unsigned long long)sp_model_state.bytes, p.cycle_ns / 1e6,
		 sp_options.pause_us, sp_options.period_us, (unsigned long long)p.periods, interval / 1e6, typical / 1e6,
		 sp_options.busy_wait ? "wait for them" : "take no snapshot");
}

/* ---- a cycle ---------------------------------------------------------------- */

/*
 * Under sp_lock: the cycle's barrier work is over (its last object written,
 * or it failed).  With deltas the barrier stays armed: it records what
 * changes for the next snapshot.
 */
static void
sp_cycle_disarm (gboolean failed)
{
	if (sp_options.delta)
		sp_delta_cycle_closed (failed);
	else
		__atomic_store_n (&sp_barrier_active, 0, __ATOMIC_RELEASE);
	sp_wset_close (&sp_written, sp_client_gc_epoch ());
}

/*
 * Under sp_lock: the cycle stops here, its snapshot abandoned (the writer
 * drops its chunks and the store its partial snapshot); its objects are
 * forgotten in the SP task's next increments (sp_cycle_forget_step).
 */
static void
sp_cycle_fail (SpError *err)
{
	sp_error_prefix (err, "snapshot %llu", (unsigned long long)sp_cycle.seq);
	sp_cycle_disarm (TRUE);
	sp_cycle.running = FALSE;
	sp_cycle.handing_over = TRUE;
	sp_cycle.final_pending = FALSE;
	sp_cycle.failed = TRUE;
	sp_cycle.forgotten = FALSE;
	sp_writer_abandon (sp_cycle.seq);
	sp_cycle_record_failure (sp_cycle.requested_seq, err);
	mono_coop_cond_broadcast (&sp_copy_attached);     /* stores waiting for a copy go on */
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
 * resumes once the barriers are quiet (sp_task_await_resume).  And no cycle
 * starts while one waits (sp_cycle_start_stopped).
 */
static gint32 sp_lock_waiters;
/*
 * Barriers inside the slow path with sp_lock released: copying a long array
 * before their store (sp_barrier_copy), or waiting for another thread's copy
 * of the array they store into.  Changed under sp_lock.  Like a barrier
 * waiting for the lock, they came in under the running cycle, so no cycle
 * starts while one is inside (sp_cycle_start_stopped).
 */
static gint32 sp_barriers_outside_lock;

/*
 * A start's world stop lasts microseconds (roots only).  Its threads, and the
 * thread stopping them, spin for it rather than sleep (runtime patch 0010):
 * on a virtual machine, waking a thread whose CPU went idle took longer than
 * the stop.  A thread on the other CPU lost 18-21 us at a start (median;
 * 50-105 us at most in 150 starts), and 5-7 us (16-36) with the spin; one on
 * the SP task's CPU 47 us (median) and 11-12 us.  Only where more than one
 * CPU is online; collections still sleep.
 */
#define SP_START_STOP_SPIN_NS 100000

static gint64
sp_start_stop_spin_ns (void)
{
	static long cpus;           /* read once: sysconf reads sysfs, 25 us here */
	if (!cpus)
		cpus = sysconf (_SC_NPROCESSORS_ONLN);
	return cpus > 1 ? SP_START_STOP_SPIN_NS : 0;
}

/*
 * The thread that stops the world for a start holds every thread of the
 * program stopped, real-time ones included.  Under the default policy it can
 * be preempted there by any task woken on its CPU, and the program's
 * real-time threads then wait for that task: bench/run-mmu.sh traced a kernel
 * worker taking 231 us of a 268 us start, and starts of 0.4-2.5 ms now and
 * then where 10-25 us is usual (a priority inversion; a SendPData called from
 * a real-time thread never had it).  On the SP task's CPU the task itself
 * could preempt it so.  So for the instant the caller runs at the SP task's
 * priority (--sp-priority) when its own is lower, and waits for the threads
 * to stop by polling without yielding (runtime patch 0010).  Side by side,
 * 25,000 objects on tmpfs (run-mmu, 10 runs a build on one CPU, 6 on two):
 * the stopped world 10 and 7 us at the median (11 and 10 before), p99 17 and
 * 17 (20 and 22); the caller's start 24 and 18 us (13 and 12): the two
 * system calls, which only a caller below the tasks' priority pays.  Nothing
 * changes without --sp-priority, for a policy it cannot restore
 * (SCHED_DEADLINE), or where the system refuses.
 */
typedef struct {
	gboolean raised;
	int policy;
	struct sched_param param;
} SpStartPriority;

static void
sp_start_priority_raise (SpStartPriority *p)
{
	p->raised = FALSE;
	if (!sp_options.priority || pthread_getschedparam (pthread_self (), &p->policy, &p->param) != 0)
		return;
	gboolean realtime = p->policy == SCHED_FIFO || p->policy == SCHED_RR;
	gboolean fair = p->policy == SCHED_OTHER || p->policy == SCHED_BATCH || p->policy == SCHED_IDLE;
	if (!fair && !(realtime && p->param.sched_priority < (int)sp_options.priority))
		return;
	struct sched_param task = { .sched_priority = (int)sp_options.priority };
	p->raised = pthread_setschedparam (pthread_self (), SCHED_FIFO, &task) == 0;
}

static void
sp_start_priority_restore (const SpStartPriority *p)
{
	if (p->raised)
		pthread_setschedparam (pthread_self (), p->policy, &p->param);
}

/* Stop the world for an instant (a start's, or a stop-the-world delta's), at the SP task's priority at least. */
static void
sp_start_stop_world (SpStartPriority *priority)
{
	sp_start_priority_raise (priority);
	sgen_gc_lock ();
	mono_threads_short_stop_spin_ns = sp_start_stop_spin_ns ();
	sgen_stop_world (0, FALSE);
}

static void
sp_start_restart_world (const SpStartPriority *priority)
{
	sgen_restart_world (0, FALSE);
	mono_threads_short_stop_spin_ns = 0;
	sgen_gc_unlock ();
	sp_start_priority_restore (priority);
}

static int
sp_cycle_start_stopped (SpError *err)
{
	int rc = 0;
	gboolean native_unknown = FALSE;
	SpError doomed = { 0 };
	SpStartPriority priority;
	uint64_t t0 = sp_mono_monotonic_ns ();
	sp_start_stop_world (&priority);
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
	if (__atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE) || sp_barriers_outside_lock) {
		sp_start_restart_world (&priority);
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
	gboolean unattributed = FALSE;
	if (rc == 0) {
		sp_wset_open (&sp_written, sp_client_gc_epoch ());
		__atomic_store_n (&sp_barrier_active, 1, __ATOMIC_RELEASE);
		/* With deltas: what changed since the last snapshot is taken now (before the log is this cycle's). */
		if (sp_options.delta && !sp_delta_cycle_stopped (sp_cycle.delta, &doomed))
			unattributed = TRUE;
		/* What P/Invokes running now write lands after the instant, unseen (sp-unseen.c). */
		native_unknown = !sp_native_log_in_flight ();
	}
	sp_lid_table_frozen = FALSE;
	sp_class_maps_frozen = FALSE;
	sp_start_restart_world (&priority);
	/* The cycle runs, and its first increment fails it (the program learns why from WaitPersisted). */
	if (unattributed)
		sp_writer.failure = doomed;
	if (native_unknown)
		fprintf (stderr, "spmono: a thread was in native code with more than %d arguments it may write (or more than %d "
			 "threads made such calls): what they write cannot be checked, so this snapshot will not be committed\n",
			 SP_NATIVE_ARGS, SP_NATIVE_THREADS);
	/* A delta's LIDs are the chain's: the caller starts a full snapshot instead (sp_cycle_start). */
	if (rc < 0 && !sp_cycle.delta)
		sp_client_lid_reset ();
	return rc < 0 && (sp_lid_table_needed || sp_class_map_needed) ? SP_START_RETRY : rc;
}

/*
 * Under sp_lock, before a cycle starts: the cycle before is over (its
 * hand-over done) but its commit may still be running, since a program that
 * calls SendPData as soon as it may never waits for one.  Its statistics go
 * out now, its length counted to this start (when the program could start
 * the next one).  They used to go out only at the commit, after the next
 * start had reset them: a program rushing from its first call had no cycle
 * in GetStats, the cost model learned nothing, and the schedulability
 * warning never came (a 1 kHz loop over 100,000 objects, 4,880 calls of
 * 5,000 unschedulable, not warned).
 */
static void
sp_cycle_publish_before_next (void)
{
	if (!sp_cycle.stats.started_ns || sp_cycle.failed || sp_cycle.stats.published)
		return;
	sp_cycle.stats.published = TRUE;
	sp_cycle_publish_stats (sp_mono_monotonic_ns ());
}

static uint64_t sp_task_first_release (uint64_t last_release_ns);

/*
 * Under sp_lock: how long a cycle starting at `now` waits for its first
 * increment.  A cycle's first release comes no sooner than a period less a
 * target after the last run ended (sp_model_first_release), so a program
 * that calls SendPData as soon as the last cycle is over waits up to a
 * period for it; the cost model counts from the release, and without this
 * a cycle that fits one period was predicted at a tenth of what it took
 * (2,000 objects back to back: 0.2-0.4 ms predicted, 0.3-5.6 ms measured).
 * At a start the SP task is idle or sleeping through periods kept for the
 * writer, which the start cuts short: either way its next release is this one.
 */
static uint64_t
sp_cycle_release_wait (uint64_t now)
{
	uint64_t release = sp_task_first_release (sp_budget.last_release_ns);
	return release > now ? release - now : 0;
}

/* The instant of the snapshot (`delta`: a delta on the chain the serializer holds). */
static int
sp_cycle_start (gboolean delta, SpError *err)
{
	SpSnapHeader h = { .sequence = sp_cycle.next_seq, .time_ns = sp_mono_now_ns () };
	sp_cycle_publish_before_next ();
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
	gboolean patch_prev;
	do {
		sp_ser.whole_objects = FALSE;
		sp_cycle.delta = delta;
		patch_prev = delta && sp_delta_header (&h);
		if (sp_mono_lid_table_grow (room, err) < 0 ||
		    (delta ? sp_ser_begin_delta (&sp_ser, &sp_out, &h, err) : sp_ser_begin (&sp_ser, &sp_out, &h, err)) < 0)
			return -1;
		t0 = sp_mono_monotonic_ns ();
		rc = sp_cycle_start_stopped (err);
		if (rc == SP_START_BARRIERS_WAIT)
			return rc;
		/*
		 * A delta whose roots did not fit: LIDs may have been handed out
		 * half, so the chain's cannot be trusted.  A full snapshot now
		 * (forgetting the chain's LIDs here, at once: a rare path).
		 */
		if (rc == SP_START_RETRY && delta) {
			sp_delta_forget ();
			sp_delta_force_full ("a delta's roots did not fit the LID table");
			delta = FALSE;
			h = (SpSnapHeader){ .sequence = h.sequence, .time_ns = h.time_ns };
		}
		if (sp_lid_table_needed)
			room = sp_lid_table_needed * 2;
		/* A class met for the first time: its map now; the next try finds it (or why it cannot be persisted). */
		if (sp_class_map_needed) {
			SpError ignored = { 0 };
			sp_mono_class_map (sp_class_map_needed, &ignored);
		}
	} while (rc == SP_START_RETRY);
	if (rc < 0) {
		/* A root that cannot be persisted, say: LIDs may have been handed out half, so the chain ends here. */
		if (delta) {
			sp_delta_forget ();
			sp_delta_force_full ("a delta could not start");
		}
		return -1;
	}
	sp_cycle.seq = sp_cycle.next_seq++;
	sp_cycle.patch_prev = patch_prev ? h.prev_sequence : 0;
	if (patch_prev && sp_options.verbose)
		fprintf (stderr, "spmono: delta %llu starts while snapshot %llu commits (its checksum goes in when it is committed)\n",
			 (unsigned long long)sp_cycle.seq, (unsigned long long)h.prev_sequence);
	if (sp_options.delta)
		sp_delta_cycle_started (sp_cycle.seq, delta, delta ? h.base_sequence : sp_cycle.seq);
	sp_cycle.running = TRUE;
	uint64_t stop_ns = sp_cycle.stats.stop_ns;
	memset (&sp_cycle.stats, 0, sizeof sp_cycle.stats);
	sp_cycle_predict (&sp_cycle.stats.predicted);
	sp_cycle.stats.release_wait_ns = sp_cycle_release_wait (sp_mono_monotonic_ns ());
	if (sp_cycle.stats.predicted.cycle_ns)
		sp_cycle.stats.predicted.cycle_ns += sp_cycle.stats.release_wait_ns;
	sp_writer.cycle_ns = 0;
	sp_cycle.stats.stop_ns = stop_ns;
	sp_cycle.stats.started_ns = t0;
	sp_cycle.stats.start_pause_ns = sp_mono_monotonic_ns () - t0;
	sp_trace_run ("start", t0, t0 + sp_cycle.stats.start_pause_ns);
	sp_budget.start_ns = sp_cycle.stats.start_pause_ns;
	__atomic_store_n (&sp_budget.called_ns, sp_mono_monotonic_ns (), __ATOMIC_RELEASE);
	mono_coop_cond_broadcast (&sp_cycle.wake);
	sp_task_nudge ();
	return 0;
}

static void
sp_cycle_publish_stats (uint64_t end_ns)
{
	const SpCycleStats *c = &sp_cycle.stats;
	sp_stats [SP_STAT_LAST_OBJECTS] = (gint64)sp_ser.objects_written;
	sp_stats [SP_STAT_LAST_BYTES] = (gint64)c->bytes_total;
	sp_stats [SP_STAT_LAST_SERIALIZE_NS] = (gint64)(c->total_pause_ns + c->start_pause_ns);
	sp_stats [SP_STAT_CYCLE_INCREMENTS] = (gint64)c->increments;
	sp_stats [SP_STAT_CYCLE_MAX_PAUSE_NS] = (gint64)c->max_pause_ns;
	sp_stats [SP_STAT_CYCLE_AVG_PAUSE_NS] = c->increments ? (gint64)(c->total_pause_ns / c->increments) : 0;
	sp_stats [SP_STAT_CYCLE_START_PAUSE_NS] = (gint64)c->start_pause_ns;
	sp_stats [SP_STAT_CYCLE_NS] = (gint64)(end_ns - c->started_ns);
	sp_stats [SP_STAT_CYCLE_BARRIER_CALLS] = (gint64)c->barrier_calls;
	sp_stats [SP_STAT_CYCLE_BARRIER_WRITES] = (gint64)c->barrier_writes;
	sp_stats [SP_STAT_CYCLE_WRITER_WAITS] = (gint64)c->writer_waits;
	sp_stats [SP_STAT_CYCLE_BARRIER_COPIES] = (gint64)c->barrier_copies;
	sp_stats [SP_STAT_CYCLE_BARRIER_COPY_BYTES] = (gint64)c->barrier_copy_bytes;
	sp_stats [SP_STAT_CYCLE_WRITER_NS] = (gint64)sp_writer.cycle_ns;
	sp_stats [SP_STAT_PREDICTED_CYCLE_NS] = (gint64)c->predicted.cycle_ns;
	sp_stats [SP_STAT_PREDICTED_PERIODS] = (gint64)c->predicted.periods;
	sp_stats [SP_STAT_PREDICTED_BYTES] = (gint64)c->predicted.bytes;
	sp_cycle_learn (end_ns - c->started_ns);
	/* For the cost model's accuracy, cycle by cycle (a benchmark's, beside its own clock): its start, then predicted and actual. */
	sp_trace_run ("cycle", c->started_ns, end_ns);
	sp_trace_run ("predicted", c->started_ns, c->started_ns + c->predicted.cycle_ns);
	if (sp_options.stats)
		fprintf (stderr, "spmono: cycle %llu: %llu increments (%llu marking, %.3f ms), pause max %.1f us avg %.1f us "
			 "(start %.1f us, of which stopping the world %.1f us), cycle %.3f ms, %llu objects (%llu by barriers, "
			 "%llu barrier calls, %llu unreferenced, %llu arrays set aside and not reached, %llu long arrays copied by barriers), %zu bytes, "
			 "%llu increments ended with both buffers full, "
			 "%u stores through pointers logged%s, writer %.3f ms, work %.3f ms of CPU, predicted cycle %.3f ms in %llu periods\n",
			 (unsigned long long)sp_cycle.seq, (unsigned long long)c->increments,
			 (unsigned long long)c->marking_increments, c->marking_ns / 1e6, c->max_pause_ns / 1e3,
			 c->increments ? c->total_pause_ns / 1e3 / c->increments : 0.0, c->start_pause_ns / 1e3, c->stop_ns / 1e3,
			 (end_ns - c->started_ns) / 1e6, (unsigned long long)sp_ser.objects_written,
			 (unsigned long long)c->barrier_writes, (unsigned long long)c->barrier_calls,
			 (unsigned long long)sp_ser.unreached_written, (unsigned long long)sp_ser.unreached_aside,
			 (unsigned long long)c->barrier_copies,
			 (size_t)c->bytes_total, (unsigned long long)c->writer_waits,
			 sp_unseen.log.count, sp_unseen.log.overflowed ? " (overflowed)" : "", sp_writer.cycle_ns / 1e6,
			 c->work_cpu_ns / 1e6, c->predicted.cycle_ns / 1e6, (unsigned long long)c->predicted.periods);
}

/*
 * Under sp_lock: the cycle's statistics go out once it is over (its
 * hand-over done) and its snapshot durable, whichever comes last: a cycle's
 * length is the program's wait for both (WaitPersisted).
 */
static void
sp_cycle_publish_when_done (void)
{
	if (sp_cycle.failed || sp_cycle.stats.published || sp_task_has_own_work () || sp_cycle.durable_seq < sp_cycle.seq)
		return;
	sp_cycle.stats.published = TRUE;
	sp_cycle_publish_stats (sp_mono_monotonic_ns ());
}

/*
 * Forget the cycle's objects, a step at a time: the LID table (so the GC may
 * collect them), the LID map, the states, the children's records.  This
 * costs in proportion to the snapshot, so it runs as units of the SP task's
 * increments after the cycle's last object, under the same budget; a
 * SendPData meanwhile is skipped or waits (handing_over), as during the rest
 * of the cycle.  The LID table is a GC root: it is emptied in GC-unsafe mode,
 * a chunk a step.  1: more to do, 0: done.
 */
#define SP_FORGET_BYTES (64u << 10)

static int
sp_cycle_forget_step (void)
{
	if (sp_mono_lid_reset_step (SP_FORGET_BYTES / (SP_LID_CHUNK * sizeof (gpointer)) + 1))
		return 1;
	if (sp_ser_reset_step (&sp_ser, SP_FORGET_BYTES))
		return 1;
	sp_unseen_clear ();
	return 0;
}

/* Every object is written: close the snapshot, disarm the barrier; the last chunk goes to the writer when it can take it. */
static void
sp_cycle_finish (void)
{
	SpError err = { 0 };
	if (sp_ser_close (&sp_ser, &err) < 0) {
		sp_cycle_fail (&err);
		return;
	}
	sp_cycle_disarm (FALSE);
	sp_cycle.running = FALSE;
	sp_cycle.handing_over = TRUE;
	sp_cycle.failed = FALSE;
	/* A chain's next delta needs the serializer's LIDs: they are kept, unless a full snapshot comes next. */
	sp_cycle.forgotten = sp_options.delta && sp_delta_keep_after_cycle (sp_cycle.seq);
	sp_cycle.stats.bytes_total = sp_cycle.stats.bytes + sp_out.len;
	sp_cycle.final_pending = !sp_writer_take_chunk (TRUE);
}

/* A unit of work found nothing to do until the writer takes the last chunk, or until a barrier's copy comes. */
#define SP_WORK_WAITING 2
#define SP_WORK_AWAITS_COPY 3

/*
 * After the cycle's last object (or its failure): hand the last chunk over
 * when the writer can take it, and forget the objects.  Once both are done
 * (sp_cycle_end), SendPData may start the next cycle.  1: more to do, 0: done,
 * SP_WORK_WAITING: only the last chunk is left, for the writer.
 */

static int
sp_cycle_hand_over_step (void)
{
	if (sp_cycle.final_pending && sp_writer_take_chunk (TRUE))
		sp_cycle.final_pending = FALSE;
	if (!sp_cycle.forgotten) {
		if (sp_cycle_forget_step ())
			return 1;
		sp_cycle.forgotten = TRUE;
	}
	if (sp_options.delta && sp_delta_clear_taken_step ())
		return 1;
	/* Only the last chunk is left: the writer takes it when it has drained its own (sp_writer_chunk_done). */
	return sp_cycle.final_pending ? SP_WORK_WAITING : 0;
}

/* The hand-over is done (its last increment counted): the cycle is over, the writer may still be writing its last chunks. */
static void
sp_cycle_end (void)
{
	sp_cycle.handing_over = FALSE;
	sp_cycle_publish_when_done ();
	mono_coop_cond_broadcast (&sp_cycle.idle);
	mono_coop_cond_broadcast (&sp_cycle.durable);
}

/*
 * Objects (or pieces, SP_SER_PIECE_COST each) a unit of marking or writing
 * does.  A unit is where the SP task checks its budget and whether a barrier
 * waits for the lock, and each check costs a clock read and some
 * bookkeeping: at 8 objects a unit (0.3-0.5 us of work on the tree of
 * bench/run-tree.sh) that overhead was a fifth of a cycle's work.
 */
#define SP_UNIT_OBJECTS_MAX 32

/*
 * Does this cycle mark before it writes (--sp-passes=2)?  A delta never
 * does; a full cycle by default writes what it finds (sp_ser_step gives the
 * children their LIDs as it writes each record), and the barrier writes any
 * persistable object not written yet, for the whole cycle (sp_ser_write_now).
 */
static gboolean
sp_cycle_marks (void)
{
	return sp_options.mark_first && !sp_cycle.delta;
}

/*
 * One unit of an increment's work: marking until it is complete (when the
 * cycle marks), then writing; after the cycle's last object, handing over
 * and forgetting.
 */
static int
sp_cycle_work (SpError *err)
{
	if (!sp_cycle.running)
		return sp_cycle_hand_over_step ();
	if (sp_ser.mark_done || !sp_cycle_marks ()) {
		int rc = sp_ser_step (&sp_ser, SP_UNIT_OBJECTS_MAX, err);
		return rc == SP_SER_STEP_WAITING ? SP_WORK_AWAITS_COPY : rc;
	}
	int more = sp_ser_mark (&sp_ser, SP_UNIT_OBJECTS_MAX, err);
	if (more == 0) {
		sp_cycle.stats.marking_ns = sp_mono_monotonic_ns () - sp_cycle.stats.started_ns;
		return 1;               /* the writing starts */
	}
	return more;
}

static SpUnitKind
sp_cycle_next_unit (void)
{
	if (!sp_cycle.running)
		return SP_UNIT_FORGET;
	return !sp_ser.mark_done && sp_cycle_marks () ? SP_UNIT_MARK : sp_ser.partial_lid || sp_ser.npreserved ? SP_UNIT_PIECE : SP_UNIT_OBJECTS;
}

/* LIDs the last increment that handed out LIDs did: the next one makes room for twice as many first. */
static uint32_t sp_lids_handed_out;

/* Why an increment ended. */
typedef enum {
	SP_INCREMENT_BUDGET_USED,
	SP_INCREMENT_YIELDED,        /* a barrier waits for sp_lock */
	SP_INCREMENT_BUFFERS_FULL,   /* the writer has not drained its chunk yet: the rest of the budget is its */
	SP_INCREMENT_AWAITS_COPY,    /* all that is left waits for a barrier's copy of a long array (sp_barrier_copy) */
	SP_INCREMENT_CYCLE_ENDED,    /* the last object is written (or the cycle failed), or the hand-over is done */
} SpIncrementEnd;

/* Under sp_lock, in a cycle: a full serializing buffer goes to the writer; FALSE when it cannot take it yet. */
static gboolean
sp_cycle_hand_chunk (void)
{
	return sp_out.len < sp_options.buffer || sp_writer_take_chunk (FALSE);
}

static void
sp_cycle_count_increment (uint64_t ns)
{
	SpCycleStats *c = &sp_cycle.stats;
	sp_pause_histogram [MIN (ns / 1000, SP_PAUSE_BUCKETS - 1)]++;
	c->increments++;
	c->total_pause_ns += ns;
	if (ns > c->max_pause_ns)
		c->max_pause_ns = ns;
}

/*
 * One increment: mark, write, or hand over and forget, until `budget_ns` is
 * used up, a barrier waits for the lock, or both buffers are full.  Its
 * length goes to *used_ns.
 */
static SpIncrementEnd
sp_cycle_increment (uint64_t budget_ns, uint64_t *used_ns)
{
	/* Back in the world before touching an object (sp_task_outside_the_world): a collection would not wait for us. */
	g_assert (!(mono_atomic_load_i32 ((gint32 *)&mono_thread_info_current ()->flags) & MONO_THREAD_INFO_FLAGS_NO_GC));
	SpError err = { 0 };
	uint64_t t0 = sp_mono_monotonic_ns (), t = t0, cpu0 = sp_mono_thread_cpu_ns ();
	int more = 1;
	SpIncrementEnd end = SP_INCREMENT_BUDGET_USED;
	gboolean in_cycle = sp_cycle.running, was_in_cycle = in_cycle;
	uint32_t lids_before = UINT32_MAX;
	if (in_cycle && sp_writer.failure.msg [0]) {
		err = sp_writer.failure;        /* the store failed this snapshot */
		sp_error_clear (&sp_writer.failure);
		more = -1;
	} else if (in_cycle && !sp_ser.mark_done) {
		if (sp_cycle_marks ())
			sp_cycle.stats.marking_increments++;
		/*
		 * Marking, or writing without a marking before it, hands out
		 * LIDs: room for twice what the last such increment handed out
		 * (a chunk at least), allocated here rather than in the middle of
		 * a unit.  The table is kept from cycle to cycle: only a state
		 * larger than any before grows it.
		 */
		uint32_t ahead = MAX (SP_LID_CHUNK, 2 * sp_lids_handed_out);
		if (sp_mono_lid_table_grow (sp_ser.nobjects + ahead, &err) < 0)
			more = -1;
		lids_before = sp_ser.nobjects;
		t = sp_mono_monotonic_ns ();
	}
	gboolean worked = FALSE;
	for (bool first = true; more == 1; first = false) {
		if (sp_cycle.running && !sp_cycle_hand_chunk ()) {
			sp_cycle.stats.writer_waits++;
			end = SP_INCREMENT_BUFFERS_FULL;
			break;
		}
		SpUnitKind kind = sp_cycle_next_unit ();
		/* At least one unit an increment, whatever the target: a cycle always progresses. */
		if (!first && t - t0 + sp_unit_avg_ns [kind] > budget_ns)
			break;
		uint64_t u0 = t;
		more = sp_cycle_work (&err);
		worked = TRUE;
		t = sp_mono_monotonic_ns ();
		sp_trace_unit (sp_unit_names [kind], u0, t);
		sp_unit_avg_ns [kind] += ((int64_t)(t - u0) - (int64_t)sp_unit_avg_ns [kind]) / 16;
		sp_cycle.stats.units [kind]++;
		if (more == 1 && in_cycle && __atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE)) {
			end = SP_INCREMENT_YIELDED;
			break;
		}
		if (more == 0 && in_cycle) {
			/* The last object is written: the hand-over goes on in what is left of the increment. */
			sp_cycle_finish ();
			in_cycle = FALSE;
			more = sp_cycle.handing_over ? 1 : 0;
		}
	}
	/* The hand-over's increments count with their cycle, whose statistics are published when it is over. */
	if (lids_before != UINT32_MAX && sp_ser.nobjects >= lids_before)
		sp_lids_handed_out = sp_ser.nobjects - lids_before;
	if (worked) {
		uint64_t cpu = sp_mono_thread_cpu_ns () - cpu0;
		sp_cycle.stats.work_cpu_ns += cpu;
		sp_cycle_count_increment (t - t0);
		sp_trace_run_cpu (was_in_cycle ? "increment" : "hand-over", t0, t, cpu);
	}
	*used_ns = t - t0;
	sp_task.increments_ns += t - t0;
	if (in_cycle && more < 0)
		sp_cycle_fail (&err);
	else if (more == 0)
		sp_cycle_end ();
	if (more == SP_WORK_WAITING)
		return SP_INCREMENT_BUFFERS_FULL;
	if (more == SP_WORK_AWAITS_COPY)
		return SP_INCREMENT_AWAITS_COPY;
	return more != 1 ? SP_INCREMENT_CYCLE_ENDED : end;
}

/* ---- the SP task ------------------------------------------------------------ */

static uint64_t
sp_timespec_ns (const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static struct timespec
sp_timespec_of_ns (uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

/*
 * The most a switch into the SP task takes from the program's CPU: measured
 * from the program's side as 20-60 us a wake-up on this VM (the timer's or
 * the call's interrupt and the switch), which had made gaps of 577-580 us at
 * a 500 us target when a cycle started.  A longer latency is not the
 * program's CPU (sp_model_due): charged in full, it left a 1 kHz loop on two
 * CPUs, whose SP task woke 100-185 us after SendPData on an idle CPU, an
 * increment of 3 us (measured, session 20), and a fifth of its delta cycles
 * ran a period late.
 */
#define SP_WAKE_SWITCH_MAX_NS 60000

/*
 * The SP task's time on the run queue so far (ns; the second field of
 * /proc/thread-self/schedstat): time it could have run while other threads
 * did.  0 where the kernel does not say (no CONFIG_SCHED_INFO): then a
 * wake-up's whole latency, up to a switch's, is charged as before.
 */
static uint64_t
sp_task_queued_ns (void)
{
	char text [96];
	ssize_t n = sp_task.schedstat_fd >= 0 ? pread (sp_task.schedstat_fd, text, sizeof text - 1, 0) : -1;
	unsigned long long ran, queued;
	if (n <= 0)
		return 0;
	text [n] = '\0';
	return sscanf (text, "%llu %llu", &ran, &queued) == 2 ? (uint64_t)queued : 0;
}

/*
 * When the SP task, asleep since `slept_ns`, was due to run: at `until_ns`
 * (its release), or when a starting cycle called it if that came first and
 * the sleep was one such a call ends (`callable`).  The time from then to
 * now, a switch's at most, is charged to the period's budget with the run.
 */
static uint64_t
sp_task_due_since (uint64_t slept_ns, uint64_t until_ns, gboolean callable, uint64_t queued_before)
{
	uint64_t called = callable ? __atomic_load_n (&sp_budget.called_ns, __ATOMIC_ACQUIRE) : 0;
	uint64_t queued = sp_task_queued_ns () - queued_before;
	return sp_model_due (slept_ns, until_ns, called, queued, sp_mono_monotonic_ns (), SP_WAKE_SWITCH_MAX_NS);
}

/* The SP task is back from a sleep or an idle wait, in the world (noted for SPMONO_TRACE only). */
static void
sp_task_awake_begin (void)
{
	if (!sp_tracing ())
		return;
	sp_task.awake_ns = sp_mono_monotonic_ns ();
	sp_task.awake_cpu_ns = sp_mono_thread_cpu_ns ();
	sp_task.increments_ns = 0;
}

/* The SP task goes to sleep at `now`: its run since it woke, traced when it did much besides its increments. */
static void
sp_task_awake_end (uint64_t now)
{
	if (!sp_task.awake_ns)
		return;       /* not tracing, or not awoken yet */
	uint64_t awake = now - sp_task.awake_ns;
	sp_trace_awake (sp_task.awake_ns, now, awake - MIN (sp_task.increments_ns, awake), sp_mono_thread_cpu_ns () - sp_task.awake_cpu_ns);
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
	/* Its run since it woke, with the sleep it enters, out of the period's budget (the writer reads it under the lock). */
	uint64_t slept = sp_mono_monotonic_ns (), queued = sp_task_queued_ns ();
	gboolean callable = sp_task.nudgeable;
	sp_budget_charge (slept - sp_budget.woke_ns + SP_SLEEP_ENTRY_NS);
	sp_task_awake_end (slept);
	mono_coop_mutex_unlock (&sp_lock);
	sp_task_outside_the_world (TRUE);
	MONO_ENTER_GC_SAFE;
	if (sp_task.nudgeable) {
		while (sem_clockwait (&sp_task.nudge, CLOCK_MONOTONIC, until) < 0 && errno == EINTR)
			;
	} else {
		while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, until, NULL) == EINTR)
			;
	}
	sp_budget.woke_ns = sp_task_due_since (slept, sp_timespec_ns (until), callable, queued);
	MONO_EXIT_GC_SAFE;
	mono_coop_mutex_lock (&sp_lock);
	sp_task.nudgeable = FALSE;
	if (sp_cycle.exiting)
		sp_task_park ();
	sp_task_outside_the_world (FALSE);
	sp_task_awake_begin ();
}

/*
 * Under sp_lock: sleep until `until` unless a cycle starts first (its
 * SendPData nudges the SP task: sp_task_nudge); TRUE when nudged.  For the
 * periods the SP task keeps only for the writer's budget: a cycle started
 * meanwhile gets its first release by sp_task_first_release, as after an
 * idle wait, not at the next period of the writer's schedule (which put
 * every increment a whole writer's run after its SendPData: measured, 89 us
 * at a 1 kHz loop with --sp-keep=1, whose every cycle ends in a retire).
 */
static gboolean
sp_task_sleep_nudgeable (const struct timespec *until)
{
	while (sem_trywait (&sp_task.nudge) == 0)
		;       /* a nudge that came after the last such sleep ended */
	sp_task.nudgeable = TRUE;
	sp_task_sleep_until (until);
	return sp_task_has_own_work () && sp_mono_monotonic_ns () < sp_timespec_ns (until);
}

/* Under sp_lock: a cycle started; the SP task wakes if it sleeps for the writer's sake only. */
static void
sp_task_nudge (void)
{
	if (sp_task.nudgeable) {
		sp_task.nudgeable = FALSE;
		sem_post (&sp_task.nudge);
	}
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
 * is left of the budget.  It gives up when the run could not end within the
 * period's window (sp_task_window_end) or less than SP_RESUME_MIN_NS is left.
 * A step that would end past the window is cut to end at its last useful
 * instant (sp_model_resume_wake): doubled past it, a program that stored for 110 ms after
 * SendPData at --sp-pause=100000 (a 150 ms window) woke the SP task at 204 ms,
 * and its cycle took the next period (test_incremental's "resume", one run
 * in three here).  "No barrier has written" compares
 * the cycle's count of barrier writes before and after the step (both read
 * under sp_lock): a time stamp instead, a clock read in every barrier write,
 * cost a loop rewriting 10,000 objects about 200 us a period.
 *
 * A step is at most a 40th of the period (SP_RESUME_STEPS_MIN), or 1 ms
 * where that is more (a short period's steps double as before: each wake-up
 * takes 20-60 us from the program, SP_WAKE_SWITCH_MAX_NS): doubled
 * without a bound, stores that went on for 120 ms of a 1 s period met the
 * step that ended at 205 ms, and the next one woke the SP task at 409 ms, its
 * cycle committing past half the period under load (test_incremental's
 * "resume", 1 run in 10 beside two busy loops).
 *
 * The same after an increment whose work was left waiting for a barrier's
 * copy of a long array (sp_barrier_copy, outside the lock): the SP task
 * resumes once the copy came.  Until session 39 that increment ended the
 * period as a full buffer does, and on a loaded machine (two busy loops
 * beside test_incremental's "resume") the copy came a few ms later and the
 * cycle finished a period late, 3 runs in 5.
 */
#define SP_RESUME_STEP_NS 50000
#define SP_RESUME_MIN_NS 10000
#define SP_RESUME_STEPS_MIN 40
#define SP_RESUME_STEP_MAX_NS 1000000

/*
 * The latest any run of the period released at `release_ns` may end (the SP
 * task's resumed runs, the writer's slices): the target and a twentieth of
 * the period after the release.  All of a period's work then lies in that
 * window, so that any stretch of the program's time one period long holds
 * at most about a target and a twentieth of a period of it (the minimum
 * mutator utilization at a period, bench/run-mmu.sh), and no run meets the
 * next period's.  (Before session 10 the bound was a target before the next
 * release: a period's first increment and a late resumed run or a late
 * writer could then take two targets out of one period's stretch.)
 */
static uint64_t
sp_task_window_end (uint64_t release_ns)
{
	return release_ns + (uint64_t)sp_options.pause_us * 1000 + (uint64_t)sp_options.period_us * 1000 / 20;
}

/*
 * Under sp_lock: is the SP task's work ready again after its increment
 * ended for `why`?  A yield: no barrier has written since `writes` and none
 * waits.  Waiting for a barrier's copy (a long array copied outside the
 * lock, sp_barrier_copy): the copy came.
 */
static gboolean
sp_task_may_resume (SpIncrementEnd why, uint64_t writes)
{
	if (why == SP_INCREMENT_AWAITS_COPY)
		return sp_ser_copy_came (&sp_ser);
	return sp_cycle.stats.barrier_writes == writes && !__atomic_load_n (&sp_lock_waiters, __ATOMIC_ACQUIRE);
}

/*
 * Under sp_lock: the budget of a resumed run in this period's window after
 * an increment that ended for `why` (yielded, or awaiting a copy), 0 for none.
 */
static uint64_t
sp_task_await_resume (SpIncrementEnd why, uint64_t budget_left_ns)
{
	uint64_t deadline = sp_budget.deadline_ns;
	uint64_t step_max = MAX (SP_RESUME_STEP_MAX_NS, (uint64_t)sp_options.period_us * 1000 / SP_RESUME_STEPS_MIN);
	for (uint64_t step = SP_RESUME_STEP_NS; budget_left_ns >= SP_RESUME_MIN_NS; step = MIN (2 * step, step_max)) {
		uint64_t wake = sp_model_resume_wake (sp_mono_monotonic_ns (), step, deadline, SP_RESUME_STEP_NS, SP_RESUME_MIN_NS);
		if (!wake)
			return 0;
		struct timespec until = sp_timespec_of_ns (wake);
		uint64_t writes = sp_cycle.stats.barrier_writes;
		sp_task_sleep_until (&until);
		if (!sp_cycle.running)
			return 0;
		uint64_t now = sp_mono_monotonic_ns ();
		if (now + SP_RESUME_MIN_NS > deadline)
			return 0;
		if (sp_task_may_resume (why, writes))
			return MIN (budget_left_ns, deadline - now);
	}
	return 0;
}

/* Under sp_lock: does the SP task have work of its own (a cycle, or the hand-over after one)? */
static gboolean
sp_task_has_own_work (void)
{
	return sp_cycle.running || sp_cycle.handing_over;
}

/* Under sp_lock: must the SP task keep its periods going (its own work, or the writer's budget)? */
static gboolean
sp_task_has_work (void)
{
	return sp_task_has_own_work () || (sp_options.writer == SP_WRITER_BUDGET && (sp_writer.busy || sp_writer.retiring));
}

/*
 * Under sp_lock: the work of the period released at `release`: the SP task's
 * increment (and resumed runs after yields) first, then the writer's slices
 * on what is left of the budget (sp_budget), while the SP task sleeps.
 */
static void
sp_task_run_period (const struct timespec *release)
{
	uint64_t budget = (uint64_t)sp_options.pause_us * 1000;
	sp_budget.left_ns = budget;
	sp_budget.deadline_ns = sp_task_window_end (sp_timespec_ns (release));
	sp_budget.commit_turn = FALSE;
	sp_budget.sp_running = TRUE;
	/* The SP task's own share: the budget less its wake-up so far and its sleep to come (charged when it sleeps). */
	uint64_t woke = sp_mono_monotonic_ns () - sp_budget.woke_ns, overhead = woke + SP_SLEEP_ENTRY_NS;
	/* The model's average takes at most the budget of it (sp_model_wake_add); this period is charged all of it. */
	sp_model_wake_add (&sp_wake_avg_ns, overhead, budget);
	/* A cycle's start stopped the program's threads just before: that was persistence too. */
	overhead += sp_budget.start_ns;
	sp_budget_charge (sp_budget.start_ns);
	sp_budget.start_ns = 0;
	/* A commit too long to share a period, waiting: this period is its own, and the SP task's work waits for the next. */
	if (sp_options.writer == SP_WRITER_BUDGET && sp_writer.busy && sp_writer.commit_due && sp_writer_commit_alone ()) {
		sp_budget.commit_turn = TRUE;
		sp_budget.writer_owed = FALSE;
		sp_budget.sp_running = FALSE;
		mono_coop_cond_broadcast (&sp_writer.cond);
		return;
	}
	uint64_t own = budget > overhead ? budget - overhead : 0;
	/*
	 * A chunk waiting for the writer: the writer's part is what it needs to
	 * finish the chunk, half the budget at most.  (Half, always, before
	 * session 12: a commit left over from the last period then cut the next
	 * cycle's increment short of a cycle that needed 60% of the budget, that
	 * cycle's commit was left over in turn, and every other SendPData of a
	 * 1 kHz loop was skipped for tens of periods after one stall.)
	 */
	if (sp_options.writer == SP_WRITER_BUDGET && sp_writer.busy)
		own -= MIN (own / 2, sp_writer_pending_ns ());
	/* The writer's progress slice: the SP task has nothing of its own to do, or stops for want of the writer. */
	sp_budget.writer_owed = !sp_task_has_own_work ();
	SpIncrementEnd end = SP_INCREMENT_BUDGET_USED;
	for (uint64_t run = MAX (own, 1); run > 0 && sp_task_has_own_work (); run = sp_task_await_resume (end, own)) {
		uint64_t used;
		end = sp_cycle_increment (run, &used);
		sp_budget.writer_owed = end == SP_INCREMENT_BUFFERS_FULL || !sp_task_has_own_work ();
		own = own > used ? own - used : 0;
		if (end != SP_INCREMENT_YIELDED && end != SP_INCREMENT_AWAITS_COPY)
			break;
	}
	sp_budget.sp_running = FALSE;
	mono_coop_cond_broadcast (&sp_writer.cond);
}

/* Under sp_lock: a cycle's first release, the last period released at `last_release_ns` (sp_model_first_release). */
static uint64_t
sp_task_first_release (uint64_t last_release_ns)
{
	return sp_model_first_release (last_release_ns, sp_task_window_end (last_release_ns), sp_budget.ran_until_ns, sp_budget.start_ns,
				       (uint64_t)sp_options.period_us * 1000, (uint64_t)sp_options.pause_us * 1000);
}

/* Under sp_lock: the release after the period released at `last_release_ns` (sp_model_next_release). */
static uint64_t
sp_task_next_release (uint64_t last_release_ns)
{
	return sp_model_next_release (last_release_ns, sp_task_window_end (last_release_ns), sp_budget.ran_until_ns,
				      (uint64_t)sp_options.period_us * 1000, (uint64_t)sp_options.pause_us * 1000);
}

static gsize
sp_task_main (gpointer arg)
{
	(void)arg;
	sp_task_set_priority ("SP", "sp-task");
	sp_task.schedstat_fd = open ("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	mono_coop_mutex_lock (&sp_lock);
	for (;;) {
		sp_task_outside_the_world (TRUE);
		uint64_t idle = sp_mono_monotonic_ns (), queued = sp_task_queued_ns ();
		sp_task_awake_end (idle);
		while (!sp_task_has_work () && !sp_cycle.exiting)
			mono_coop_cond_wait (&sp_cycle.wake, &sp_lock);
		if (sp_cycle.exiting)
			sp_task_park ();
		sp_budget.woke_ns = sp_task_due_since (idle, UINT64_MAX, TRUE, queued);
		sp_task_outside_the_world (FALSE);
		sp_task_awake_begin ();
		struct timespec release;
		clock_gettime (CLOCK_MONOTONIC, &release);
		uint64_t next = sp_task_first_release (sp_budget.last_release_ns);
		if (sp_timespec_ns (&release) < next) {
			release = sp_timespec_of_ns (next);
			sp_task_sleep_until (&release);
		}
		for (;;) {
			sp_budget.last_release_ns = sp_timespec_ns (&release);
			sp_task_run_period (&release);
			/* The period's runs end: the SP task's now, or the commit it left the period to as that takes. */
			sp_budget.ran_until_ns = sp_mono_monotonic_ns () + (sp_budget.commit_turn ? sp_writer.commit.high_ns : 0);
			if (!sp_task_has_work ())
				break;
			uint64_t next = sp_task_next_release (sp_budget.last_release_ns);
			release = sp_timespec_of_ns (next);
			if (sp_task_has_own_work ())
				sp_task_sleep_until (&release);
			else if (sp_task_sleep_nudgeable (&release))
				break;
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
	mono_coop_cond_init (&sp_copy_attached);
	if (sem_init (&sp_task.nudge, 0, 0) < 0)
		return sp_error_set (err, "cannot make the SP task's semaphore: %s", g_strerror (errno));
	sp_buf_init (&sp_writer.buf);
	sp_writer.retire = (SpModelDuration){ 50000, 50000 };  /* until measured: a 256 KiB truncation on tmpfs, about */
	sp_writer.commit = (SpModelDuration){ 50000, 50000 };  /* until measured: a rename on tmpfs, about */
	sp_writer.writeback = (SpModelDuration){ 100000, 100000 };  /* until measured: 512 KiB queued on ext4, about */
	/* The two chunk buffers, a chunk and a unit's output each, their pages faulted in now rather than in increments. */
	size_t room = (size_t)sp_options.buffer + sp_options.buffer / 2;
	if (sp_buf_prepare (&sp_out, room) < 0 || sp_buf_prepare (&sp_writer.buf, room) < 0)
		return sp_error_set (err, "out of memory for two buffers of %zu bytes (--sp-buffer)", room);
	sp_ser_set_chunk (&sp_ser, sp_options.buffer);
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
 * Under sp_lock: may no cycle start now?  One is running or handing over;
 * with deltas, also while the last snapshot's commit is pending, unless the
 * next one is a delta on it (pipelined: the writer fills its predecessor's
 * checksum into its header, and writes it only once that predecessor is
 * committed).  A full snapshot, or one after a chain ended, waits for the
 * commit: which chain it starts depends on it.  *kind: what the next
 * cycle is (with deltas).
 */
static gboolean
sp_cycle_busy (SpDeltaCycleKind *kind)
{
	*kind = SP_DELTA_CYCLE_FULL;
	if (sp_task_has_own_work ())
		return TRUE;
	if (!sp_options.delta)
		return FALSE;
	gboolean pending = sp_cycle.durable_seq < sp_cycle.requested_seq && sp_cycle.failed_seq < sp_cycle.requested_seq;
	if (pending) {
		if (!sp_delta_may_pipeline (sp_cycle.requested_seq))
			return TRUE;
		*kind = SP_DELTA_CYCLE_DELTA;
		return FALSE;
	}
	*kind = sp_delta_cycle_kind ();
	return FALSE;
}

/*
 * Under sp_lock, with deltas: a full snapshot is due but the serializer
 * holds the chain's LIDs: the SP task lets them go in its increments, as
 * after a cycle that ends a chain (the LID table is the GC's root: emptied
 * a step at a time), before the full snapshot can start.
 */
static void
sp_cycle_forget_chain (void)
{
	sp_delta_forget ();
	sp_cycle.handing_over = TRUE;
	sp_cycle.final_pending = FALSE;
	sp_cycle.failed = TRUE;          /* no cycle's statistics to publish */
	sp_cycle.forgotten = FALSE;
	mono_coop_cond_broadcast (&sp_cycle.wake);
	sp_task_nudge ();
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
 * changing.  The hand-over after a cycle's last object (its last chunk
 * given to the writer, its objects forgotten, in the SP task's increments)
 * is part of the cycle.  Under sp_lock.
 */
static int
sp_cycle_request (SpError *err)
{
	if (sp_cycle.exiting)
		return sp_error_set (err, "SendPData: the runtime is shutting down");
	if (sp_tasks_start (err) < 0)
		return -1;
	sp_cycle_check_schedule ();
	int rc;
	/*
	 * After a failed snapshot the next SendPData takes one, waiting for what
	 * its failure left to do (the hand-over that lets its objects go; with
	 * deltas, the chain's LIDs let go before a full snapshot): skipped, it
	 * would take none, and WaitPersisted would report the old failure again.
	 */
	gboolean after_failure = sp_cycle.requested_seq && sp_cycle.failed_seq >= sp_cycle.requested_seq;
	for (;;) {
		SpDeltaCycleKind kind;
		gboolean busy = sp_cycle_busy (&kind);
		if (busy && !sp_options.busy_wait && !after_failure) {
			sp_stats [SP_STAT_SEND_SKIPS]++;
			uint64_t now = sp_mono_monotonic_ns ();
			sp_trace_run ("skip", now, now);
			return 0;
		}
		if (busy) {
			uint64_t t0 = sp_mono_monotonic_ns ();
			while (sp_cycle_busy (&kind))
				mono_coop_cond_wait (sp_task_has_own_work () ? &sp_cycle.idle : &sp_cycle.durable, &sp_lock);
			sp_stats [SP_STAT_SEND_WAITS]++;
			sp_stats [SP_STAT_SEND_WAIT_NS] += (gint64)(sp_mono_monotonic_ns () - t0);
		}
		if (kind == SP_DELTA_CYCLE_FORGET_FIRST) {
			sp_cycle_forget_chain ();
			continue;           /* busy now: skipped, or waited for */
		}
		if ((rc = sp_cycle_start (kind == SP_DELTA_CYCLE_DELTA, err)) != SP_START_BARRIERS_WAIT)
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
	/* Durable, and its cycle over (its statistics published), or failed. */
	while ((sp_cycle.seq == want && sp_task_has_own_work ()) || (sp_cycle.durable_seq < want && sp_cycle.failed_seq < want))
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

/*
 * Under sp_lock, in a cycle: the ticket's bytes of long array obj, copied
 * before the store with the lock released (sp_ser_write_now), so that the
 * SP task and other threads' barriers go on meanwhile; 1, or -1 with err.
 * obj does not move during the copy: the collector keeps an array that long
 * in its large-object space, which it never compacts (and this frame holds
 * obj).  The copy is this thread's cost, as its store's; no cycle can start
 * before it is attached (sp_barriers_outside_lock).
 */
static int
sp_barrier_copy (MonoObject *obj, const SpPreserveTicket *ticket, SpError *err)
{
	g_assert (mono_object_get_size_internal (obj) > SGEN_MAX_SMALL_OBJ_SIZE);
	sp_barriers_outside_lock++;
	mono_coop_mutex_unlock (&sp_lock);
	uint8_t *copy = malloc (ticket->bytes);
	if (copy)
		memcpy (copy, (const uint8_t *)sp_client_array_data (obj) + ticket->offset, ticket->bytes);
	mono_coop_mutex_lock (&sp_lock);
	sp_barriers_outside_lock--;
	int rc = 0;
	if (sp_cycle.running) {
		rc = sp_ser_preserve_attach (&sp_ser, obj, ticket, copy, err);
		sp_cycle.stats.barrier_copies++;
		sp_cycle.stats.barrier_copy_bytes += ticket->bytes;
	} else
		free (copy);            /* the cycle failed meanwhile */
	mono_coop_cond_broadcast (&sp_copy_attached);
	return rc < 0 ? -1 : 1;
}

/*
 * The store barrier's slow path: before a store into obj lands.  With
 * deltas, between snapshots it only records obj (sp_delta_barrier); in a
 * cycle it serves the cycle and records obj too.
 */
void
sp_barrier_store (MonoObject *obj)
{
	if (sp_delta_between_snapshots ()) {
		sp_delta_barrier (obj);
		return;
	}
	/* Handled by this thread in this cycle already (written, or not in the snapshot): nothing to do, no lock. */
	if (!obj || sp_unseen_object_known (obj))
		return;
	gint32 gen = __atomic_load_n (&sp_unseen.gen, __ATOMIC_ACQUIRE);
	gboolean delta_mode = sp_delta_armed ();
	if (delta_mode && sp_delta_cycle_shortcut (obj, gen))
		return;
	/*
	 * Handled by anyone (its identity slot or the written set says so), of
	 * a class that cannot be persisted, or allocated by this thread since
	 * the cycle started (not part of the snapshot): no lock either, and the
	 * thread remembers it.
	 * The GC epoch is read here with obj in hand: this path has no safepoint,
	 * so obj cannot move in between, and no cycle can end and another start
	 * (that needs the world stopped).
	 */
	if (!delta_mode &&
	    (sp_ser_written_hint (&sp_ser, obj) || sp_wset_has (&sp_written, obj, sp_client_gc_epoch ()) ||
	     sp_mono_class_known_unpersistable (mono_object_class (obj)) ||
	     sp_unseen_young ((uintptr_t)obj, (uintptr_t)obj + 1))) {
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
		SpPreserveTicket ticket;
		int rc = sp_ser_write_now (&sp_ser, obj, &ticket, &err);
		while (rc == SP_SER_WRITE_WAIT && sp_cycle.running) {
			sp_barriers_outside_lock++;
			mono_coop_cond_wait (&sp_copy_attached, &sp_lock);
			sp_barriers_outside_lock--;
			rc = sp_cycle.running ? sp_ser_write_now (&sp_ser, obj, &ticket, &err) : 0;
		}
		if (rc == SP_SER_WRITE_COPY)
			rc = sp_barrier_copy (obj, &ticket, &err);
		if (rc > 0)
			sp_cycle.stats.barrier_writes++;
		if (rc < 0) {
			sp_cycle_fail (&err);
		} else {
			sp_wset_add (&sp_written, obj, sp_client_gc_epoch ());
			/* With deltas the store is recorded for the next snapshot too (it lands after this one's instant). */
			if (!delta_mode || sp_delta_note_locked (obj))
				sp_unseen_object_handled_in (obj, gen);
		}
	} else if (delta_mode && sp_delta_note_locked (obj)) {
		/* The cycle ended while this thread waited: the store is the next snapshot's. */
		sp_unseen_object_handled_in (obj, gen);
	}
	mono_coop_mutex_unlock (&sp_lock);
}
