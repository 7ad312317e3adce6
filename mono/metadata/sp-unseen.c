/*
 * sp-unseen.c: the address barrier's slow path, and the question the core
 * asks before it trusts a record (sp_client_changed_unseen).
 *
 * Part of the client (sp-mono-state.h), before sp-cycle.c.
 * The log and its invariants are spersist/sp-storelog.h; the JIT side is
 * mini/sp-jit.h (sp_jit_emit_address_barrier).
 *
 * While a cycle runs, a store through an address logs its range, unless it
 * is harmless:
 *
 *   - on the storing thread's own stack (a local reached by reference);
 *   - inside an object the object barrier has handled in this cycle on this
 *     thread (a pointer made by ldflda/ldelema/AsSpan: the object was
 *     written, or found not to be in the snapshot, before the pointer was
 *     made, so stores through it change nothing the snapshot holds).  Each
 *     thread remembers the last SP_SAFE_WAYS such objects, until the GC may
 *     have moved them (the GC epoch) or the cycle ends (the log's generation).
 *
 * What remains are stores through pointers made before SendPData or where
 * the JIT did not see the object: exactly the stores that could tear a
 * snapshot without anyone noticing.  Normal code logs nothing.
 *
 * Locking: sp_unseen.lock is an OS mutex held only around the log's own
 * work, never across a safepoint, so a thread waiting for it cannot hold up
 * a collection that the holder waits for.  Order: sp_lock, then this one.
 * The slow path logs before the store happens (it is the store's barrier)
 * and fences after, so a reader that saw the stored value sees the entry
 * (sp_client_changed_unseen fences before it looks).
 */
#include <mono/metadata/gc-internals.h>
#include <mono/sgen/sgen-gc.h>
#include <mono/metadata/object-internals.h>
#include <mono/utils/mono-os-mutex.h>
#include <mono/utils/mono-threads.h>
#include <mono/metadata/method-builder-ilgen.h>
#include <pthread.h>

#include "../spersist/sp-storelog.h"

/* Ranges before the log overflows (each 16 bytes, scanned conservatively by every collection). */
#define SP_UNSEEN_CAPACITY 16384
#define SP_SAFE_WAYS 4

static struct {
	mono_mutex_t lock;
	SpStoreLog log;
	gint32 gen;               /* advanced when the log is cleared: the threads' safe objects expire */
	gboolean warned;          /* the overflow was reported in this cycle */
	gboolean ready;
} sp_unseen;

/*
 * The thread's handled objects, [lo, hi) each, valid in one GC epoch and log
 * generation (a collection, a cycle's start (it stops the world) and its end
 * make them stale).  Initial-exec TLS: the thunk's check (sp_barrier_quick)
 * reads it with %fs-relative loads, no call.
 */
static __thread struct {
	uintptr_t lo [SP_SAFE_WAYS], hi [SP_SAFE_WAYS];
	guint32 epoch;
	gint32 gen;
	unsigned next;
	uintptr_t stack_lo, stack_hi;
} sp_thread_safe __attribute__ ((tls_model ("initial-exec")));

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * Is obj one of the objects this thread's barrier handled in this cycle and
 * GC epoch?  Then nothing more is saved or called: a loop storing into one
 * array, or into a few objects in turn (List<T>'s indexer stores into the
 * list and into its array, Dictionary's into three objects), stays on the
 * thunk's short path.
 */
int
sp_barrier_quick (uintptr_t obj)
{
	/* sp_world_stops is sp_client_gc_epoch (), read here without a call: a call could clobber xmm registers. */
	if (sp_thread_safe.epoch != __atomic_load_n ((guint32 *)&sp_world_stops, __ATOMIC_RELAXED) ||
	    sp_thread_safe.gen != __atomic_load_n (&sp_unseen.gen, __ATOMIC_ACQUIRE))
		return 0;
	_Static_assert (SP_SAFE_WAYS == 4, "sp_barrier_quick compares four ways without a loop");
	return (sp_thread_safe.lo [0] == obj) | (sp_thread_safe.lo [1] == obj) | (sp_thread_safe.lo [2] == obj) |
	       (sp_thread_safe.lo [3] == obj);
}
#endif

static void sp_native_init (void);

/* Incremental mode, at startup: the log, pinned as a conservative GC root (sp-storelog.h). */
static void
sp_unseen_init (void)
{
	if (sp_storelog_init (&sp_unseen.log, SP_UNSEEN_CAPACITY) < 0) {
		fprintf (stderr, "spmono: out of memory for the log of stores through pointers\n");
		exit (1);
	}
	mono_os_mutex_init (&sp_unseen.lock);
	mono_gc_register_root ((char *)sp_unseen.log.ranges, SP_UNSEEN_CAPACITY * sizeof (SpStoreRange), MONO_GC_DESCRIPTOR_NULL,
		MONO_ROOT_SOURCE_EXTERNAL, NULL, "spmono: stores through pointers during a cycle");
	sp_unseen.ready = TRUE;
	sp_native_init ();
}

/* After the barrier is disarmed (a cycle ended or failed): forget the cycle's stores. */
static void
sp_unseen_clear (void)
{
	if (!sp_unseen.ready)
		return;
	mono_os_mutex_lock (&sp_unseen.lock);
	sp_storelog_clear (&sp_unseen.log);
	sp_unseen.warned = FALSE;
	__atomic_add_fetch (&sp_unseen.gen, 1, __ATOMIC_RELEASE);
	mono_os_mutex_unlock (&sp_unseen.lock);
}

/*
 * The object barrier handled obj under generation gen (read before it
 * handled it): stores into it are harmless from now on, until that
 * generation ends.
 */
static void
sp_unseen_object_handled_in (MonoObject *obj, gint32 gen)
{
	if (!sp_unseen.ready)
		return;
	guint32 epoch = sp_client_gc_epoch ();
	if (sp_thread_safe.gen != gen || sp_thread_safe.epoch != epoch) {
		memset (sp_thread_safe.lo, 0, sizeof sp_thread_safe.lo);
		memset (sp_thread_safe.hi, 0, sizeof sp_thread_safe.hi);
		sp_thread_safe.gen = gen;
		sp_thread_safe.epoch = epoch;
	}
	unsigned way = sp_thread_safe.next++ % SP_SAFE_WAYS;
	sp_thread_safe.lo [way] = (uintptr_t)obj;
	sp_thread_safe.hi [way] = (uintptr_t)obj + mono_object_get_size_internal (obj);
}

/* The object barrier handled obj in the running cycle. */
static void
sp_unseen_object_handled (MonoObject *obj)
{
	sp_unseen_object_handled_in (obj, __atomic_load_n (&sp_unseen.gen, __ATOMIC_ACQUIRE));
}

static gboolean
sp_unseen_on_own_stack (uintptr_t lo, uintptr_t hi)
{
	if (!sp_thread_safe.stack_hi) {
		guint8 *start = NULL;
		size_t size = 0;
		mono_thread_info_get_stack_bounds (&start, &size);
		sp_thread_safe.stack_lo = (uintptr_t)start;
		sp_thread_safe.stack_hi = (uintptr_t)start + size;
	}
	return lo >= sp_thread_safe.stack_lo && hi <= sp_thread_safe.stack_hi;
}

static gboolean
sp_unseen_in_safe_object (uintptr_t lo, uintptr_t hi)
{
	if (sp_thread_safe.gen != __atomic_load_n (&sp_unseen.gen, __ATOMIC_ACQUIRE) || sp_thread_safe.epoch != sp_client_gc_epoch ())
		return FALSE;
	for (int i = 0; i < SP_SAFE_WAYS; i++)
		if (lo >= sp_thread_safe.lo [i] && hi <= sp_thread_safe.hi [i])
			return TRUE;
	return FALSE;
}

/* Did this thread's barrier handle obj in this cycle?  (On amd64 the thunk asked first: sp_barrier_quick.) */
static gboolean
sp_unseen_object_known (MonoObject *obj)
{
	return sp_unseen_in_safe_object ((uintptr_t)obj, (uintptr_t)obj + 1);
}

/*
 * Between the snapshots of a delta chain: is [lo, hi) in what this thread
 * allocated since the last snapshot?  Every world stop clears the threads'
 * allocation areas (SGen's TLABs): a collection does, and so does a
 * snapshot's instant (sp_delta_take).  So the thread's current area holds
 * only objects allocated after the last snapshot, which the chain does not
 * name yet: stores into them change nothing a delta must hold (a delta
 * writes such an object whole when it reaches it).
 */
static gboolean
sp_unseen_in_fresh_tlab (uintptr_t lo, uintptr_t hi)
{
	SgenThreadInfo *info = (SgenThreadInfo *)mono_thread_info_current ();
	return info && info->tlab_start && lo >= (uintptr_t)info->tlab_start && hi <= (uintptr_t)info->tlab_next;
}

/*
 * The thread's allocation area (SGen's TLAB) as its first address barrier of
 * this GC epoch found it.  Every cycle starts with the world stopped, which
 * starts a new epoch, so the record is taken after the cycle's start: the
 * objects this thread allocated above `mark` in that TLAB, and all of any
 * TLAB it took since, are younger than the snapshot and not part of it.
 * That is where the class library builds strings and buffers through
 * pointers (int.ToString, string.Concat, StringBuilder fill a new string by
 * address, with no object barrier): without this, a program formatting text
 * during a long cycle filled the log and had its snapshot refused.  The
 * object barrier asks too: a store into a young object needs no lock, and
 * while marking runs, nothing written (it used to write every persistable
 * object it met, young ones included, as unreferenced records).
 */
static __thread struct {
	SgenThreadInfo *info;   /* this thread's, kept: reading it through the runtime's TLS key is a call */
	guint32 epoch;
	char *tlab_start;
	char *mark;
} sp_thread_young __attribute__ ((tls_model ("initial-exec")));

static gboolean
sp_unseen_in_young_object (uintptr_t lo, uintptr_t hi)
{
	if (!sp_thread_young.info)
		sp_thread_young.info = (SgenThreadInfo *)mono_thread_info_current ();
	SgenThreadInfo *info = sp_thread_young.info;
	guint32 epoch = sp_client_gc_epoch ();
	if (!info)
		return FALSE;
	if (sp_thread_young.epoch != epoch || !sp_thread_young.mark) {
		sp_thread_young.epoch = epoch;
		sp_thread_young.tlab_start = info->tlab_start;
		sp_thread_young.mark = info->tlab_next;
		return FALSE;
	}
	/* A byte above the mark belongs to an object that starts above it: objects are allocated whole. */
	char *young = info->tlab_start == sp_thread_young.tlab_start ? sp_thread_young.mark : info->tlab_start;
	return young && lo >= (uintptr_t)young && hi <= (uintptr_t)info->tlab_next;
}

/*
 * Was [lo, hi) allocated by this thread since the running snapshot's instant
 * (or, with deltas between snapshots, since the last one's)?  Then stores
 * into it change nothing a snapshot holds.  With deltas every instant clears
 * the allocation areas (sp_delta_take_stopped), so the whole current one is
 * young too: each test sees objects the other misses (the first area after
 * the instant, below where the first address barrier found it; the areas
 * between the first and the current one are seen by neither).
 */
static gboolean
sp_unseen_young (uintptr_t lo, uintptr_t hi)
{
	return sp_unseen_in_young_object (lo, hi) || (sp_delta_armed () && sp_unseen_in_fresh_tlab (lo, hi));
}

/*
 * The large object (SGen's LOS: arrays and strings over 8,000 bytes) holding
 * [lo, hi), or NULL.  Such an object never moves.  SGen's list of them is
 * built for readers that hold no lock: an object is pushed at its head
 * complete (a write barrier before it is published), and taken out only by
 * the sweep after a major collection, with the world stopped, while this
 * thread, in GC-unsafe mode, is not here.  (Taking the GC lock instead was
 * tried: a thread stopping the world holds it while it waits for this one
 * to reach a safepoint, so lookups failed and stores piled into the log.)
 * A store into a large object then gets the object barrier (its state
 * before the store is written first), as if the pointer had been made in
 * this cycle: covered, not refused.  Objects in the nursery and the major
 * heap have no index from an address that is safe to read while other
 * threads allocate, so a store into one is still logged.
 */
static MonoObject *
sp_unseen_large_object (uintptr_t lo, uintptr_t hi)
{
	char *start = NULL;
	if (sgen_ptr_in_nursery ((void *)lo) || !sgen_ptr_is_in_los ((char *)lo, &start))
		return NULL;
	return hi <= (uintptr_t)start + mono_object_get_size_internal ((MonoObject *)start) ? (MonoObject *)start : NULL;
}

/* A store of len bytes at lo (SP_STORELOG_REST: to the end of its object) is about to happen. */
static void
sp_unseen_store (uintptr_t lo, uintptr_t len)
{
	if (!sp_unseen.ready || len == 0)
		return;
	/* For the harmless tests a REST store is its first byte: it stays inside that byte's object. */
	uintptr_t hi = len == SP_STORELOG_REST || len > UINTPTR_MAX - lo ? lo + 1 : lo + len;
	if (sp_unseen_on_own_stack (lo, hi) || sp_unseen_in_safe_object (lo, hi))
		return;
	if (sp_unseen_young (lo, hi))
		return;
	MonoObject *large = sp_unseen_large_object (lo, hi);
	if (large) {
		sp_barrier_store (large);
		return;
	}
	gboolean report = FALSE;
	mono_os_mutex_lock (&sp_unseen.lock);
	/* The cycle may have ended since the inline test: its log is cleared only after the barrier is disarmed. */
	if (__atomic_load_n (&sp_barrier_active, __ATOMIC_ACQUIRE) && !sp_storelog_add (&sp_unseen.log, lo, len) && !sp_unseen.warned)
		report = sp_unseen.warned = TRUE;
	mono_os_mutex_unlock (&sp_unseen.lock);
	__atomic_thread_fence (__ATOMIC_SEQ_CST);
	if (report && !sp_delta_between_snapshots ())
		fprintf (stderr, "spmono: more than %u stores through pointers no barrier saw during one cycle: "
			"they cannot all be checked, so this snapshot will not be committed\n", SP_UNSEEN_CAPACITY);
}

/*
 * With the world stopped and the nursery walkable (sgen_clear_nursery_fragments):
 * the nursery object that holds addr, found from the scan start before it, as
 * pinning does.  NULL when addr is in a free fragment (a phony array SGen
 * made of it) or nowhere.
 */
static MonoObject *
sp_unseen_nursery_object_at (char *addr)
{
	GCMemSection *section = sgen_nursery_section;
	size_t idx = (size_t)(addr - section->data) / SGEN_SCAN_START_SIZE;
	char *p = section->scan_starts [idx];
	while ((!p || p > addr) && idx)
		p = section->scan_starts [--idx];
	if (!p || p > addr)
		p = section->data;
	while (p <= addr) {
		if (!*(void **)p) {             /* zeroed: an allocation area's unused end */
			p += sizeof (gpointer);
			continue;
		}
		size_t size = SGEN_ALIGN_UP (sgen_safe_object_get_size ((GCObject *)p));
		if (addr < p + size)
			return sgen_client_object_is_array_fill ((GCObject *)p) ? NULL : (MonoObject *)p;
		p += size;
	}
	return NULL;
}

/*
 * With the world stopped: the object that holds addr.  *in_heap is FALSE when
 * addr is not in the GC's heap at all (static fields, native memory): no
 * object of any snapshot is there.
 */
static MonoObject *
sp_unseen_object_at (uintptr_t addr, gboolean *in_heap)
{
	char *p = (char *)addr, *start = NULL;
	*in_heap = TRUE;
	if (sgen_ptr_in_nursery (p))
		return sp_unseen_nursery_object_at (p);
	if (sgen_ptr_is_in_los (p, &start))
		return (MonoObject *)start;
	sgen_major_collector.ptr_is_in_non_pinned_space (p, &start);
	if (start)
		return sgen_major_collector.is_valid_object (start) ? (MonoObject *)start : NULL;
	*in_heap = FALSE;
	return NULL;
}

/*
 * Between a chain's snapshots, at the next one's instant (the world stopped):
 * the objects the logged stores fell into, each handed to `found`.  FALSE when
 * one cannot be known (the log overflowed, or a store fell where no object
 * is found): the snapshot must then not be a delta.
 */
static gboolean
sp_unseen_objects_logged (void (*found) (MonoObject *obj))
{
	if (!sp_unseen.ready)
		return TRUE;
	if (sp_unseen.log.overflowed)
		return FALSE;
	gboolean walkable = FALSE;
	for (uint32_t i = 0; i < sp_unseen.log.count; i++) {
		gboolean in_heap;
		/*
		 * The nursery's free fragments hold what collections left there: they
		 * are marked (as SGen's heap walk does, mono_gc_walk_heap) so that the
		 * nursery can be walked forward from its scan starts.
		 */
		if (!walkable && sgen_ptr_in_nursery ((void *)sp_unseen.log.ranges [i].lo)) {
			sgen_clear_nursery_fragments ();
			walkable = TRUE;
		}
		MonoObject *obj = sp_unseen_object_at (sp_unseen.log.ranges [i].lo, &in_heap);
		if (obj)
			found (obj);
		else if (in_heap)
			return FALSE;
	}
	return TRUE;
}

void
sp_barrier_store_addr (gpointer addr)
{
	/* One byte stands for the store: it identifies the object and, within an array, the piece. */
	sp_unseen_store ((uintptr_t)addr, 1);
}

void
sp_barrier_store_range (gpointer dest, gsize len)
{
	sp_unseen_store ((uintptr_t)dest, len == (gsize)-1 ? SP_STORELOG_REST : (uintptr_t)len);
}

/* sp_client_changed_unseen once the log holds stores: does one touch obj's bytes? */
static __attribute__ ((noinline)) bool
sp_mono_log_touches (void *obj, const void *from, const void *to)
{
	uintptr_t lo = (uintptr_t)obj, hi = lo + mono_object_get_size_internal ((MonoObject *)obj);
	mono_os_mutex_lock (&sp_unseen.lock);
	bool touched = sp_storelog_touches (&sp_unseen.log, lo, hi, from ? (uintptr_t)from : lo, to ? (uintptr_t)to : hi);
	mono_os_mutex_unlock (&sp_unseen.lock);
	return touched;
}

SP_CLIENT_HOT bool
sp_client_changed_unseen (void *obj, const void *from, const void *to)
{
	/*
	 * Order the record's reads of obj before the reads of the log (see the
	 * top of this file).  An acquire fence is enough: the storing thread's
	 * full fence between its log entry and its store pairs with it.  (Once
	 * per record: on x86 it costs no instruction, where a full fence would.)
	 */
	__atomic_thread_fence (__ATOMIC_ACQUIRE);
	if (!__atomic_load_n (&sp_unseen.log.count, __ATOMIC_RELAXED) && !__atomic_load_n (&sp_unseen.log.overflowed, __ATOMIC_RELAXED))
		return false;
	return sp_mono_log_touches (obj, from, to);
}

/* ---- native code in flight -------------------------------------------------
 *
 * A P/Invoke's native code runs in GC-safe mode: the world stops without it,
 * so a cycle can start while it is still writing into the arrays and objects
 * it was given by address, and none of those writes meets a barrier (the
 * barrier before the call ran under the cycle before, or none).  So each
 * thread keeps the addresses it handed to the native code it is in: the
 * native wrapper (runtime-patches/0007) calls sp_native_arg_enter for each
 * argument native code may write through (a blittable array or class, a
 * `ref`), just before it enters GC-safe mode, and sp_native_args_leave just
 * after it comes back, with nothing between that can throw.  A cycle's start
 * logs every address in flight as a store to the end of its object: if the
 * snapshot reaches one, the cycle fails (WaitPersisted says why), whether or
 * not the native code did write after the start; an argument declared [In]
 * only is not recorded.  Such an argument is pinned while the call runs (the
 * wrapper pins what it passes by address), so the address stays its own.
 *
 * Records are per thread, found by the start through sp_native.all (a
 * thread's record is reused by a later thread once it has exited); they are
 * read with the world stopped, when no thread can be between entering and
 * leaving here (both run in GC-unsafe mode; a thread coming back from native
 * code parks before it leaves).
 */
#define SP_NATIVE_ARGS 16           /* addresses kept per thread; past it the start cannot tell */
#define SP_NATIVE_THREADS 4096      /* records; past it, threads are not told apart either */

typedef struct SpNativeCalls {
	uintptr_t addr [SP_NATIVE_ARGS];
	gint32 depth;                   /* arguments in flight (nested calls add up), may exceed SP_NATIVE_ARGS */
	gint32 in_use;
} SpNativeCalls;

static struct {
	SpNativeCalls *all [SP_NATIVE_THREADS];
	gint32 count;
	SpNativeCalls shared;           /* for threads past SP_NATIVE_THREADS: depth only */
	pthread_key_t key;
	gboolean ready;
} sp_native;

static __thread SpNativeCalls *sp_native_mine;

static void
sp_native_thread_exit (void *record)
{
	SpNativeCalls *c = record;
	c->depth = 0;
	__atomic_store_n (&c->in_use, 0, __ATOMIC_RELEASE);
}

static SpNativeCalls *
sp_native_attach (void)
{
	SpNativeCalls *c = NULL;
	gint32 n = __atomic_load_n (&sp_native.count, __ATOMIC_ACQUIRE);
	for (gint32 i = 0; i < n && !c; i++) {
		gint32 free_slot = 0;
		if (sp_native.all [i] && __atomic_compare_exchange_n (&sp_native.all [i]->in_use, &free_slot, 1, FALSE,
								       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			c = sp_native.all [i];
	}
	if (!c) {
		gint32 i = __atomic_fetch_add (&sp_native.count, 1, __ATOMIC_ACQ_REL);
		if (i >= SP_NATIVE_THREADS)
			return sp_native_mine = &sp_native.shared;
		c = g_new0 (SpNativeCalls, 1);
		c->in_use = 1;
		__atomic_store_n (&sp_native.all [i], c, __ATOMIC_RELEASE);
	}
	if (sp_native.ready)
		pthread_setspecific (sp_native.key, c);
	return sp_native_mine = c;
}

void
sp_native_arg_enter (gpointer addr)
{
	SpNativeCalls *c = sp_native_mine ? sp_native_mine : sp_native_attach ();
	if (c == &sp_native.shared) {
		__atomic_add_fetch (&c->depth, 1, __ATOMIC_RELEASE);
		return;
	}
	if (c->depth >= 0 && c->depth < SP_NATIVE_ARGS)
		c->addr [c->depth] = (uintptr_t)addr;
	__atomic_store_n (&c->depth, c->depth + 1, __ATOMIC_RELEASE);
}

void
sp_native_args_leave (gint32 n)
{
	SpNativeCalls *c = sp_native_mine;
	if (c)
		__atomic_sub_fetch (&c->depth, n, __ATOMIC_RELEASE);
}

static void
sp_native_init (void)
{
	sp_native.ready = pthread_key_create (&sp_native.key, sp_native_thread_exit) == 0;
}

/*
 * With the world stopped, at a cycle's start: log what native code may be
 * writing.  Returns FALSE when it cannot tell (too many arguments in flight
 * on a thread, or a thread without a record of its own): the cycle fails.
 */
/* Is any thread in native code with arguments it may write (or unknown)?  The world is stopped. */
static gboolean
sp_native_any_in_flight (void)
{
	if (__atomic_load_n (&sp_native.shared.depth, __ATOMIC_ACQUIRE))
		return TRUE;
	gint32 n = MIN (__atomic_load_n (&sp_native.count, __ATOMIC_ACQUIRE), SP_NATIVE_THREADS);
	for (gint32 i = 0; i < n; i++) {
		SpNativeCalls *c = __atomic_load_n (&sp_native.all [i], __ATOMIC_ACQUIRE);
		if (c && __atomic_load_n (&c->depth, __ATOMIC_ACQUIRE))
			return TRUE;
	}
	return FALSE;
}

static gboolean
sp_native_log_in_flight (void)
{
	gboolean known = __atomic_load_n (&sp_native.shared.depth, __ATOMIC_ACQUIRE) == 0;
	gint32 n = MIN (__atomic_load_n (&sp_native.count, __ATOMIC_ACQUIRE), SP_NATIVE_THREADS);
	mono_os_mutex_lock (&sp_unseen.lock);
	for (gint32 i = 0; i < n; i++) {
		SpNativeCalls *c = __atomic_load_n (&sp_native.all [i], __ATOMIC_ACQUIRE);
		gint32 depth = c ? __atomic_load_n (&c->depth, __ATOMIC_ACQUIRE) : 0;
		if (depth > SP_NATIVE_ARGS)
			known = FALSE;
		for (gint32 k = 0; k < depth && k < SP_NATIVE_ARGS; k++)
			if (c->addr [k]) {
				sp_storelog_add (&sp_unseen.log, c->addr [k], SP_STORELOG_REST);
			}
	}
	if (!known)
		sp_unseen.log.overflowed = true;      /* every record's check answers "may have changed" */
	mono_os_mutex_unlock (&sp_unseen.lock);
	return known;
}

/* Does native code write through parameter t (by address: a blittable array or class, a ref), unless declared [In] only? */
static gboolean
sp_native_param_written (MonoType *t)
{
	if ((t->attrs & PARAM_ATTRIBUTE_IN) && !(t->attrs & PARAM_ATTRIBUTE_OUT))
		return FALSE;
	if (t->byref)
		return TRUE;
	MonoClass *k = mono_class_from_mono_type_internal (t);
	if (t->type == MONO_TYPE_SZARRAY)
		return m_class_is_blittable (m_class_get_element_class (k));
	return t->type == MONO_TYPE_CLASS && m_class_is_blittable (k);
}

/* conv.u's byte (mono/cil/opcode.def; each IL emitter of Mono's defines its own names for them). */
#define SP_CIL_CONV_U 0xE0

int
sp_mono_emit_native_args_enter (MonoMethodBuilder *mb, MonoMethodSignature *sig, int param_shift)
{
	if (!sp_mono_guards_stores ())
		return 0;
	int count = 0;
	for (int i = 0; i < sig->param_count; i++) {
		if (!sp_native_param_written (sig->params [i]))
			continue;
		mono_mb_emit_ldarg (mb, i + param_shift);
		if (!sig->params [i]->byref)
			mono_mb_emit_byte (mb, SP_CIL_CONV_U);   /* the object's address */
		mono_mb_emit_icall (mb, sp_native_arg_enter);
		count++;
	}
	return count;
}

void
sp_mono_emit_native_args_leave (MonoMethodBuilder *mb, int count)
{
	if (!count)
		return;
	mono_mb_emit_icon (mb, count);
	mono_mb_emit_icall (mb, sp_native_args_leave);
}
