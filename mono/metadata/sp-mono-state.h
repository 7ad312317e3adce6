/*
 * sp-mono-state.h: the state the client's files share (a unity build: included
 * once, by sp-runtime.c, before them; not a public header).
 *
 * The client is the Mono side of the persistence core, split by concern as
 * SGen keeps sgen-mono.c beside focused files:
 *
 *   sp-trace.c      SPMONO_TRACE: when persistence and collections ran, for
 *                   measuring what they take from the program
 *   sp-cpu-latency.c --sp-cpu-latency: the CPUs kept out of slow idle states
 *                   while the program runs (Linux PM QoS)
 *   sp-heap.c       --sp-heap: the heap's memory returned, kept, or kept in
 *                   huge pages (runtime patches 0015, 0016)
 *   sp-classmap.c   the persistent class map, from [SPersistent] and
 *                   [SPersistentField], built once per class
 *   sp-identity.c   the core's object model (sp-client.h): classes of objects,
 *                   strings and arrays, identity across a moving GC, the LID
 *                   table (a GC root), the GC epoch
 *   sp-renames.c    classes under their former names ([SPersistent (FormerNames)])
 *   sp-upgrade.c    the upgrade hook: old values of changed fields, for ISPersistentUpgrade
 *   sp-unknown.c    unknown data: fields a restored snapshot had that the
 *                   program's classes lack, carried into its next snapshots
 *   sp-restore.c    a snapshot into live objects: construction, links, fix-up, roots
 *   sp-unseen.c     stores through pointers no barrier saw; native code in flight
 *   sp-cycle.c      incremental mode: the cycle, the SP and writer tasks, the
 *                   barrier's slow path
 *   sp-delta.c      delta snapshots: what changed between snapshots, the chain
 *   sp-fold-task.c  the fold task: a chain's new base written from its files,
 *                   off the program's path; old snapshots retired
 *   sp-mono.c       starting (store, warm restart), stop-the-world SendPData,
 *                   the internal calls behind SPersistence.SPC, driver hooks
 *
 * Locking: one mutex, sp_lock, serializes the SPC calls, the SP task's
 * increments, the barrier's slow path and the writer's hand-overs.
 */
#ifndef SP_MONO_STATE_H
#define SP_MONO_STATE_H

#include <mono/metadata/sp-mono.h>

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mono/metadata/assembly-internals.h>
#include <mono/metadata/class-init.h>
#include <mono/metadata/class-inlines.h>
#include <mono/metadata/class-internals.h>
#include <mono/metadata/custom-attrs-internals.h>
#include <mono/metadata/icall-internals.h>
#include <mono/metadata/object-internals.h>
#include <mono/metadata/profiler.h>
#include <mono/metadata/reflection-internals.h>
#include <mono/metadata/tabledefs.h>
#include <mono/metadata/tokentype.h>
#include <mono/utils/mono-coop-mutex.h>
#include <mono/utils/mono-threads-coop.h>
#include <mono/sgen/sgen-gc.h>
#include <mono/sgen/sgen-cardtable.h>
#include <mono/sgen/sgen-memory-governor.h>

#include "../spersist/sp-client.h"
#include "../spersist/sp-options.h"
#include "../spersist/sp-serialize.h"
#include "../spersist/sp-snapshot.h"
#include "../spersist/sp-store.h"
#include "../spersist/sp-stream.h"
#include "../spersist/sp-model.h"

/*
 * A reference store into an object or array with SGen's card-table barrier
 * inline: what mono_gc_wbarrier_generic_store_internal does through two
 * calls and their tests (30 instructions a store; the LID table's binds and
 * a restore's fix-up store once per object).  A store into the nursery
 * needs no card: SGen remembers only references from outside
 * it, for minor collections and for the concurrent major collector alike
 * (its own value copies skip the barrier for a nursery destination,
 * sgen-mono.c).  Elsewhere the card is marked whatever value is (SGen with
 * its default concurrent collector marks it for every such store anyway).  As in SGen, the store comes first and value stays live in a
 * register until the card is marked: a collection between the two pins it,
 * so the slot it did not scan is still right, and the next one scans it.
 */
static inline void
sp_mono_store_barriered (void *slot, MonoObject *value)
{
	*(MonoObject **)slot = value;
	if (!sgen_ptr_in_nursery (slot))
		sgen_card_table_mark_address ((mword)slot);
	sgen_dummy_use (value);
}

/* sp_mono_store_barriered into a slot of a large object (SGen's large object space: never in the nursery). */
static inline void
sp_mono_store_into_large (void *slot, MonoObject *value)
{
	*(MonoObject **)slot = value;
	sgen_card_table_mark_address ((mword)slot);
	sgen_dummy_use (value);
}

static SpOptions sp_options = SP_OPTIONS_DEFAULT;
static char *sp_program;                 /* path of the program being run */
static MonoCoopMutex sp_lock;

/* Started lazily by the first SPC call: the store is opened and the newest snapshot restored. */
static gboolean sp_started;
static SpStore *sp_store;
static gboolean sp_warm;                 /* a snapshot was restored */

/* Roots, sorted by id: ids are handed out in increasing order and kept across restarts. */
typedef struct SpRoot {
	guint32 id;
	guint32 handle;          /* a strong GC handle */
	gboolean restored;       /* from the snapshot restored at the start (else added by this run) */
	gboolean received;       /* restored, and received since (RecvPData): sp_mono_warn_unreceived_roots */
} SpRoot;
static GArray *sp_roots;
static guint32 sp_next_root_id = 1;

static inline SpRoot *
sp_mono_root_at (guint i)
{
	return &g_array_index (sp_roots, SpRoot, i);
}

/*
 * A restore's objects by LID (slots [0] stays null: LID 0, the null
 * reference, reads as NULL), in native memory that SGen
 * scans as a precise root while the restore runs (sp-restore.c): a
 * collection meanwhile keeps them and updates the slots of those it moves.
 */
typedef struct SpObjects {
	MonoObject **slots;
	guint32 count;           /* slots, LID 0's included */
} SpObjects;

static inline MonoObject *
sp_objects_get (const SpObjects *t, guint32 lid)
{
	return t->slots [lid];
}

/* The serializer, and the buffer it writes into (incremental mode: the SP task's serializing buffer). */
static SpSerializer sp_ser;
static SpBuf sp_out;

/* Figures for SPC.GetStats, in the order of SPStats' constructor (managed/SPC.cs). */
enum {
	SP_STAT_SNAPSHOTS, SP_STAT_LAST_SEQUENCE, SP_STAT_LAST_OBJECTS, SP_STAT_LAST_BYTES,
	SP_STAT_LAST_SERIALIZE_NS, SP_STAT_LAST_COMMIT_NS, SP_STAT_FAILURES,
	SP_STAT_RESTORED_SEQUENCE, SP_STAT_RESTORED_OBJECTS, SP_STAT_RESTORED_BYTES, SP_STAT_RESTORE_NS,
	SP_STAT_RESTORE_DECODE_NS,
	SP_STAT_CYCLE_INCREMENTS, SP_STAT_CYCLE_MAX_PAUSE_NS, SP_STAT_CYCLE_AVG_PAUSE_NS, SP_STAT_CYCLE_START_PAUSE_NS,
	SP_STAT_CYCLE_NS, SP_STAT_CYCLE_BARRIER_CALLS, SP_STAT_CYCLE_BARRIER_WRITES, SP_STAT_CYCLE_WRITER_WAITS,
	SP_STAT_SEND_WAITS, SP_STAT_SEND_WAIT_NS, SP_STAT_SEND_SKIPS,
	SP_STAT_CYCLE_WRITER_NS, SP_STAT_PREDICTED_CYCLE_NS, SP_STAT_PREDICTED_PERIODS, SP_STAT_PREDICTED_BYTES,
	SP_STAT_UNSCHEDULABLE_SENDS, SP_STAT_CYCLE_BARRIER_COPIES, SP_STAT_CYCLE_BARRIER_COPY_BYTES,
	SP_STAT_FULL_SNAPSHOTS, SP_STAT_FOLDS, SP_STAT_LAST_FOLD_NS, SP_STAT_DELTA_DEFERRED,
	SP_STAT_COUNT
};
static gint64 sp_stats [SP_STAT_COUNT];

static uint64_t
sp_mono_clock_ns (clockid_t clock)
{
	struct timespec ts;
	clock_gettime (clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
sp_mono_now_ns (void)
{
	return sp_mono_clock_ns (CLOCK_REALTIME);
}

/* A system file the client reads or writes, or the one a test names in `test_env` instead (a refusal, a setting). */
static inline const char *
sp_mono_system_path (const char *test_env, const char *path)
{
	const char *test = g_getenv (test_env);
	return test && *test ? test : path;
}

static uint64_t
sp_mono_monotonic_ns (void)
{
	return sp_mono_clock_ns (CLOCK_MONOTONIC);
}

/*
 * CPU time of the calling thread.  The cost model learns from it rather than
 * from the clock: a run preempted by the program (a control loop at a higher
 * priority, storing through barriers) is not longer work.  A system call (not
 * in the vDSO): read per run, never per unit.
 */
static uint64_t
sp_mono_thread_cpu_ns (void)
{
	return sp_mono_clock_ns (CLOCK_THREAD_CPUTIME_ID);
}

static void
sp_mono_warn (void *ctx, const char *message)
{
	(void)ctx;
	fprintf (stderr, "spmono: warning: %s\n", message);
}

/* Do stores need the barrier: in an incremental cycle, or to find what a delta holds (sp-delta.c)? */
static inline gboolean
sp_mono_guards_stores (void)
{
	return sp_options.mode == SP_MODE_INCREMENTAL || sp_options.delta;
}

/* sp-delta.c, for the barrier's slow paths and the incremental cycle before it. */
static gboolean sp_delta_between_snapshots (void);
static gboolean sp_delta_armed (void);
static void sp_delta_barrier (MonoObject *obj);
typedef enum {
	SP_DELTA_CYCLE_FULL,
	SP_DELTA_CYCLE_DELTA,
	SP_DELTA_CYCLE_FORGET_FIRST,      /* a full one is due, but the serializer holds the chain's LIDs: let go first */
} SpDeltaCycleKind;
static SpDeltaCycleKind sp_delta_cycle_kind (void);
static gboolean sp_delta_cycle_stopped (gboolean delta, SpError *err);
static void sp_delta_cycle_closed (gboolean failed);
static gboolean sp_delta_keep_after_cycle (uint64_t seq);
static gboolean sp_delta_clear_taken_step (void);
static void sp_delta_cycle_started (uint64_t seq, gboolean delta, uint64_t base);
static gboolean sp_delta_may_pipeline (uint64_t pending_seq);
static void sp_delta_cycle_failed (uint64_t seq);
static gboolean sp_delta_cycle_shortcut (MonoObject *obj, gint32 gen);
static gboolean sp_delta_note_locked (MonoObject *obj);
static void sp_delta_cycle_committed (uint64_t seq, uint64_t bytes, uint32_t crc);
static void sp_delta_forget (void);
static void sp_delta_failed (void);
static void sp_delta_force_full (const char *why);
static gboolean sp_delta_header (SpSnapHeader *h);
/* sp-fold-task.c */
static void sp_fold_store_lock (void);
static void sp_fold_store_unlock (void);
static gboolean sp_fold_retires (void);
static int sp_delta_adopt (const SpObjects *objects, const SpChainPart *parts, size_t n, const SpSnapshot *last, SpError *err);

/* sp-identity.c: where instances of klass keep their LID (0: they have no slot). */
static guint32 sp_mono_identity_slot_of (MonoClass *klass);

#endif
