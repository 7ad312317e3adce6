/*
 * sp-restore.c: a snapshot into live objects (part of the client, see
 * sp-mono-state.h).  The core validates and walks the records
 * (sp_snapshot_decode); this file gives it Mono's side: resolve each class of
 * the class cache to a live class by name (the core matches their fields, or
 * plans the change: sp-evolve.h), allocate every object
 * without running a constructor (construction), store references checked for
 * type as the walk meets them (links: an object made early of the declared
 * class where its record comes later, sp_mono_restore_link) or after it
 * (fix-up), and make the snapshot's roots the registered ones.
 *
 * Objects of plain classes skip the runtime's per-object allocation path: in
 * the nursery they are bumped inline in the thread's allocation buffer, in
 * the old generation (a state the nursery cannot hold) in a whole block taken
 * under one GC lock (sp_mono_restore_new_object).
 */
#include <mono/metadata/gc-internals.h>
#include <mono/sgen/sgen-gc.h>
#include <mono/sgen/sgen-memory-governor.h>
#include <mono/utils/mono-memory-model.h>
#include <mono/utils/mono-lazy-init.h>


/*
 * Objects allocated in the old generation a whole block at a time, per
 * class: the restore takes a new major block under the GC lock
 * (sgen_major_alloc_bulk_block, runtime patch 0014) and bumps through its
 * slots inline, as in the nursery (sp_mono_restore_alloc_mature).  SGen's own
 * path (alloc_degraded: a free-list slot under the GC lock, which a batch of
 * 32 only amortised) was about 150 instructions an object, a quarter of a
 * 1,000,000-node restore's.  A block is given back to SGen by a major
 * collection: its count read in the critical region, where no collection
 * can start, tells the restore to take a new one; the unused slots are zero,
 * free at the block's next sweep.  When SGen refuses a block (a concurrent
 * collection under way, no room), the next SP_MATURE_REFUSED_RUN objects of
 * the class go through the runtime one by one before asking again.
 */
#define SP_MATURE_BLOCKS 8
#define SP_MATURE_REFUSED_RUN 256
typedef struct SpMatureBlock {
	MonoVTable *vtable;
	char *next, *end;            /* its slots not handed out yet */
	size_t stride;
	gint32 major_count;          /* major collections when it was taken: one more and it is the GC's again */
	uint32_t refused;            /* objects left to allocate through the runtime after a refusal */
} SpMatureBlock;

/* A field, a class of target, and whether the class is assignable to the field's declared type. */
#define SP_FITS_CACHE 16
typedef struct SpFits {
	const SpField *field;
	MonoClass *klass;
	gboolean fits;
} SpFits;

typedef struct SpRestore {
	SpObjects objects;           /* LID -> restored object: a GC root while `rooted` (sp_mono_restore_begin) */
	gboolean rooted;
	char *nursery_start;         /* SGen's nursery, fixed while the runtime runs: a fix-up store's test without its globals */
	mword nursery_mask;
	FILE *announce;              /* where to say what changed (the program's restore: stderr; --sp-check: stdout), or NULL */
	guint32 evolved;             /* classes restored across a change of their fields */
	gboolean for_program;        /* the program's restore: its upgrade hooks and unknown data are kept */
	SpUpgrades upgrades;         /* old values of changed objects, for their upgrade hooks */
	SpUnknownPending unknown;    /* unknown data: what the changed objects carry on */
	const SpSnapClass *hook_class; /* the last class whose objects' old values came, and whether it has hooks */
	gboolean hooked;
	gboolean mature;             /* objects allocated in the old generation: the state outgrows the nursery */
	SgenThreadInfo *gc_thread;   /* the restoring thread's, for sp_mono_restore_alloc_inline */
	MonoVTable *inline_vtable;   /* the last class allocated, and its size inline (0: through the runtime) */
	size_t inline_size;
	MonoVTable *nursery_vtable;  /* inline_vtable where its objects are allocated in the nursery inline, else NULL */
	SpMatureBlock mature_blocks [SP_MATURE_BLOCKS];
	uint32_t mature_evict;       /* the block a new class takes next */
	MonoVTable *mature_vtable;   /* inline_vtable where its objects are allocated in the old generation inline, else NULL */
	SpMatureBlock *mature_block; /* mature_vtable's */
	uint32_t blocks_taken, blocks_refused; /* of the old generation, for --sp-verbose */
	gboolean early_missed;       /* an object made early (sp_mono_restore_link) was not of its record's class */
	guint32 linked, fixed;       /* references stored as the walk met them, and by the fix-up (--sp-verbose) */
	SpFits fits [SP_FITS_CACHE]; /* whether a class fits a field's declared type, for links (sp_mono_restore_fits) */
	GHashTable *extended;        /* image -> the set of its type definitions' tokens another one extends (sp_mono_class_has_subclasses) */
	gboolean test_refuse_blocks; /* SPMONO_TEST_REFUSE_BLOCKS: every other block refused (sp_mono_restore_take_block) */
	uint32_t test_block_requests;
} SpRestore;

/*
 * What a restore may allocate, about, from the snapshot's size: the objects
 * stay live until it ends, so SGen need not count them toward a major
 * collection meanwhile (runtime patch 0011).  A generous bound (an object is
 * 1.9 times its record for the benchmark's tree, a string twice its Latin-1
 * bytes) only postpones collecting other threads' garbage until the restore
 * ends; a short one lets a major run that frees nothing of it.
 */
static void
sp_mono_restore_expect (size_t snapshot_bytes)
{
	sgen_memgov_expect_bulk_load ((mword)snapshot_bytes * 4);
}

/*
 * Whether a restore of snapshot_bytes allocates its objects in the old
 * generation.  Every restored object stays live, so when the state is
 * larger than the nursery (an object is about twice its record), minor
 * collections would copy them all out of it as the restore makes them, and
 * scan the LID array's cards each time: at 1,000,000 tree nodes that was
 * about half a restore.  Allocating them mature takes the GC lock per
 * object instead, which costs more than the copies for a state the nursery
 * holds (25,000 nodes: 2.2 ms against 1.5).
 */
static gboolean
sp_mono_restore_outgrows_nursery (size_t snapshot_bytes)
{
	int shift;
	size_t nursery = 0;
	mono_gc_get_nursery (&shift, &nursery);
	return nursery && (uint64_t)snapshot_bytes * 2 > nursery;
}

/* SGen's marker of a restore's object table (a user root: SGen knows its address, not its length). */
static void
sp_mono_restore_mark_objects (void *addr, MonoGCMarkFunc mark_func, void *gc_data)
{
	SpObjects *t = (SpObjects *)addr;
	for (guint32 lid = 1; lid < t->count; lid++)
		if (t->slots [lid])
			mark_func (&t->slots [lid], gc_data);
}

/* Made once: SGen has room for 16 user markers in all. */
static MonoGCDescriptor sp_mono_restore_objects_marker;
static mono_lazy_init_t sp_mono_restore_objects_marker_made = MONO_LAZY_INIT_STATUS_NOT_INITIALIZED;

static void
sp_mono_restore_make_objects_marker (void)
{
	sp_mono_restore_objects_marker = mono_gc_make_root_descr_user (sp_mono_restore_mark_objects);
}

static MonoGCDescriptor
sp_mono_restore_objects_descr (void)
{
	mono_lazy_initialize (&sp_mono_restore_objects_marker_made, sp_mono_restore_make_objects_marker);
	return sp_mono_restore_objects_marker;
}

/*
 * The object table: native memory registered as a precise root, not a
 * managed array.  Restored into a managed array (sessions before 41), a
 * 25,000-object table was a 200 KB large object that SGen mapped fresh for
 * every restore and unmapped as it died: 51 page faults, 150-190 us of a
 * 1.3-1.9 ms decode; and every store into it marked a card.  malloc gives
 * a restore the pages the last one freed, and a root needs no card: SGen
 * scans all of its slots at every collection (during a restore only).
 */
static int
sp_mono_restore_begin (void *ctx, const SpSnapTrailer *t, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	r->objects.slots = calloc ((size_t)t->nobjects + 1, sizeof (MonoObject *));
	if (!r->objects.slots)
		return sp_error_set (err, "out of memory for %u objects", t->nobjects);
	r->objects.count = t->nobjects + 1;
	mono_gc_register_root ((char *)&r->objects, sizeof r->objects, sp_mono_restore_objects_descr (), MONO_ROOT_SOURCE_EXTERNAL,
			       NULL, "spmono: a restore's objects by LID");
	r->rooted = TRUE;
	r->nursery_start = sgen_get_nursery_start ();
	r->nursery_mask = ~(((mword)1 << sgen_nursery_bits) - 1);
	r->gc_thread = mono_tls_get_sgen_thread_info ();
	return 0;
}

/* Type `name` in `assembly` ("Name, Version=...": the version is informative; the layout check decides), or NULL. */
static MonoType *
sp_mono_restore_type (const char *name, const char *assembly, MonoImage *image)
{
	char *qualified = NULL;
	if (assembly) {
		const char *comma = strchr (assembly, ',');
		qualified = g_strdup_printf ("%s, %.*s", name, (int)(comma ? comma - assembly : (long)strlen (assembly)), assembly);
	}
	/* Assemblies are looked for where the program is (Mono needs an image for that). */
	MonoImage *program = sp_renames_program ();
	MonoImage *context = image ? image : program ? program : mono_defaults.corlib;
	ERROR_DECL (error);
	MonoType *type = mono_reflection_type_from_name_checked (qualified ? qualified : (char *)name, context, error);
	g_free (qualified);
	if (!is_ok (error))
		type = NULL;
	mono_error_cleanup (error);
	return type;
}

/*
 * The type a snapshot's class is now, under a name the program declares as
 * its former one (sp-renames.c), or NULL.  Said where the restore says what
 * changed (r->announce).
 */
static MonoType *
sp_mono_restore_renamed_type (SpRestore *r, const SpSnapClass *sc)
{
	MonoClass *top;
	char *now = sp_renames_rewrite (sc->name, TRUE, &top);
	if (!now)
		return NULL;
	/* The renamed class's name alone in its own image; a generic type or array of it where the snapshot's class lives. */
	MonoType *type = top ? sp_mono_restore_type (now, NULL, m_class_get_image (top)) : sp_mono_restore_type (now, sc->assembly, NULL);
	if (type && r->announce)
		fprintf (r->announce, "spmono: class %s is now %s (its FormerNames say so)\n", sc->name, now);
	g_free (now);
	return type;
}

/*
 * The live class map and vtable of a class of the snapshot's class cache,
 * found by its name or a former one (the decoder then checks its kind and
 * plans its leaves against the snapshot's: sp-evolve.h).
 */
static int
sp_mono_restore_resolve (void *ctx, SpSnapClass *sc, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	/* A class of the snapshot's name wins over one that declares it a former name. */
	MonoType *type = sp_mono_restore_type (sc->name, sc->assembly, NULL);
	gboolean renamed = !type && (type = sp_mono_restore_renamed_type (r, sc)) != NULL;
	if (!type)
		return sp_error_set (err, "class %s from assembly %s cannot be found (a class that was renamed or moved "
				     "restores when it declares [SPersistent (FormerNames = new [] { \"%s\" })])",
				     sc->name, sc->assembly, sc->name);
	/* A chain holds one name of a class: after a rename the next snapshot is full, as after any change (sp_mono_decode). */
	if (sp_renames_field_types (sc) || renamed)
		r->evolved++;
	MonoClass *klass = mono_class_from_mono_type_internal (type);
	ERROR_DECL (error);
	sc->keep_old = r->for_program && sc->kind == SP_CLASS_OBJECT && sp_upgrades_wanted (klass);
	SpClass *live = sp_mono_class_map (klass, err);
	if (!live)
		return -1;
	/* Said by --sp-check too, so decided for every restore; only the program's keeps the values. */
	sc->keep_unknown = sc->kind == SP_CLASS_OBJECT && !live->drop_unknown;
	if (live->kind == SP_CLASS_OBJECT && (mono_class_is_abstract (klass) || mono_class_is_interface (klass)))
		return sp_error_set (err, "class %s is abstract and cannot have instances", sc->name);
	MonoVTable *vtable = mono_class_vtable_checked (mono_domain_get (), klass, error);
	if (!is_ok (error)) {
		sp_error_set (err, "class %s cannot be instantiated: %s", sc->name, mono_error_get_message (error));
		mono_error_cleanup (error);
		return -1;
	}
	sc->resolved = live;
	sc->restorer_data = vtable;
	return 0;
}

static inline __attribute__ ((always_inline)) void *
sp_mono_restore_base (void *ctx, uint32_t lid, uint8_t kind)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *obj = sp_objects_get (&r->objects, lid);
	if (kind == SP_CLASS_OBJECT)
		return obj;
	return kind == SP_CLASS_ARRAY ? sp_client_array_data (obj) : (void *)mono_string_chars_internal ((MonoString *)obj);
}

/*
 * SGen's critical region, entered with a store a compiler fence keeps in
 * order where SGen's ENTER_CRITICAL_REGION has a full barrier (a locked
 * instruction an object: 11% of construction's samples, 3.5% of a
 * 25,000-node decode).  On Linux, a thread running in GC-unsafe mode is
 * stopped by a signal (preemptive and hybrid suspend; cooperative suspend
 * never stops it here): the handler runs on this thread, after every store
 * before the interrupted instruction, and hands its state to the suspending
 * thread through a semaphore, which publishes them; that thread then reads
 * the flag (is_thread_in_critical_region).  Elsewhere, SGen's own macros.
 */
#ifdef __linux__
#define SP_ENTER_ALLOC_REGION do { *(volatile gint32 *)&IN_CRITICAL_REGION = 1; __atomic_signal_fence (__ATOMIC_SEQ_CST); } while (0)
#define SP_EXIT_ALLOC_REGION do { __atomic_signal_fence (__ATOMIC_SEQ_CST); *(volatile gint32 *)&IN_CRITICAL_REGION = 0; } while (0)
#else
#define SP_ENTER_ALLOC_REGION ENTER_CRITICAL_REGION
#define SP_EXIT_ALLOC_REGION EXIT_CRITICAL_REGION
#endif

/*
 * An object allocated in the nursery inline: the restoring thread's
 * allocation buffer bumped, as the JIT's managed allocator and SGen's own
 * fast path do (sgen_try_alloc_obj_nolock; the buffer's memory is zeroed when
 * SGen hands it out), inside SGen's critical region so that a thread
 * suspended halfway is restarted rather than collected with a gap in the
 * nursery.  NULL when the buffer's window is used up: the runtime's path
 * then takes the next one.  Through the runtime (mono_object_new_alloc_
 * specific_checked, mono_gc_alloc_obj, sgen_alloc_obj, the thread's TLS) a
 * 25,000-node restore spent 18% of its time allocating.
 */
static inline MonoObject *
sp_mono_restore_alloc_inline (SpRestore *r, MonoVTable *vtable, size_t size)
{
	SgenThreadInfo *__thread_info__ = r->gc_thread;
	MonoObject *obj = NULL;
	SP_ENTER_ALLOC_REGION;
	char *p = __thread_info__->tlab_next, *next = p + size;
	if (G_LIKELY (next < __thread_info__->tlab_temp_end)) {
		__thread_info__->tlab_next = next;
		*(MonoVTable **)p = vtable;
		obj = (MonoObject *)p;
	}
	SP_EXIT_ALLOC_REGION;
	return obj;
}

/*
 * How far ahead of the slot it hands out a block's next lines are asked for,
 * for writing: a restore writes each object's lines for the first time, and
 * without the hint every object's first store waited for its line (the
 * JVM's allocation prefetch does the same).  Warm decodes of 1,000,000 tree
 * nodes, heap kept: medians 27.6-27.9 ms against 28.6-33.2 without; 1, 2 and
 * 4 KB ahead measured alike, 256 bytes less well.
 */
#define SP_RESTORE_PREFETCH_AHEAD 2048

/* The slot block b hands out next, its vtable stored, or NULL when it has none (or a major collection took it back). */
static inline MonoObject *
sp_mono_restore_bump_mature (SpRestore *r, SpMatureBlock *b)
{
	SgenThreadInfo *__thread_info__ = r->gc_thread;
	MonoObject *obj = NULL;
	SP_ENTER_ALLOC_REGION;
	char *p = b->next;
	if (G_LIKELY (p < b->end && *(volatile gint32 *)&mono_gc_stats.major_gc_count == b->major_count)) {
		b->next = p + b->stride;
		__builtin_prefetch (p + SP_RESTORE_PREFETCH_AHEAD, 1, 3);   /* no fault: a hint, past the block's end too */
		*(MonoVTable **)p = b->vtable;
		obj = (MonoObject *)p;
	}
	SP_EXIT_ALLOC_REGION;
	return obj;
}

/* The block of `vtable`'s objects: the one it had, else the least recently taken one is let go. */
static SpMatureBlock *
sp_mono_restore_mature_block (SpRestore *r, MonoVTable *vtable)
{
	for (int i = 0; i < SP_MATURE_BLOCKS; i++)
		if (r->mature_blocks [i].vtable == vtable)
			return &r->mature_blocks [i];
	SpMatureBlock *b = &r->mature_blocks [r->mature_evict++ % SP_MATURE_BLOCKS];
	memset (b, 0, sizeof *b);   /* its unused slots are free at the block's next sweep */
	b->vtable = vtable;
	return b;
}

/* A new block for b from SGen (above); FALSE when it refuses one. */
static gboolean
sp_mono_restore_take_block (SpRestore *r, SpMatureBlock *b)
{
	if (b->refused) {
		b->refused--;
		return FALSE;
	}
	char *end = NULL;
	size_t stride = 0;
	/* Tests: a refusal, as during a concurrent collection, every other time (both paths, and the way between them). */
	gboolean refused = r->test_refuse_blocks && (r->test_block_requests++ & 1) == 0;
	sgen_gc_lock ();
	char *start = refused ? NULL : sgen_major_alloc_bulk_block ((GCVTable)b->vtable, r->inline_size, &stride, &end);
	b->major_count = mono_gc_stats.major_gc_count;   /* no collection starts under the GC lock */
	sgen_gc_unlock ();
	if (!start) {
		b->next = b->end = NULL;
		b->refused = SP_MATURE_REFUSED_RUN;
		r->blocks_refused++;
		return FALSE;
	}
	r->blocks_taken++;
	b->next = start;
	b->end = end;
	b->stride = stride;
	/* Counted whole, as the nursery's buffers are: what is left unused is garbage at the next major collection. */
	r->gc_thread->total_bytes_allocated += (gint64)(end - start);
	return TRUE;
}

/* An object of the old generation from the class's block (above); NULL when SGen will not give one. */
static MonoObject *
sp_mono_restore_alloc_mature (SpRestore *r)
{
	SpMatureBlock *b = r->mature_block;
	MonoObject *obj = sp_mono_restore_bump_mature (r, b);
	if (G_LIKELY (obj))
		return obj;
	/* A block taken just now may be lost to a collection before its first slot: then the runtime's path. */
	return sp_mono_restore_take_block (r, b) ? sp_mono_restore_bump_mature (r, b) : NULL;
}

/*
 * The size objects of `vtable` are allocated at without the runtime's
 * per-object path (inline in the nursery, or in a block of the old generation),
 * 0 when they must go through it: a finalizer or weak fields to register, an
 * allocation the profiler or SGen's debugging options watch, an object too
 * large for the buffer.
 */
static size_t
sp_mono_restore_inline_size (SpRestore *r, MonoVTable *vtable)
{
	MonoClass *klass = vtable->klass;
	size_t size = SGEN_ALIGN_UP ((size_t)m_class_get_instance_size (klass));
	if (!r->gc_thread || m_class_has_finalize (klass) || m_class_has_weak_fields (klass) ||
	    mono_profiler_allocations_enabled () || sgen_has_per_allocation_action || sgen_nursery_canaries_enabled () ||
	    size > SGEN_MAX_SMALL_OBJ_SIZE)
		return 0;
	return size;
}

/* An object of a class: inline where it can be (above), else through the runtime. */
static MonoObject *
sp_mono_restore_new_object (SpRestore *r, MonoVTable *vtable, MonoError *error)
{
	if (vtable != r->inline_vtable) {
		r->inline_vtable = vtable;
		r->inline_size = sp_mono_restore_inline_size (r, vtable);
		r->nursery_vtable = r->inline_size && !r->mature ? vtable : NULL;
		r->mature_vtable = r->inline_size && r->mature ? vtable : NULL;
		r->mature_block = r->mature_vtable ? sp_mono_restore_mature_block (r, vtable) : NULL;
	}
	MonoObject *obj = NULL;
	if (r->inline_size)
		obj = r->mature ? sp_mono_restore_alloc_mature (r) : sp_mono_restore_alloc_inline (r, vtable, r->inline_size);
	if (G_LIKELY (obj))
		return obj;
	/*
	 * Never a remoting proxy (the _specific variant may make one).  In
	 * the old generation when the state outgrows the nursery
	 * (sp_mono_restore_outgrows_nursery).
	 */
	return r->mature ? mono_object_new_mature (vtable, error) : mono_object_new_alloc_specific_checked (vtable, error);
}

/* Object lid is obj: the restore's object table (a root: no card to mark). */
static inline void
sp_mono_restore_bind (SpRestore *r, uint32_t lid, MonoObject *obj)
{
	r->objects.slots [lid] = obj;
}

/* sp_mono_store_barriered for the fix-up: SGen's nursery test from the restore's copy of its bounds. */
static inline void
sp_mono_restore_store (SpRestore *r, void *slot, MonoObject *value)
{
	*(MonoObject **)slot = value;
	if (((mword)slot & r->nursery_mask) != (mword)r->nursery_start)
		sgen_card_table_mark_address ((mword)slot);
	sgen_dummy_use (value);
}

/* Object lid is obj, as the runtime made it (error set: it could not, and err says so). */
static MonoObject *
sp_mono_restore_bind_made (SpRestore *r, uint32_t lid, MonoObject *obj, MonoError *error, SpError *err)
{
	if (!is_ok (error)) {
		sp_error_set (err, "cannot allocate object %u: %s", lid, mono_error_get_message (error));
		mono_error_cleanup (error);
		return NULL;
	}
	sp_mono_restore_bind (r, lid, obj);
	return obj;
}

/* A string or an array through the runtime (objects: sp_mono_restore_make). */
static __attribute__ ((noinline)) void *
sp_mono_restore_create_sized (SpRestore *r, uint32_t lid, const SpSnapClass *sc, uint64_t length, SpError *err)
{
	ERROR_DECL (error);
	uint8_t kind = sc ? sc->kind : SP_CLASS_STRING;
	MonoObject *obj = kind == SP_CLASS_STRING
		? (MonoObject *)mono_string_new_size_checked (mono_domain_get (), (gint32)length, error)
		: (MonoObject *)mono_array_new_specific_checked ((MonoVTable *)sc->restorer_data, (uintptr_t)length, error);
	return sp_mono_restore_bind_made (r, lid, obj, error, err) ? sp_mono_restore_base (r, lid, kind) : NULL;
}

/* An object of `vtable` through the runtime (sp_mono_restore_new_object), bound to lid. */
static __attribute__ ((noinline)) MonoObject *
sp_mono_restore_make_slow (SpRestore *r, uint32_t lid, MonoVTable *vtable, SpError *err)
{
	ERROR_DECL (error);
	MonoObject *obj = sp_mono_restore_new_object (r, vtable, error);
	return sp_mono_restore_bind_made (r, lid, obj, error, err);
}

/* An object of `vtable` allocated inline (the class of the last one made), or NULL. */
static inline __attribute__ ((always_inline)) MonoObject *
sp_mono_restore_alloc_fast (SpRestore *r, MonoVTable *vtable)
{
	/* Only an object class's vtable is ever nursery_vtable or mature_vtable. */
	if (G_LIKELY (vtable == r->nursery_vtable))
		return sp_mono_restore_alloc_inline (r, vtable, r->inline_size);
	if (vtable == r->mature_vtable)
		return sp_mono_restore_bump_mature (r, r->mature_block);
	return NULL;
}

/* A new object of an object class (`vtable`), bound to lid: inline where it can be, else through the runtime. */
static inline __attribute__ ((always_inline)) MonoObject *
sp_mono_restore_make (SpRestore *r, uint32_t lid, MonoVTable *vtable, SpError *err)
{
	MonoObject *obj = sp_mono_restore_alloc_fast (r, vtable);
	if (G_UNLIKELY (!obj))
		return sp_mono_restore_make_slow (r, lid, vtable, err);
	sp_mono_restore_bind (r, lid, obj);
	return obj;
}

/*
 * A new object: zeroed, no constructor runs; or the one a link made early,
 * when its record says its class (sp-decode.c, "links").  Inline in the
 * decoder's loop (sp-runtime.c), the usual case: an object of the class the
 * last one had, in the nursery's allocation buffer or an old block.
 */
static inline __attribute__ ((always_inline)) void *
sp_mono_restore_create (void *ctx, uint32_t lid, const SpSnapClass *sc, uint64_t length, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *obj = sp_objects_get (&r->objects, lid);
	if (obj) {
		if (sc && obj->vtable == (MonoVTable *)sc->restorer_data)
			return obj;   /* made early of an object class, which is the record's */
		r->early_missed = TRUE;
	}
	if (G_LIKELY (sc && sc->kind == SP_CLASS_OBJECT))
		return sp_mono_restore_make (r, lid, (MonoVTable *)sc->restorer_data, err);
	return sp_mono_restore_create_sized (r, lid, sc, length, err);
}

/* sp_mono_store_ref's check of a target not of the declared class itself: a subclass, or an error. */
static __attribute__ ((noinline)) int
sp_mono_store_ref_checked (void *slot, const SpField *field, uint32_t lid, MonoObject *target, SpError *err)
{
	MonoClass *declared = (MonoClass *)field->type_client;
	if (!mono_class_is_assignable_from_internal (declared, mono_object_class (target))) {
		char *tname = sp_mono_type_name (m_class_get_byval_arg (mono_object_class (target)));
		sp_error_set (err, "object %u has type %s, which cannot be stored in '%s' of type %s",
			      lid, tname, *field->name ? field->name : "element", field->type_name);
		g_free (tname);
		return -1;
	}
	sp_mono_store_barriered (slot, target);
	return 0;
}

/* Fix-up of one reference: the target must fit the declared type of the slot.  Inline in the decoder's loop (sp-runtime.c). */
static inline __attribute__ ((always_inline)) int
sp_mono_store_ref (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *target = sp_objects_get (&r->objects, lid);
	r->fixed++;
	if (target && mono_object_class (target) != (MonoClass *)field->type_client)
		return sp_mono_store_ref_checked (slot, field, lid, target, err);
	sp_mono_restore_store (r, slot, target);
	return 0;
}

/*
 * Whether a class of klass's own assembly names klass as its base: a field
 * declared klass may then hold objects of a subclass, and an object made
 * early of klass would be replaced by its record, sending the restore to the
 * fix-up's pass over every record.  The type definitions' "extends" column,
 * read without loading a class, once an image a restore.  A subclass in
 * another assembly is not seen (its record replaces the early object:
 * correct, and slower).
 */
static gboolean
sp_mono_class_has_subclasses (SpRestore *r, MonoClass *klass)
{
	guint32 token = m_class_get_type_token (klass);
	MonoImage *image = m_class_get_image (klass);
	if (mono_metadata_token_table (token) != MONO_TABLE_TYPEDEF)
		return FALSE;
	if (!r->extended)
		r->extended = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify)g_hash_table_destroy);
	GHashTable *bases = (GHashTable *)g_hash_table_lookup (r->extended, image);
	if (!bases) {
		bases = g_hash_table_new (NULL, NULL);
		const MonoTableInfo *types = &image->tables [MONO_TABLE_TYPEDEF];
		for (int i = 0; i < (int)types->rows; i++) {
			guint32 base = mono_metadata_token_from_dor (mono_metadata_decode_row_col (types, i, MONO_TYPEDEF_EXTENDS));
			if (mono_metadata_token_table (base) == MONO_TABLE_TYPEDEF)
				g_hash_table_insert (bases, GUINT_TO_POINTER (base), GUINT_TO_POINTER (1));
		}
		g_hash_table_insert (r->extended, image, bases);
	}
	return g_hash_table_lookup (bases, GUINT_TO_POINTER (token)) != NULL;
}

/* The vtable objects of klass are made early with; NULL for a class with a finalizer (one made and left unused would run it on zeros). */
static void *
sp_mono_restore_early_vtable (MonoClass *klass)
{
	ERROR_DECL (error);
	MonoVTable *vtable = mono_class_vtable_checked (mono_domain_get (), klass, error);
	if (!is_ok (error)) {
		mono_error_cleanup (error);
		return NULL;
	}
	return m_class_has_finalize (klass) ? NULL : vtable;
}

/*
 * The early class among the snapshot's own (its class index: every class
 * resolved before the first object): the one class of the snapshot that a
 * field declared klass can hold, whatever klass is (abstract, an interface,
 * a base whose subclasses live in any assembly), when that one is an object
 * class.  None where a string could come: strings have no CLASS record.
 */
static void *
sp_mono_restore_early_among (MonoClass *klass, const SpSnapClass *known, uint32_t nknown)
{
	if (mono_class_is_assignable_from_internal (klass, mono_defaults.string_class))
		return NULL;
	MonoClass *only = NULL;
	uint8_t only_kind = 0;
	for (uint32_t i = 0; i < nknown; i++) {
		MonoClass *k = (MonoClass *)((const SpClass *)known [i].resolved)->client;
		if (k == only || !mono_class_is_assignable_from_internal (klass, k))
			continue;
		if (only)
			return NULL;
		only = k;
		only_kind = known [i].kind;
	}
	return only && only_kind == SP_CLASS_OBJECT ? sp_mono_restore_early_vtable (only) : NULL;
}

/*
 * The class of objects made early for a field (SpDecodeOps.early_class).
 * With the snapshot's classes known (its class index), the one it has that
 * the field can hold (above).  Without (a snapshot written before the
 * index), the field's declared class, when it is a persistent object class
 * that has instances and no subclass in its assembly (a subclass elsewhere
 * is not seen: its record replaces the early object, and the fix-up goes
 * over every record).  Never a class with a finalizer.  Its vtable:
 * sp_mono_restore_link checks a target with one load.
 */
static void *
sp_mono_restore_early_class (void *ctx, const SpField *field, const SpSnapClass *known, uint32_t nknown)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoClass *klass = (MonoClass *)field->type_client;
	if (!klass)
		return NULL;
	if (known)
		return sp_mono_restore_early_among (klass, known, nknown);
	SpError ignored = { 0 };
	/* `object` as sp_mono_class_map_prepare_fields leaves it: no map is asked for. */
	if (klass == mono_defaults.object_class || mono_class_is_abstract (klass) || mono_class_is_interface (klass) ||
	    sp_mono_class_has_subclasses (r, klass))
		return NULL;
	SpClass *live = sp_mono_class_map (klass, &ignored);
	if (!live || live->kind != SP_CLASS_OBJECT)
		return NULL;
	return sp_mono_restore_early_vtable (klass);
}

/*
 * Whether an object of klass may be stored in `field`: the fix-up's check
 * (sp_mono_store_ref), remembered for the last field and class met in each
 * of a few slots, as a link to an object of a subclass, or in a field
 * declared `object` or an interface, asks it once a reference.
 */
static gboolean
sp_mono_restore_fits (SpRestore *r, const SpField *field, MonoClass *klass)
{
	SpFits *f = &r->fits [(((uintptr_t)field >> 4) ^ ((uintptr_t)klass >> 4)) % SP_FITS_CACHE];
	if (f->field != field || f->klass != klass) {
		MonoClass *declared = (MonoClass *)field->type_client;
		f->field = field;
		f->klass = klass;
		f->fits = klass == declared || mono_class_is_assignable_from_internal (declared, klass);
	}
	return f->fits;
}

/*
 * A link (SpDecodeOps.link): new object owner's field (an element's, at
 * `offset` in an array) refers to object lid, stored when that object fits
 * the field's declared type: an object made before, or one made now of the
 * declared class (`early`; NULL: none can be).
 * After an early object turned out to be of another class the fix-up stores
 * every reference: nothing more is made.  Inline in the decoder's loop
 * (sp-runtime.c).
 */
static inline __attribute__ ((always_inline)) int
sp_mono_restore_link (void *ctx, uint32_t owner, uint8_t kind, size_t offset, const SpField *field, void *early, uint32_t lid,
		      SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	if (r->early_missed)
		return 1;
	MonoObject *target = sp_objects_get (&r->objects, lid);
	if (!target) {
		if (!early)
			return 1;
		if (!(target = sp_mono_restore_make (r, lid, (MonoVTable *)early, err)))
			return -1;
	} else if (target->vtable != (MonoVTable *)early && !sp_mono_restore_fits (r, field, mono_object_class (target))) {
		return 1;   /* early is the vtable of a class the field holds (sp_mono_restore_early_class): one load checks the class */
	}
	/* The owner asked for again: making the target may have moved it. */
	sp_mono_restore_store (r, (char *)sp_mono_restore_base (r, owner, kind) + offset, target);
	r->linked++;
	return 0;
}

static bool
sp_mono_restore_early_missed (void *ctx)
{
	return ((SpRestore *)ctx)->early_missed;
}

/* A delta's record of an object an earlier part made: it must be of the class (and length) the delta says. */
static void *
sp_mono_restore_reuse (void *ctx, uint32_t lid, const SpSnapClass *sc, uint64_t end, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *obj = sp_objects_get (&r->objects, lid);
	if (mono_object_get_vtable_internal (obj) != (MonoVTable *)sc->restorer_data) {
		char *tname = sp_mono_type_name (m_class_get_byval_arg (mono_object_class (obj)));
		sp_error_set (err, "object %u is a %s, but a delta gives it as a %s", lid, tname, sc->name);
		g_free (tname);
		return NULL;
	}
	if (sc->kind == SP_CLASS_ARRAY && end > mono_array_length_internal ((MonoArray *)obj)) {
		sp_error_set (err, "array %u has %llu elements, but a delta patches it up to %llu", lid,
			      (unsigned long long)mono_array_length_internal ((MonoArray *)obj), (unsigned long long)end);
		return NULL;
	}
	return sp_mono_restore_base (ctx, lid, sc->kind);
}

/*
 * A class of the snapshot restores into a changed class of the program (an
 * upgrade, or a downgrade): said on stderr, once a class, so that the user
 * sees what the new version made of the old state.
 */
static void
sp_mono_restore_evolved (void *ctx, const SpSnapClass *c)
{
	SpRestore *r = (SpRestore *)ctx;
	r->evolved++;
	r->hook_class = NULL;
	sp_unknown_forget_class (&r->unknown, c);
	if (r->for_program && c->keep_unknown && c->keep_old)
		sp_unknown_note_class (&r->unknown, c);
	if (r->announce)
		fprintf (r->announce, "spmono: class %s changed since the snapshot: %s\n", c->name, c->evolution);
}

static void
sp_mono_restore_old_values (void *ctx, uint32_t lid, const SpSnapClass *c, const uint8_t *values)
{
	SpRestore *r = (SpRestore *)ctx;
	if (!r->for_program)
		return;
	if (c != r->hook_class) {
		r->hook_class = c;
		r->hooked = sp_upgrades_wanted (((MonoVTable *)c->restorer_data)->klass);
	}
	if (r->hooked)
		sp_upgrades_note (&r->upgrades, lid, c, values);
	if (c->keep_unknown)
		sp_unknown_note (&r->unknown, lid, c, values, r->objects.count - 1);
}

static const SpDecodeOps sp_mono_restore_ops = {
	.begin = sp_mono_restore_begin,
	.resolve = sp_mono_restore_resolve,
	.create = sp_mono_restore_create,
	.base = sp_mono_restore_base,
	.store_ref = sp_mono_store_ref,
	.reuse = sp_mono_restore_reuse,
	.evolved = sp_mono_restore_evolved,
	.old_values = sp_mono_restore_old_values,
	.early_class = sp_mono_restore_early_class,
	.link = sp_mono_restore_link,
	.early_missed = sp_mono_restore_early_missed,
};

static int
sp_mono_root_cmp (const void *a, const void *b)
{
	guint32 x = ((const SpRoot *)a)->id, y = ((const SpRoot *)b)->id;
	return x < y ? -1 : x > y;
}

/* Make the snapshot's roots the registered roots, with their ids (unique: validated). */
static void
sp_mono_restore_roots (SpRestore *r, const SpSnapshot *snap)
{
	for (uint32_t i = 0; i < snap->trailer.nroots; i++) {
		const SpSnapRoot *root = &snap->roots [i];
		if (!root->lid)
			continue;
		SpRoot entry = { root->id, mono_gchandle_new_internal (sp_objects_get (&r->objects, root->lid), FALSE), TRUE, FALSE };
		g_array_append_val (sp_roots, entry);
		if (root->id >= sp_next_root_id)
			sp_next_root_id = root->id + 1;
	}
	qsort (sp_roots->data, sp_roots->len, sizeof (SpRoot), sp_mono_root_cmp);
}

/*
 * Decode a chain (a full snapshot and the deltas on it) into live objects
 * (validate and construct, then fix up, part by part); with `restore_roots`,
 * they become the registered roots.  What changed in the program's classes
 * since the snapshot is said on `announce` (NULL: not said).  Returns 0, SP_ACCEPT_SKIP when part
 * *failed is damaged (a shorter chain, or an older one, may do) or
 * SP_ACCEPT_FATAL when the chain is intact but does not fit this program
 * (never fall back silently over that).
 */
static int
sp_mono_decode (const SpChainPart *parts, size_t n, gboolean restore_roots, FILE *announce, size_t *failed, SpError *err)
{
	SpRestore r = { .announce = announce, .for_program = restore_roots };
	SpSnapshot snap;
	uint64_t t0 = sp_mono_monotonic_ns ();
	size_t size = 0;
	for (size_t i = 0; i < n; i++)
		size += parts [i].size;
	/* Page faults on fresh memory are much of a cold restore's cost: say how many. */
	struct rusage ru0 = { 0 }, ru1 = { 0 };
	if (sp_options.verbose)
		getrusage (RUSAGE_SELF, &ru0);
	sp_mono_restore_expect (size);
	r.mature = sp_mono_restore_outgrows_nursery (size);
	r.test_refuse_blocks = r.mature && g_getenv ("SPMONO_TEST_REFUSE_BLOCKS") != NULL;
	int rc = sp_chain_decode (parts, n, &sp_mono_restore_ops, &r, &snap, failed, err);
	sgen_memgov_expect_bulk_load (0);     /* over: SGen's trigger counts every byte again */
	if (sp_options.verbose) {
		getrusage (RUSAGE_SELF, &ru1);
		fprintf (stderr, "spmono: decoded %zu bytes in %zu part%s, %u objects, in %.3f ms (%ld page faults",
			 size, n, n == 1 ? "" : "s", snap.trailer.nobjects, (sp_mono_monotonic_ns () - t0) / 1e6,
			 ru1.ru_minflt - ru0.ru_minflt);
		fprintf (stderr, "; references: %u linked, %u by the fix-up", r.linked, r.fixed);
		if (r.mature)
			fprintf (stderr, "; old generation: %u blocks taken, %u refused", r.blocks_taken, r.blocks_refused);
		fprintf (stderr, ")\n");
	}
	/*
	 * A delta chain goes on from what was restored: its objects keep their
	 * LIDs (sp-delta.c).  Not across a class change: a chain holds one layout
	 * of a class (a fold could not merge two), so the next snapshot is full.
	 */
	if (rc == 0 && restore_roots && !r.evolved && sp_delta_adopt (&r.objects, parts, n, &snap, err) < 0)
		rc = SP_DECODE_UNFIT;
	if (rc == 0 && restore_roots && sp_upgrades_publish (&r.upgrades, &r.objects, err) < 0)
		rc = SP_DECODE_UNFIT;
	if (rc == 0 && restore_roots && sp_unknown_publish (&r.unknown, &r.objects, err) < 0)
		rc = SP_DECODE_UNFIT;
	sp_unknown_pending_free (&r.unknown);
	sp_upgrades_free (&r.upgrades);
	if (r.extended)
		g_hash_table_destroy (r.extended);
	if (rc == 0) {
		if (restore_roots)
			sp_mono_restore_roots (&r, &snap);
		sp_stats [SP_STAT_RESTORED_OBJECTS] = snap.trailer.nobjects;
		sp_stats [SP_STAT_RESTORE_DECODE_NS] = (gint64)(sp_mono_monotonic_ns () - t0);
	}
	if (r.rooted)
		mono_gc_deregister_root ((char *)&r.objects);
	free (r.objects.slots);
	sp_snapshot_free (&snap);
	return rc == 0 ? 0 : rc == SP_DECODE_UNFIT ? SP_ACCEPT_FATAL : SP_ACCEPT_SKIP;
}

/* The store's accept callback: the newest chain that restores becomes the program's state. */
static int
sp_mono_restore (void *ctx, const SpChainPart *parts, size_t n, size_t *failed, SpError *err)
{
	(void)ctx;
	return sp_mono_decode (parts, n, TRUE, stderr, failed, err);
}
