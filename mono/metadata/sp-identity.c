/*
 * sp-identity.c: the core's object model (sp-client.h), for Mono (part of the
 * client, see sp-mono-state.h): an object's class map, strings and arrays,
 * identity that survives a moving GC (the identity hash in the header), the
 * LID table (LID -> object, a GC root the GC keeps current) and the GC epoch
 * (objects move only while the world is stopped).
 */

#include <mono/sgen/sgen-gc.h>
#include <mono/sgen/sgen-memory-governor.h>


/* Objects of one class tend to come in runs: the last lookup (under sp_lock). */
static MonoClass *sp_class_of_last_klass;
static SpClass *sp_class_of_last_map;

/*
 * And objects of a few classes interleave (a tree's nodes and the payloads
 * they hold: a breadth-first walk meets them in turn): the maps of the
 * classes met before, direct-mapped by the class's address, in front of
 * sp_class_maps, whose lookup for every object of another class than the
 * last had been 6-8% of serializing SerBench's red-black tree.  A class map,
 * once built, is never freed, so an entry never goes stale.
 */
#define SP_CLASS_OF_CACHE 32
static struct {
	MonoClass *klass;
	SpClass *map;
} sp_class_of_cache [SP_CLASS_OF_CACHE];

static inline guint
sp_class_of_slot (MonoClass *klass)
{
	uintptr_t a = (uintptr_t)klass;
	return (guint)((a >> 4 ^ a >> 10) % SP_CLASS_OF_CACHE);
}

static __attribute__ ((noinline)) SpClass *
sp_mono_class_of_slow (MonoClass *klass, SpError *err)
{
	guint slot = sp_class_of_slot (klass);
	SpClass *c = sp_class_of_cache [slot].klass == klass ? sp_class_of_cache [slot].map : sp_mono_class_map (klass, err);
	if (c) {
		sp_class_of_cache [slot].klass = klass;
		sp_class_of_cache [slot].map = c;
		sp_class_of_last_klass = klass;
		sp_class_of_last_map = c;
	}
	return c;
}

SP_CLIENT_HOT SpClass *
sp_client_class_of (void *obj, SpError *err)
{
	MonoClass *klass = mono_object_class ((MonoObject *)obj);
	return klass == sp_class_of_last_klass ? sp_class_of_last_map : sp_mono_class_of_slow (klass, err);
}

SP_CLIENT_HOT const void *
sp_client_class_token (const void *obj)
{
	return ((const MonoObject *)obj)->vtable;
}

uint32_t
sp_client_string_length (void *str)
{
	return (uint32_t)mono_string_length_internal ((MonoString *)str);
}

const uint16_t *
sp_client_string_chars (void *str)
{
	return (const uint16_t *)mono_string_chars_internal ((MonoString *)str);
}

uint64_t
sp_client_array_length (void *arr)
{
	return mono_array_length_internal ((MonoArray *)arr);
}

void *
sp_client_array_data (void *arr)
{
	return mono_array_addr_with_size_fast ((MonoArray *)arr, 1, 0);
}

/*
 * The identity slot.  An [SPersistent] class of automatic layout (a C# class
 * unless it says [StructLayout]) gets 4 bytes more in its instances, the last
 * 4 of its instance size (runtime-patches/0008 calls
 * sp_mono_layout_identity_slot when Mono lays the class out; subclasses
 * inherit the slot, their fields come after it).  No managed code sees them:
 * the serializer keeps there the LID the object has in the snapshot being
 * written, so finding an object's LID is one load from the object it is
 * reading anyway, not a probe of the LID map (half the serializer's time
 * before).  A slot is only a hint: it counts when the LID table binds that LID
 * to this very object (sp_ser_lid_of), so a stale value from an earlier cycle,
 * or one MemberwiseClone copied, is never taken for identity.  Classes without
 * a slot (arrays, strings, the class library's collections, value types,
 * explicit or sequential layout) go through the LID map.
 *
 * Where the slot is follows from metadata alone (the class that introduces it
 * keeps it in its last 4 bytes), so reading it takes no lock and loads no
 * class: mono_class_metadata_foreach_custom_attr reads the custom attribute
 * table only, which Mono says is safe while classes are being initialized,
 * and it is safe with the world stopped.
 */
static gboolean
sp_mono_attr_is_persistent (MonoImage *image, guint32 scope, const gchar *nspace, const gchar *name, guint32 method, gpointer found)
{
	(void)image;
	(void)scope;
	(void)nspace;
	(void)method;
	if (strcmp (name, "SPersistentAttribute") != 0)
		return FALSE;
	*(gboolean *)found = TRUE;
	return TRUE;
}

static gboolean
sp_mono_declares_persistent (MonoClass *klass)
{
	gboolean found = FALSE;
	MonoImage *image = m_class_get_image (klass);
	if (image == mono_defaults.corlib || image_is_dynamic (image))
		return FALSE;
	mono_class_metadata_foreach_custom_attr (klass, sp_mono_attr_is_persistent, &found);
	return found;
}

/* Would instances of klass carry a slot, were none inherited? */
static gboolean
sp_mono_wants_identity_slot (MonoClass *klass)
{
	if (m_class_is_valuetype (klass) || m_class_get_rank (klass) || mono_class_is_interface (klass))
		return FALSE;
	if ((mono_class_get_flags (klass) & TYPE_ATTRIBUTE_LAYOUT_MASK) != TYPE_ATTRIBUTE_AUTO_LAYOUT)
		return FALSE;
	for (MonoClass *k = klass; k; k = m_class_get_parent (k))
		if (sp_mono_declares_persistent (k))
			return TRUE;
	return FALSE;
}

/* The topmost class of klass's ancestry (klass included) whose layout added the slot; NULL: none. */
static MonoClass *
sp_mono_identity_slot_owner (MonoClass *klass)
{
	MonoClass *owner = NULL;
	for (MonoClass *k = klass; k; k = m_class_get_parent (k))
		if (sp_mono_wants_identity_slot (k))
			owner = k;
	return owner;
}

/* Does no instance field of klass itself lie in [slot, slot + 4)? */
static gboolean
sp_mono_slot_clear_of_fields (MonoClass *klass, guint32 slot)
{
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		int align;
		if (f->type->attrs & FIELD_ATTRIBUTE_STATIC)
			continue;
		guint32 start = (guint32)f->offset, end = start + (guint32)mono_type_size (f->type, &align);
		if (start < slot + 4 && end > slot)
			return FALSE;
	}
	return TRUE;
}

/*
 * The slot's offset, checked against the fields of klass and its ancestors
 * up to the owner: a class laid out by another runtime (an AOT image's cached
 * sizes, made by Debian's mono) has no slot, and then the LID map is used
 * rather than writing over a field.
 */
static guint32
sp_mono_identity_slot_of (MonoClass *klass)
{
	MonoClass *owner = sp_mono_identity_slot_owner (klass);
	if (!owner)
		return 0;
	guint32 slot = (guint32)m_class_get_instance_size (owner) - 4;
	for (MonoClass *k = klass;; k = m_class_get_parent (k)) {
		if (!sp_mono_slot_clear_of_fields (k, slot))
			return 0;
		if (k == owner)
			return slot;
	}
}

int
sp_mono_layout_identity_slot (MonoClass *klass, int fields_end, int instance_size, int min_align)
{
	if (sp_mono_identity_slot_owner (klass) != klass)
		return instance_size;
	/*
	 * Sizes an AOT image cached (made by a runtime without the slot, such as
	 * Debian's mono --aot) stand, or Mono aborts on the difference: the
	 * object's last 4 bytes are then padding, used as the slot, or a field,
	 * and the LID map serves (sp_mono_identity_slot_of).
	 */
	if (m_class_get_instance_size (klass))
		return instance_size;
	/* The slot is the last 4 bytes (sp_mono_identity_slot_of), 4-aligned. */
	int align = MAX (min_align, 4);
	int with_slot = (fields_end + 4 + align - 1) & ~(align - 1);
	return MAX (with_slot, instance_size);
}

/*
 * runtime-patches/0009: no AOT image for an assembly that references
 * SPersistence (or is it): its classes' sizes cached by another runtime lack
 * the slot, and its stores the barrier.  Metadata only (the AssemblyRef table).
 */
gboolean
sp_mono_refuses_aot_image (MonoImage *image)
{
	if (!strcmp (image->assembly_name ? image->assembly_name : "", "SPersistence"))
		return TRUE;
	MonoTableInfo *refs = &image->tables [MONO_TABLE_ASSEMBLYREF];
	for (guint32 i = 0; i < refs->rows; i++) {
		guint32 cols [MONO_ASSEMBLYREF_SIZE];
		mono_metadata_decode_row (refs, i, cols, MONO_ASSEMBLYREF_SIZE);
		if (!strcmp (mono_metadata_string_heap (image, cols [MONO_ASSEMBLYREF_NAME]), "SPersistence"))
			return TRUE;
	}
	return FALSE;
}

/*
 * sp_client_lid_slot: a cache in front of sp_mono_identity_slot_of, which
 * reads metadata.  Barriers read it without sp_lock, so an entry is one word,
 * the vtable's address (48 bits) and its class's slot offset (16 bits), stored
 * and read whole; a class whose slot lies further is not cached.  Keyed by
 * the vtable, the object's first word, rather than the class, one dependent
 * load further: the serializer asks for every reference it meets.
 */
#define SP_SLOT_CACHE_BITS 16

static guint64 sp_slot_cache [64];

static __attribute__ ((noinline)) uint32_t
sp_mono_lid_slot_slow (MonoVTable *vtable, size_t i)
{
	guint32 slot = sp_mono_identity_slot_of (vtable->klass);
	if (slot < 1u << SP_SLOT_CACHE_BITS && (guint64)(uintptr_t)vtable < (guint64)1 << (64 - SP_SLOT_CACHE_BITS))
		__atomic_store_n (&sp_slot_cache [i], (guint64)(uintptr_t)vtable << SP_SLOT_CACHE_BITS | slot, __ATOMIC_RELAXED);
	return slot;
}

SP_CLIENT_HOT uint32_t
sp_client_lid_slot (void *obj)
{
	MonoVTable *vtable = ((MonoObject *)obj)->vtable;
	size_t i = ((uintptr_t)vtable >> 4) & 63;
	guint64 entry = __atomic_load_n (&sp_slot_cache [i], __ATOMIC_RELAXED);
	if (entry >> SP_SLOT_CACHE_BITS == (guint64)(uintptr_t)vtable)
		return (uint32_t)(entry & ((1u << SP_SLOT_CACHE_BITS) - 1));
	return sp_mono_lid_slot_slow (vtable, i);
}

/*
 * Mono's identity hash is (address / 8) * 2654435761 mod 2^32, taken from the
 * address the object had when first hashed and kept in its header ever after
 * (monitor.c).  Multiplying by the inverse of that factor gives back address / 8:
 * stable across moves, and address-like, as sp_client_identity_hash should be.
 */
#define SP_MONO_HASH_INVERSE 0x0e8b2f51u

uint32_t
sp_client_identity_hash (void *obj)
{
	return (uint32_t)mono_object_hash_internal ((MonoObject *)obj) * SP_MONO_HASH_INVERSE;
}

/*
 * The LID table (LID -> object) of the snapshot being written: a GC root, whose
 * entries the GC updates when objects move.  It is made of chunks of
 * SP_LID_CHUNK entries, each a pinned object[] (large enough for SGen's large
 * object space, which never moves it): growing adds a chunk and copies
 * nothing, so the increment that hands out the LIDs pays one allocation, not
 * a copy of the whole table.
 */
#define SP_LID_CHUNK_BITS 12
#define SP_LID_CHUNK (1u << SP_LID_CHUNK_BITS)
/* A bind's store skips the nursery test (sp_mono_store_into_large): 8 instructions a new LID. */
_Static_assert (SP_LID_CHUNK * sizeof (MonoObject *) > SGEN_MAX_SMALL_OBJ_SIZE, "LID table chunks are large objects");
/* Read without sp_lock (sp_client_lid_object): a fixed directory, never moved; 4 MB of address space, touched as used. */
static MonoArray *sp_lid_chunks [(SP_LID_MAX >> SP_LID_CHUNK_BITS) + 1];
static guint32 *sp_lid_chunk_handles;
static uint32_t sp_lid_nchunks;
static uint32_t sp_lid_used;             /* highest LID bound since the last reset */

/* An object[] of SP_LID_CHUNK entries; NULL when memory runs out. */
static MonoArray *
sp_mono_lid_chunk_alloc (void)
{
	ERROR_DECL (error);
	MonoArray *chunk = mono_array_new_checked (mono_get_root_domain (), mono_defaults.object_class, SP_LID_CHUNK, error);
	if (is_ok (error))
		return chunk;
	mono_error_cleanup (error);
	return NULL;
}

/*
 * A chunk of the table.  The table lives as long as the runtime: a chunk (a
 * large object, of SGen's large object space) is allocated without starting
 * or finishing a collection, and does not count toward the next one's
 * trigger (runtime patch 0012), so that an increment that grows the table
 * does not hold a collector's pause.  Only where that fails (the heap at
 * max-heap-size) may a collection make room.
 */
static MonoArray *
sp_mono_lid_chunk_new (void)
{
	sgen_memgov_runtime_table_alloc (TRUE);
	MonoArray *chunk = sp_mono_lid_chunk_alloc ();
	sgen_memgov_runtime_table_alloc (FALSE);
	return chunk ? chunk : sp_mono_lid_chunk_alloc ();
}

/* Room in the LID table for LIDs below `need`. */
static int
sp_mono_lid_table_grow (uint32_t need, SpError *err)
{
	while ((uint64_t)sp_lid_nchunks * SP_LID_CHUNK < need) {
		MonoArray *chunk = sp_mono_lid_chunk_new ();
		if (!chunk)
			return sp_error_set (err, "out of memory for a table of %u objects", need);
		sp_lid_chunk_handles = g_renew (guint32, sp_lid_chunk_handles, sp_lid_nchunks + 1);
		sp_lid_chunk_handles [sp_lid_nchunks] = mono_gchandle_new_internal ((MonoObject *)chunk, TRUE);
		__atomic_store_n (&sp_lid_chunks [sp_lid_nchunks++], chunk, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * While the world is stopped (the start of an incremental cycle) nothing may
 * allocate: the table does not grow then, and a bind beyond it fails, saying
 * how much room was needed (the cycle start grows it and tries again).
 */
static gboolean sp_lid_table_frozen;
static uint32_t sp_lid_table_needed;

/* sp_client_lid_bind of a LID beyond the table. */
static __attribute__ ((noinline)) int
sp_mono_lid_bind_beyond (uint32_t lid, SpError *err)
{
	if (sp_lid_table_frozen) {
		sp_lid_table_needed = lid + 1;
		return sp_error_set (err, "the LID table is full while the world is stopped");
	}
	return sp_mono_lid_table_grow (lid + 1, err);
}

SP_CLIENT_HOT int
sp_client_lid_bind (uint32_t lid, void *obj, SpError *err)
{
	if (lid >> SP_LID_CHUNK_BITS >= sp_lid_nchunks && sp_mono_lid_bind_beyond (lid, err) < 0)
		return -1;
	sp_mono_store_into_large (mono_array_addr_fast (sp_lid_chunks [lid >> SP_LID_CHUNK_BITS], MonoObject *, lid & (SP_LID_CHUNK - 1)),
				  (MonoObject *)obj);
	if (lid > sp_lid_used)
		sp_lid_used = lid;
	return 0;
}

SP_CLIENT_HOT void *
sp_client_lid_object (uint32_t lid)
{
	MonoArray *chunk = __atomic_load_n (&sp_lid_chunks [lid >> SP_LID_CHUNK_BITS], __ATOMIC_ACQUIRE);
	return chunk ? mono_array_get_fast (chunk, MonoObject *, lid & (SP_LID_CHUNK - 1)) : NULL;
}

SP_CLIENT_HOT void
sp_client_lid_prefetch (uint32_t lid)
{
	MonoArray *chunk = __atomic_load_n (&sp_lid_chunks [lid >> SP_LID_CHUNK_BITS], __ATOMIC_ACQUIRE);
	if (chunk)
		__builtin_prefetch (mono_array_addr_fast (chunk, MonoObject *, lid & (SP_LID_CHUNK - 1)));
}

/* World stops seen; objects move only while the world is stopped (see sp_mono_gc_event). */
static gint32 sp_world_stops;

SP_CLIENT_HOT uint32_t
sp_client_gc_epoch (void)
{
	/*
	 * The caller read an object pointer just before: that load must not pass
	 * this one (an acquire fence orders earlier loads before later ones; on
	 * x86 it costs nothing).  mono_atomic_load_i32 would be a locked xadd here,
	 * which was half the serializer's time per reference.
	 */
	__atomic_thread_fence (__ATOMIC_ACQUIRE);
	return __atomic_load_n ((uint32_t *)&sp_world_stops, __ATOMIC_RELAXED);
}

/*
 * Counted after every thread is suspended and before the GC moves anything, so
 * a thread that reads the epoch and then an address sees a new epoch whenever
 * the address may be stale.  (sgen_global_stop_count is bumped before the
 * threads are suspended, which leaves a window.)
 */
static void
sp_mono_gc_event (MonoProfiler *prof, MonoProfilerGCEvent event, uint32_t generation, mono_bool is_serial)
{
	(void)prof;
	(void)generation;
	(void)is_serial;
	if (event == MONO_GC_EVENT_POST_STOP_WORLD)
		__atomic_add_fetch (&sp_world_stops, 1, __ATOMIC_SEQ_CST);
	sp_trace_gc_event (event);
}

/*
 * Empty the LID table up to `max_chunks` chunks (of SP_LID_CHUNK entries) at
 * a time: TRUE when more is left.  Storing nulls needs no write barrier.
 * A safepoint after each chunk (unless this thread has stopped the world):
 * a collection waits for one chunk, not the whole table.
 */
static gboolean
sp_mono_lid_reset_step (uint32_t max_chunks)
{
	static uint32_t next_chunk;
	uint32_t last = sp_lid_used >> SP_LID_CHUNK_BITS;
	for (uint32_t done = 0; sp_lid_used && next_chunk <= last && done < max_chunks; done++, next_chunk++) {
		uint32_t k = next_chunk;
		size_t used = k < last ? SP_LID_CHUNK : (sp_lid_used & (SP_LID_CHUNK - 1)) + 1;
		memset (mono_array_addr_fast (sp_lid_chunks [k], MonoObject *, 0), 0, used * sizeof (MonoObject *));
		if (!sp_lid_table_frozen)
			mono_threads_safepoint ();
	}
	if (sp_lid_used && next_chunk <= last)
		return TRUE;
	next_chunk = 0;
	sp_lid_used = 0;
	return FALSE;
}

void
sp_client_lid_reset (void)
{
	while (sp_mono_lid_reset_step (UINT32_MAX))
		;
}

