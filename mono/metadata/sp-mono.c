/*
 * sp-mono.c: spmono's client: the Mono side of the persistence core.
 *
 * - The persistent class map: built from [SPersistent]/[SPersistentField] the
 *   first time a class is persisted or restored, cached per MonoClass.
 * - Object identity for the core (sp-client.h): the identity hash Mono keeps in
 *   the object header, and a LID table that is a managed object[] the GC keeps
 *   current, so serialization needs no hook into the collector.
 * - Restore: construction phase (allocate every object without running a
 *   constructor), then fix-up phase (fields, references, checked for type).
 * - The internal calls behind SPersistence.SPC.  Each returns NULL or an error
 *   message, which the managed side turns into an SPersistenceException.
 *
 * Locking: one mutex (sp_lock) serializes the SPC calls.  In this version
 * SendPData persists on the calling thread, start to finish (stop-the-world
 * for that thread); other threads' writes during the call are not yet guarded
 * (the write barriers of the incremental mode do that).
 */

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
#include <mono/metadata/icall-internals.h>
#include <mono/metadata/object-internals.h>
#include <mono/metadata/profiler.h>
#include <mono/metadata/reflection-internals.h>
#include <mono/metadata/tabledefs.h>
#include <mono/utils/mono-coop-mutex.h>
#include <mono/utils/mono-threads-coop.h>

#include "../spersist/sp-client.h"
#include "../spersist/sp-options.h"
#include "../spersist/sp-serialize.h"
#include "../spersist/sp-snapshot.h"
#include "../spersist/sp-store.h"

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
} SpRoot;
static GArray *sp_roots;
static guint32 sp_next_root_id = 1;

static inline SpRoot *
sp_mono_root_at (guint i)
{
	return &g_array_index (sp_roots, SpRoot, i);
}

/* MonoClass* -> SpClass*, built once per class. */
static GHashTable *sp_class_maps;
static GHashTable *sp_class_map_failures;  /* MonoClass * -> why it cannot be persisted (it never changes) */
static SpClass sp_string_class = { .kind = SP_CLASS_STRING, .assembly = "mscorlib", .name = "System.String" };

/* The LID table: a pinned object[] the GC updates when objects move. */
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
static MonoArray **sp_lid_chunks;
static guint32 *sp_lid_chunk_handles;
static uint32_t sp_lid_nchunks;
static uint32_t sp_lid_used;             /* highest LID bound since the last reset */

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
	SP_STAT_COUNT
};
static gint64 sp_stats [SP_STAT_COUNT];

static uint64_t
sp_mono_now_ns (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
sp_mono_monotonic_ns (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


static void
sp_mono_warn (void *ctx, const char *message)
{
	(void)ctx;
	fprintf (stderr, "spmono: warning: %s\n", message);
}

/* ---- class map ------------------------------------------------------------ */

/* Does `attrs` hold SPersistence.`name`?  Consumes attrs (and the lookup's error). */
static gboolean
sp_mono_attrs_have (MonoCustomAttrInfo *attrs, MonoError *error, const char *name)
{
	mono_error_cleanup (error);
	gboolean found = FALSE;
	for (int i = 0; attrs && i < attrs->num_attrs && !found; i++) {
		MonoClass *k = attrs->attrs [i].ctor->klass;
		found = !strcmp (m_class_get_name (k), name) && !strcmp (m_class_get_name_space (k), "SPersistence");
	}
	if (attrs && !attrs->cached)
		mono_custom_attrs_free (attrs);
	return found;
}

static gboolean
sp_mono_class_has_attr (MonoClass *klass, const char *name)
{
	ERROR_DECL (error);
	return sp_mono_attrs_have (mono_custom_attrs_from_class_checked (klass, error), error, name);
}

static gboolean
sp_mono_field_has_attr (MonoClass *klass, MonoClassField *field, const char *name)
{
	ERROR_DECL (error);
	return sp_mono_attrs_have (mono_custom_attrs_from_field_checked (klass, field, error), error, name);
}

/* [SPersistent] on the class or an ancestor (the attribute is inherited, as Inherited=true). */
static gboolean
sp_mono_is_persistent_class (MonoClass *klass)
{
	for (MonoClass *k = klass; k; k = m_class_get_parent (k))
		if (sp_mono_class_has_attr (k, "SPersistentAttribute"))
			return TRUE;
	return FALSE;
}

/*
 * Class-library collections persisted by their fields, as if they were
 * [SPersistent]: List<T> (_items, _size, _version) and Dictionary<K,V>
 * (_buckets, _entries, the counts, _version, and _comparer, which is null for
 * the default comparer: any other is an object that cannot be persisted, and
 * says so).  Not persisted: fields marked [NonSerialized], and a dictionary's
 * caches (_keys, _values, _syncRoot), created again when asked for.
 */
static char *sp_mono_type_name (MonoType *type);

static gboolean
sp_mono_is_corlib_generic (MonoClass *klass, const char *name)
{
	return mono_class_is_ginst (klass) && m_class_get_image (klass) == mono_defaults.corlib &&
		strcmp (m_class_get_name_space (klass), "System.Collections.Generic") == 0 &&
		strcmp (m_class_get_name (klass), name) == 0;
}

static gboolean
sp_mono_is_persistable_collection (MonoClass *klass)
{
	return sp_mono_is_corlib_generic (klass, "List`1") || sp_mono_is_corlib_generic (klass, "Dictionary`2");
}

/*
 * Class-library code that stores into a program's state: the collections
 * persisted by their fields, System.Array (Sort, Reverse, Fill, the
 * IList<T> of arrays), the sort helpers that write into the arrays they are
 * given, and the span and buffer code beneath them.  Whoever calls them, a
 * store of theirs lands in the state as if the caller had made it, so every
 * barrier mode guards them (sp_mono_method_needs_barrier).  Nested classes
 * count as their outermost class.
 */
gboolean
sp_mono_is_state_writing_library_class (MonoClass *klass)
{
	static const char *const generic [] = {
		"List`1", "Dictionary`2", "ArraySortHelper`1", "ArraySortHelper`2",
		"GenericArraySortHelper`1", "GenericArraySortHelper`2",
	};
	static const char *const system [] = { "Array", "Span`1", "SpanHelpers", "Buffer", "MemoryExtensions" };
	while (m_class_get_nested_in (klass))
		klass = m_class_get_nested_in (klass);
	if (m_class_get_image (klass) != mono_defaults.corlib)
		return FALSE;
	const char *ns = m_class_get_name_space (klass), *name = m_class_get_name (klass);
	if (strcmp (ns, "System.Collections.Generic") == 0) {
		for (size_t i = 0; i < G_N_ELEMENTS (generic); i++)
			if (strcmp (name, generic [i]) == 0)
				return TRUE;
	} else if (strcmp (ns, "System") == 0) {
		for (size_t i = 0; i < G_N_ELEMENTS (system); i++)
			if (strcmp (name, system [i]) == 0)
				return TRUE;
	}
	return FALSE;
}

/*
 * A dictionary's buckets hold its keys' hash codes: they must come out the
 * same in the next process.  So keys are primitive values, enums or strings
 * (Mono's string hash is not randomized: the same in every run of this
 * runtime); keys hashed by identity or by code of their own are refused.
 */
static int
sp_mono_dictionary_key_check (MonoClass *dict, SpError *err)
{
	MonoType *key = mono_class_get_generic_class (dict)->context.class_inst->type_argv [0];
	switch (key->type) {
	case MONO_TYPE_BOOLEAN: case MONO_TYPE_CHAR: case MONO_TYPE_I1: case MONO_TYPE_U1:
	case MONO_TYPE_I2: case MONO_TYPE_U2: case MONO_TYPE_I4: case MONO_TYPE_U4:
	case MONO_TYPE_I8: case MONO_TYPE_U8: case MONO_TYPE_R4: case MONO_TYPE_R8: case MONO_TYPE_STRING:
		return 0;
	case MONO_TYPE_VALUETYPE:
		if (m_class_is_enumtype (mono_class_from_mono_type_internal (key)))
			return 0;
		break;
	default:
		break;
	}
	char *name = sp_mono_type_name (m_class_get_byval_arg (dict));
	char *kname = sp_mono_type_name (key);
	sp_error_set (err, "%s cannot be persisted: its keys (%s) may hash differently after a restart "
		      "(keys of primitive, enum or string type can)", name, kname);
	g_free (name);
	g_free (kname);
	return -1;
}

static char *
sp_mono_type_name (MonoType *type)
{
	return mono_type_get_name_full (type, MONO_TYPE_NAME_FORMAT_REFLECTION);
}

static gboolean
sp_mono_is_instance_field (MonoClassField *f)
{
	return !(f->type->attrs & (FIELD_ATTRIBUTE_STATIC | FIELD_ATTRIBUTE_LITERAL));
}

static int
sp_mono_class_ref_allowed (MonoClass *klass, SpError *err)
{
	if (klass == mono_defaults.object_class || klass == mono_defaults.string_class ||
	    mono_class_is_interface (klass) || sp_mono_is_persistent_class (klass) || sp_mono_is_persistable_collection (klass))
		return 0;
	if (m_class_get_rank (klass) == 1 && m_class_get_byval_arg (klass)->type == MONO_TYPE_SZARRAY) {
		MonoClass *elem = m_class_get_element_class (klass);
		if (m_class_is_valuetype (elem))
			return 0;   /* its leaves are checked when the array's layout is built */
		return sp_mono_class_ref_allowed (elem, err);
	}
	char *name = sp_mono_type_name (m_class_get_byval_arg (klass));
	sp_error_set (err, "type %s is not [SPersistent]", name);
	g_free (name);
	return -1;
}

static int sp_mono_add_leaves (GArray *leaves, MonoType *type, const char *name, guint32 offset, SpError *err);

/* Flatten the instance fields of a struct embedded at `offset`. */
static int
sp_mono_add_struct_leaves (GArray *leaves, MonoClass *klass, const char *name, guint32 offset, SpError *err)
{
	mono_class_init_internal (klass);
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		if (!sp_mono_is_instance_field (f))
			continue;
		char *leaf = *name ? g_strdup_printf ("%s.%s", name, mono_field_get_name (f)) : g_strdup (mono_field_get_name (f));
		/* A struct's field offsets count the object header it has when boxed. */
		guint32 at = offset + (guint32)mono_field_get_offset (f) - (guint32)sizeof (MonoObject);
		int rc = sp_mono_add_leaves (leaves, f->type, leaf, at, err);
		g_free (leaf);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
sp_mono_add_leaf (GArray *leaves, const char *name, unsigned kind, guint32 offset, MonoType *ref_type)
{
	SpField leaf = { .name = g_strdup (name), .kind = (uint8_t)kind, .offset = offset };
	if (ref_type) {
		leaf.type_name = sp_mono_type_name (ref_type);
		leaf.type_client = mono_class_from_mono_type_internal (ref_type);
	}
	g_array_append_val (leaves, leaf);
	return 0;
}

/* The leaves of a value of `type` stored at `offset` (a field, or an array element). */
static int
sp_mono_add_leaves (GArray *leaves, MonoType *type, const char *name, guint32 offset, SpError *err)
{
	static const uint8_t kinds [] = {
		[MONO_TYPE_BOOLEAN] = SP_KIND_BOOL, [MONO_TYPE_CHAR] = SP_KIND_CHAR,
		[MONO_TYPE_I1] = SP_KIND_I1, [MONO_TYPE_U1] = SP_KIND_U1,
		[MONO_TYPE_I2] = SP_KIND_I2, [MONO_TYPE_U2] = SP_KIND_U2,
		[MONO_TYPE_I4] = SP_KIND_I4, [MONO_TYPE_U4] = SP_KIND_U4,
		[MONO_TYPE_I8] = SP_KIND_I8, [MONO_TYPE_U8] = SP_KIND_U8,
		[MONO_TYPE_R4] = SP_KIND_R4, [MONO_TYPE_R8] = SP_KIND_R8,
	};
	if (type->byref)
		goto unsupported;
	if (type->type < G_N_ELEMENTS (kinds) && kinds [type->type])
		return sp_mono_add_leaf (leaves, name, kinds [type->type], offset, NULL);
	switch (type->type) {
	case MONO_TYPE_STRING:
	case MONO_TYPE_CLASS:
	case MONO_TYPE_OBJECT:
	case MONO_TYPE_SZARRAY:
		return sp_mono_add_leaf (leaves, name, SP_KIND_REF, offset, type);
	case MONO_TYPE_GENERICINST:
		if (!mono_type_generic_inst_is_valuetype (type))
			return sp_mono_add_leaf (leaves, name, SP_KIND_REF, offset, type);
		/* a generic struct */
		/* FALLTHROUGH */
	case MONO_TYPE_VALUETYPE: {
		MonoClass *klass = mono_class_from_mono_type_internal (type);
		if (m_class_is_enumtype (klass))
			return sp_mono_add_leaves (leaves, mono_class_enum_basetype_internal (klass), name, offset, err);
		return sp_mono_add_struct_leaves (leaves, klass, name, offset, err);
	}
	default:
		break;
	}
unsupported: {
		char *tname = sp_mono_type_name (type);
		sp_error_set (err, "'%s' has type %s, which cannot be persisted (pointers, handles and multi-dimensional arrays are not supported)",
			      *name ? name : "element", tname);
		g_free (tname);
		return -1;
	}
}

static char *
sp_mono_assembly_of (MonoClass *klass)
{
	while (m_class_get_rank (klass))
		klass = m_class_get_element_class (klass);
	MonoAssembly *assembly = m_class_get_image (klass)->assembly;
	if (!assembly)
		return g_strdup ("");
	MonoAssemblyName *an = &assembly->aname;
	return g_strdup_printf ("%s, Version=%d.%d.%d.%d", an->name, an->major, an->minor, an->build, an->revision);
}

static SpClass *
sp_mono_class_new (MonoClass *klass, uint8_t kind, GArray *leaves)
{
	SpClass *c = g_new0 (SpClass, 1);
	c->kind = kind;
	c->assembly = sp_mono_assembly_of (klass);
	c->name = sp_mono_type_name (m_class_get_byval_arg (klass));
	c->nfields = leaves->len;
	c->fields = (SpField *)g_array_free (leaves, FALSE);
	c->client = klass;
	return c;
}

static void
sp_mono_leaves_free (GArray *leaves)
{
	for (guint i = 0; i < leaves->len; i++) {
		SpField *f = &g_array_index (leaves, SpField, i);
		g_free ((char *)f->name);
		g_free ((char *)f->type_name);
	}
	g_array_free (leaves, TRUE);
}

/* Persistent fields, base class first, so a derived class extends its base's layout. */
static int
sp_mono_object_leaves (GArray *leaves, MonoClass *klass, SpError *err)
{
	MonoClass *parent = m_class_get_parent (klass);
	if (parent && sp_mono_object_leaves (leaves, parent, err) < 0)
		return -1;
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		if (!sp_mono_is_instance_field (f) || !sp_mono_field_has_attr (klass, f, "SPersistentFieldAttribute"))
			continue;
		if (sp_mono_add_leaves (leaves, f->type, mono_field_get_name (f), (guint32)mono_field_get_offset (f), err) < 0)
			return sp_error_prefix (err, "class %s", m_class_get_name (klass));
	}
	return 0;
}

/* A collection's fields, but those sp_mono_is_persistable_collection says are not persisted. */
static int
sp_mono_collection_leaves (GArray *leaves, MonoClass *klass, SpError *err)
{
	if (sp_mono_is_corlib_generic (klass, "Dictionary`2") && sp_mono_dictionary_key_check (klass, err) < 0)
		return -1;
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		const char *fname = mono_field_get_name (f);
		if (!sp_mono_is_instance_field (f) || (f->type->attrs & FIELD_ATTRIBUTE_NOT_SERIALIZED) ||
		    strcmp (fname, "_keys") == 0 || strcmp (fname, "_values") == 0 || strcmp (fname, "_syncRoot") == 0)
			continue;
		if (sp_mono_add_leaves (leaves, f->type, mono_field_get_name (f), (guint32)mono_field_get_offset (f), err) < 0)
			return sp_error_prefix (err, "class %s", m_class_get_name (klass));
	}
	return 0;
}

static SpClass *
sp_mono_class_map_build (MonoClass *klass, SpError *err)
{
	mono_class_init_internal (klass);
	GArray *leaves = g_array_new (FALSE, TRUE, sizeof (SpField));
	char *name = sp_mono_type_name (m_class_get_byval_arg (klass));
	int rc;
	uint8_t kind;
	if (m_class_get_rank (klass)) {
		kind = SP_CLASS_ARRAY;
		if (m_class_get_byval_arg (klass)->type != MONO_TYPE_SZARRAY)
			rc = sp_error_set (err, "type %s is a multi-dimensional array, which cannot be persisted", name);
		else if ((rc = sp_mono_class_ref_allowed (klass, err)) == 0)
			rc = sp_mono_add_leaves (leaves, m_class_get_byval_arg (m_class_get_element_class (klass)), "", 0, err);
	} else if (m_class_is_valuetype (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_error_set (err, "a boxed %s cannot be persisted; store it in a field of its own type", name);
	} else if (sp_mono_is_persistable_collection (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_mono_collection_leaves (leaves, klass, err);
	} else if (!sp_mono_is_persistent_class (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_error_set (err, "type %s is not [SPersistent]", name);
	} else {
		kind = SP_CLASS_OBJECT;
		rc = sp_mono_object_leaves (leaves, klass, err);
	}
	g_free (name);
	if (rc < 0) {
		sp_mono_leaves_free (leaves);
		return NULL;
	}
	SpClass *c = sp_mono_class_new (klass, kind, leaves);
	if (kind == SP_CLASS_ARRAY)
		c->elem_size = (uint32_t)mono_array_element_size (klass);
	return c;
}

/*
 * While the world is stopped, a class map is not built: building reads
 * metadata under the loader lock, which a stopped thread may hold.  A class
 * without a map then fails the lookup and is remembered, and the cycle's start
 * builds its map with the world running and tries again.
 */
static gboolean sp_class_maps_frozen;
static MonoClass *sp_class_map_needed;

static SpClass *sp_mono_class_map (MonoClass *klass, SpError *err);

/*
 * Build the maps of the classes c's references are declared with, and theirs
 * (as the paper builds a class's map when the class is loaded): a snapshot
 * then seldom meets a class without a map, whose building (metadata, custom
 * attributes) would lengthen an increment of the SP task.  Declared types
 * only: a subclass, or what an `object` field holds, gets its map when met.
 */
static void
sp_mono_class_map_prepare_fields (const SpClass *c)
{
	for (uint32_t i = 0; i < c->nfields; i++) {
		MonoClass *declared = (MonoClass *)c->fields [i].type_client;
		if (!declared || declared == mono_defaults.object_class || mono_class_is_interface (declared))
			continue;
		if (g_hash_table_lookup (sp_class_maps, declared) || g_hash_table_lookup (sp_class_map_failures, declared))
			continue;
		SpError ignored = { 0 };
		sp_mono_class_map (declared, &ignored);
	}
}

/* The class map of klass, built on first use.  Called with sp_lock held. */
static SpClass *
sp_mono_class_map (MonoClass *klass, SpError *err)
{
	if (klass == mono_defaults.string_class)
		return &sp_string_class;
	SpClass *c = (SpClass *)g_hash_table_lookup (sp_class_maps, klass);
	if (c)
		return c;
	const char *why = (const char *)g_hash_table_lookup (sp_class_map_failures, klass);
	if (why) {
		sp_error_set (err, "%s", why);
		return NULL;
	}
	if (sp_class_maps_frozen) {
		sp_class_map_needed = klass;
		sp_error_set (err, "a class map is needed while the world is stopped");
		return NULL;
	}
	c = sp_mono_class_map_build (klass, err);
	if (c) {
		g_hash_table_insert (sp_class_maps, klass, c);
		sp_mono_class_map_prepare_fields (c);   /* after the insertion: a class referring to itself is done */
	} else
		g_hash_table_insert (sp_class_map_failures, klass, g_strdup (err->msg));
	return c;
}

/* ---- the core's client interface (sp-client.h) ---------------------------- */

SpClass *
sp_client_class_of (void *obj, SpError *err)
{
	/* Objects of one class tend to come in runs: remember the last lookup (under sp_lock). */
	static MonoClass *last_klass;
	static SpClass *last_map;
	MonoClass *klass = mono_object_class ((MonoObject *)obj);
	if (klass == last_klass)
		return last_map;
	SpClass *c = sp_mono_class_map (klass, err);
	if (c) {
		last_klass = klass;
		last_map = c;
	}
	return c;
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

/* Room in the LID table for LIDs below `need`. */
static int
sp_mono_lid_table_grow (uint32_t need, SpError *err)
{
	while ((uint64_t)sp_lid_nchunks * SP_LID_CHUNK < need) {
		ERROR_DECL (error);
		MonoArray *chunk = mono_array_new_checked (mono_get_root_domain (), mono_defaults.object_class, SP_LID_CHUNK, error);
		if (!is_ok (error)) {
			mono_error_cleanup (error);
			return sp_error_set (err, "out of memory for a table of %u objects", need);
		}
		sp_lid_chunks = g_renew (MonoArray *, sp_lid_chunks, sp_lid_nchunks + 1);
		sp_lid_chunk_handles = g_renew (guint32, sp_lid_chunk_handles, sp_lid_nchunks + 1);
		sp_lid_chunk_handles [sp_lid_nchunks] = mono_gchandle_new_internal ((MonoObject *)chunk, TRUE);
		sp_lid_chunks [sp_lid_nchunks++] = chunk;
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

int
sp_client_lid_bind (uint32_t lid, void *obj, SpError *err)
{
	if (lid >> SP_LID_CHUNK_BITS >= sp_lid_nchunks) {
		if (sp_lid_table_frozen) {
			sp_lid_table_needed = lid + 1;
			return sp_error_set (err, "the LID table is full while the world is stopped");
		}
		if (sp_mono_lid_table_grow (lid + 1, err) < 0)
			return -1;
	}
	mono_array_setref_fast (sp_lid_chunks [lid >> SP_LID_CHUNK_BITS], lid & (SP_LID_CHUNK - 1), (MonoObject *)obj);
	if (lid > sp_lid_used)
		sp_lid_used = lid;
	return 0;
}

void *
sp_client_lid_object (uint32_t lid)
{
	return mono_array_get_fast (sp_lid_chunks [lid >> SP_LID_CHUNK_BITS], MonoObject *, lid & (SP_LID_CHUNK - 1));
}

/* World stops seen; objects move only while the world is stopped (see sp_mono_gc_event). */
static gint32 sp_world_stops;

uint32_t
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
}

void
sp_client_lid_reset (void)
{
	/*
	 * Storing nulls needs no write barrier.  A chunk at a time, with a
	 * safepoint in between (unless this thread has stopped the world): a
	 * collection waits for one chunk, not the whole table.
	 */
	if (sp_lid_used) {
		for (uint32_t k = 0; k <= sp_lid_used >> SP_LID_CHUNK_BITS; k++) {
			size_t used = k < sp_lid_used >> SP_LID_CHUNK_BITS ? SP_LID_CHUNK : (sp_lid_used & (SP_LID_CHUNK - 1)) + 1;
			memset (mono_array_addr_fast (sp_lid_chunks [k], MonoObject *, 0), 0, used * sizeof (MonoObject *));
			if (!sp_lid_table_frozen)
				mono_threads_safepoint ();
		}
	}
	sp_lid_used = 0;
}

/* ---- restore -------------------------------------------------------------- */

typedef struct SpRestore {
	MonoArray *objects;          /* LID -> restored object; pinned by `handle` */
	guint32 handle;
} SpRestore;

static int
sp_mono_restore_begin (void *ctx, const SpSnapTrailer *t, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	ERROR_DECL (error);
	r->objects = mono_array_new_checked (mono_domain_get (), mono_defaults.object_class, (uintptr_t)t->nobjects + 1, error);
	if (!is_ok (error)) {
		mono_error_cleanup (error);
		return sp_error_set (err, "out of memory for %u objects", t->nobjects);
	}
	r->handle = mono_gchandle_new_internal ((MonoObject *)r->objects, TRUE);
	return 0;
}

/*
 * The live class map and vtable of a class of the snapshot's class cache (the
 * decoder then checks kind and leaves against the snapshot's).
 */
static int
sp_mono_restore_resolve (void *ctx, SpSnapClass *sc, SpError *err)
{
	(void)ctx;
	/* "Type, Assembly": the version is informative; the layout check decides. */
	char *comma = strchr (sc->assembly, ',');
	char *qualified = g_strdup_printf ("%s, %.*s", sc->name, (int)(comma ? comma - sc->assembly : (long)strlen (sc->assembly)), sc->assembly);
	/* Assemblies are looked for where the program is (Mono needs an image for that). */
	MonoAssembly *main_assembly = mono_assembly_get_main ();
	MonoImage *context = main_assembly ? main_assembly->image : mono_defaults.corlib;
	ERROR_DECL (error);
	MonoType *type = mono_reflection_type_from_name_checked (qualified, context, error);
	g_free (qualified);
	if (!is_ok (error) || !type) {
		mono_error_cleanup (error);
		return sp_error_set (err, "class %s from assembly %s cannot be found", sc->name, sc->assembly);
	}
	MonoClass *klass = mono_class_from_mono_type_internal (type);
	SpClass *live = sp_mono_class_map (klass, err);
	if (!live)
		return -1;
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

static void *
sp_mono_restore_base (void *ctx, uint32_t lid, uint8_t kind)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *obj = mono_array_get_fast (r->objects, MonoObject *, lid);
	if (kind == SP_CLASS_OBJECT)
		return obj;
	return kind == SP_CLASS_ARRAY ? sp_client_array_data (obj) : (void *)mono_string_chars_internal ((MonoString *)obj);
}

/* A new object: zeroed, no constructor runs. */
static void *
sp_mono_restore_create (void *ctx, uint32_t lid, const SpSnapClass *sc, uint64_t length, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	ERROR_DECL (error);
	MonoObject *obj;
	uint8_t kind = sc ? sc->kind : SP_CLASS_STRING;
	if (kind == SP_CLASS_STRING)
		obj = (MonoObject *)mono_string_new_size_checked (mono_domain_get (), (gint32)length, error);
	else if (kind == SP_CLASS_ARRAY)
		obj = (MonoObject *)mono_array_new_specific_checked ((MonoVTable *)sc->restorer_data, (uintptr_t)length, error);
	else
		/*
		 * Never a remoting proxy (the _specific variant may make one).
		 * Allocating straight into the old generation (mono_object_new_mature)
		 * was measured slower: it takes the GC lock per object and touches
		 * fresh major-heap pages on a cold start.
		 */
		obj = mono_object_new_alloc_specific_checked ((MonoVTable *)sc->restorer_data, error);
	if (!is_ok (error)) {
		sp_error_set (err, "cannot allocate object %u: %s", lid, mono_error_get_message (error));
		mono_error_cleanup (error);
		return NULL;
	}
	mono_array_setref_fast (r->objects, lid, obj);
	return sp_mono_restore_base (ctx, lid, kind);
}

/* Fix-up of one reference: the target must fit the declared type of the slot. */
static int
sp_mono_store_ref (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err)
{
	SpRestore *r = (SpRestore *)ctx;
	MonoObject *target = lid ? mono_array_get_fast (r->objects, MonoObject *, lid) : NULL;
	MonoClass *declared = (MonoClass *)field->type_client;
	if (target && mono_object_class (target) != declared &&
	    !mono_class_is_assignable_from_internal (declared, mono_object_class (target))) {
		char *tname = sp_mono_type_name (m_class_get_byval_arg (mono_object_class (target)));
		sp_error_set (err, "object %u has type %s, which cannot be stored in '%s' of type %s",
			      lid, tname, *field->name ? field->name : "element", field->type_name);
		g_free (tname);
		return -1;
	}
	mono_gc_wbarrier_generic_store_internal (slot, target);
	return 0;
}

static const SpDecodeOps sp_mono_restore_ops = {
	.begin = sp_mono_restore_begin,
	.resolve = sp_mono_restore_resolve,
	.create = sp_mono_restore_create,
	.base = sp_mono_restore_base,
	.store_ref = sp_mono_store_ref,
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
		SpRoot entry = { root->id, mono_gchandle_new_internal (mono_array_get_fast (r->objects, MonoObject *, root->lid), FALSE) };
		g_array_append_val (sp_roots, entry);
		if (root->id >= sp_next_root_id)
			sp_next_root_id = root->id + 1;
	}
	qsort (sp_roots->data, sp_roots->len, sizeof (SpRoot), sp_mono_root_cmp);
}

/*
 * Decode a snapshot into live objects (validate and construct, then fix up);
 * with `restore_roots`, they become the registered roots.  Returns 0,
 * SP_ACCEPT_SKIP when the snapshot is damaged (an older one may do) or
 * SP_ACCEPT_FATAL when it is intact but does not fit this program (never fall
 * back silently over that).
 */
static int
sp_mono_decode (const uint8_t *data, size_t size, gboolean restore_roots, SpError *err)
{
	SpRestore r = { 0 };
	SpSnapshot snap;
	uint64_t t0 = sp_mono_monotonic_ns ();
	/* Page faults on fresh memory are much of a cold restore's cost: say how many. */
	struct rusage ru0 = { 0 }, ru1 = { 0 };
	if (sp_options.verbose)
		getrusage (RUSAGE_SELF, &ru0);
	int rc = sp_snapshot_decode (data, size, &sp_mono_restore_ops, &r, &snap, err);
	if (sp_options.verbose) {
		getrusage (RUSAGE_SELF, &ru1);
		fprintf (stderr, "spmono: decoded %zu bytes, %u objects, in %.3f ms (%ld page faults)\n", size,
			 snap.trailer.nobjects, (sp_mono_monotonic_ns () - t0) / 1e6, ru1.ru_minflt - ru0.ru_minflt);
	}
	if (rc == 0) {
		if (restore_roots)
			sp_mono_restore_roots (&r, &snap);
		sp_stats [SP_STAT_RESTORED_OBJECTS] = snap.trailer.nobjects;
		sp_stats [SP_STAT_RESTORE_DECODE_NS] = (gint64)(sp_mono_monotonic_ns () - t0);
	}
	if (r.handle)
		mono_gchandle_free_internal (r.handle);
	sp_snapshot_free (&snap);
	return rc == 0 ? 0 : rc == SP_DECODE_UNFIT ? SP_ACCEPT_FATAL : SP_ACCEPT_SKIP;
}

/* The store's accept callback: the newest snapshot that restores becomes the program's state. */
static int
sp_mono_restore (void *ctx, const uint8_t *data, size_t size, SpError *err)
{
	(void)ctx;
	return sp_mono_decode (data, size, TRUE, err);
}

/* ---- starting: store and warm restart -------------------------------------- */

static int
sp_mono_start (SpError *err)
{
	if (sp_started)
		return 0;
	uint64_t t0 = sp_mono_monotonic_ns ();
	char *location = sp_options_store_location (&sp_options, sp_program);
	int rc = sp_store_open (location, sp_options.keep, &sp_store, err);
	free (location);
	if (rc < 0)
		return -1;
	uint8_t *data;
	size_t size;
	uint64_t seq;
	/*
	 * Damaged snapshots are skipped (with a warning) in favour of older ones.  A
	 * snapshot that is intact but does not fit the program (a class changed or
	 * is missing) is an error: a cold start would silently lose the state.
	 */
	if (sp_store_load_newest (sp_store, sp_mono_restore, NULL, sp_mono_warn, NULL, &data, &size, &seq, err) < 0) {
		sp_store_close (sp_store);
		sp_store = NULL;
		return -1;
	}
	sp_store_release (sp_store, data, size);
	sp_warm = data != NULL;
	if (sp_warm) {
		sp_stats [SP_STAT_RESTORED_SEQUENCE] = (gint64)seq;
		sp_stats [SP_STAT_RESTORED_BYTES] = (gint64)size;
	}
	sp_stats [SP_STAT_RESTORE_NS] = (gint64)(sp_mono_monotonic_ns () - t0);
	if (sp_warm && sp_options.verbose)
		fprintf (stderr, "spmono: warm restart from snapshot %llu in %s\n", (unsigned long long)seq, sp_store->location);
	sp_started = TRUE;
	return 0;
}

/* ---- SendPData ----------------------------------------------------------- */

static int
sp_mono_serialize_all (uint64_t seq, SpError *err)
{
	SpSnapHeader h = { .sequence = seq, .time_ns = sp_mono_now_ns () };
	sp_ser.whole_objects = TRUE;      /* stop-the-world: no pause to bound, one record an object */
	if (sp_ser_begin (&sp_ser, &sp_out, &h, err) < 0)
		return -1;
	int rc = 0;
	for (guint i = 0; i < sp_roots->len && rc == 0; i++) {
		SpRoot *root = sp_mono_root_at (i);
		rc = sp_ser_root (&sp_ser, root->id, mono_gchandle_get_target_internal (root->handle), err);
	}
	while (rc == 0 && (rc = sp_ser_step (&sp_ser, 4096, err)) == 1)
		rc = 0;
	if (rc == 0)
		rc = sp_ser_finish (&sp_ser, err);
	sp_client_lid_reset ();
	return rc;
}

/* SendPData, stop-the-world: serialize on this thread, then commit.  Called with the store started. */
static int
sp_mono_send (SpError *err)
{
	uint64_t t0 = sp_mono_monotonic_ns (), t1 = 0;
	uint64_t seq = sp_store_next_sequence (sp_store);
	if (sp_mono_serialize_all (seq, err) < 0 ||
	    (t1 = sp_mono_monotonic_ns (), sp_store_commit (sp_store, sp_out.data, sp_out.len, seq, err) < 0)) {
		sp_stats [SP_STAT_FAILURES]++;
		return sp_error_prefix (err, "SendPData");
	}
	uint64_t t2 = sp_mono_monotonic_ns ();
	sp_stats [SP_STAT_SNAPSHOTS]++;
	sp_stats [SP_STAT_LAST_SEQUENCE] = (gint64)seq;
	sp_stats [SP_STAT_LAST_OBJECTS] = (gint64)sp_ser.objects_written;
	sp_stats [SP_STAT_LAST_BYTES] = (gint64)sp_out.len;
	sp_stats [SP_STAT_LAST_SERIALIZE_NS] = (gint64)(t1 - t0);
	sp_stats [SP_STAT_LAST_COMMIT_NS] = (gint64)(t2 - t1);
	if (sp_options.verbose)
		fprintf (stderr, "spmono: snapshot %llu: %llu objects, %zu bytes, serialized in %.3f ms, committed in %.3f ms\n",
			 (unsigned long long)seq, (unsigned long long)sp_ser.objects_written, sp_out.len,
			 (t1 - t0) / 1e6, (t2 - t1) / 1e6);
	/* Do not pin a large buffer between cycles. */
	if (sp_out.cap > (64u << 20))
		sp_buf_free (&sp_out);
	return 0;
}

/* ---- internal calls -------------------------------------------------------- */

/* Incremental mode (sp-cycle.c, later in this unit). */
static int sp_cycle_check_runtime (SpError *err);
static int sp_cycle_request (SpError *err);
static int sp_cycle_wait (SpError *err);
static void sp_cycle_pause_histogram (MonoArray *out, gboolean reset);

/*
 * Every internal call runs under sp_lock, with the store open and the newest
 * snapshot restored (sp_mono_enter), and returns NULL or the error message
 * (sp_mono_leave), which SPC throws as an SPersistenceException.
 */
static int
sp_mono_enter (SpError *err)
{
	mono_coop_mutex_lock (&sp_lock);
	return sp_mono_start (err);
}

static MonoString *
sp_mono_leave (int rc, const SpError *err)
{
	mono_coop_mutex_unlock (&sp_lock);
	if (rc == 0)
		return NULL;
	ERROR_DECL (error);
	MonoString *msg = mono_string_new_checked (mono_domain_get (), err->msg, error);
	mono_error_cleanup (error);
	return msg;
}

static MonoString *
sp_icall_add_root (MonoObject *root, gint32 *id)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0 && sp_next_root_id > SP_MAX_ROOT_ID)
		rc = sp_error_set (&err, "no root ids left (%u were handed out)", SP_MAX_ROOT_ID);
	if (rc == 0) {
		SpRoot entry = { sp_next_root_id++, mono_gchandle_new_internal (root, FALSE) };
		g_array_append_val (sp_roots, entry);
		*id = (gint32)entry.id;
	}
	return sp_mono_leave (rc, &err);
}

/* The index of root `id` in sp_roots (binary search), or -1 and err. */
static int
sp_mono_root_index (gint32 id, SpError *err)
{
	guint lo = 0, hi = sp_roots->len;
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;
		guint32 at = sp_mono_root_at (mid)->id;
		if (at == (guint32)id && id > 0)
			return (int)mid;
		if (at < (guint32)id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return sp_error_set (err, "there is no persistent root with id %d", id);
}

static MonoString *
sp_icall_remove_root (gint32 id)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	int index = rc == 0 ? sp_mono_root_index (id, &err) : -1;
	if (index >= 0) {
		mono_gchandle_free_internal (sp_mono_root_at ((guint)index)->handle);
		g_array_remove_index (sp_roots, (guint)index);
	}
	return sp_mono_leave (index >= 0 ? 0 : -1, &err);
}

static MonoString *
sp_icall_recv (gint32 id, MonoObject **root)
{
	SpError err = { 0 };
	*root = NULL;
	int rc = sp_mono_enter (&err);
	int index = rc == 0 ? sp_mono_root_index (id, &err) : -1;
	if (index >= 0)
		*root = mono_gchandle_get_target_internal (sp_mono_root_at ((guint)index)->handle);
	return sp_mono_leave (index >= 0 ? 0 : -1, &err);
}

static MonoString *
sp_icall_is_warm (MonoBoolean *warm)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	*warm = rc == 0 && sp_warm;
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_send (void)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		rc = sp_options.mode == SP_MODE_INCREMENTAL ? sp_cycle_request (&err) : sp_mono_send (&err);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_wait (void)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		rc = sp_cycle_wait (&err);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_stats (MonoArray *out)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	for (int i = 0; rc == 0 && i < SP_STAT_COUNT && (uintptr_t)i < mono_array_length_internal (out); i++)
		mono_array_set_fast (out, gint64, i, sp_stats [i]);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_pause_histogram (MonoArray *out, MonoBoolean reset)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		sp_cycle_pause_histogram (out, reset);
	return sp_mono_leave (rc, &err);
}

/*
 * For benchmarks: decode the newest snapshot again into new objects, which are
 * dropped, and report how long that took (the decode figure of a warm process).
 */
static MonoString *
sp_icall_bench_decode (gint64 *ns)
{
	SpError err = { 0 };
	uint8_t *data = NULL;
	size_t size;
	uint64_t seq;
	*ns = -1;
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		rc = sp_store_load_newest (sp_store, NULL, NULL, NULL, NULL, &data, &size, &seq, &err);
	if (rc == 0 && !data)
		rc = sp_error_set (&err, "the store holds no snapshot");
	if (rc == 0 && (rc = sp_mono_decode (data, size, FALSE, &err)) == 0)
		*ns = sp_stats [SP_STAT_RESTORE_DECODE_NS];
	if (data)
		sp_store_release (sp_store, data, size);
	return sp_mono_leave (rc < 0 ? -1 : 0, &err);
}

/* ---- driver hooks (sp-mono.h) ---------------------------------------------- */

gboolean
sp_mono_parse_option (const char *arg)
{
	SpError err = { 0 };
	if (sp_options_parse (&sp_options, arg, &err) == 0)
		return TRUE;
	fprintf (stderr, "spmono: %s\n", err.msg);
	return FALSE;
}

void
sp_mono_print_usage (FILE *out)
{
	sp_options_usage (out);
}

/* SPersistence.dll is found next to the runtime (<bin>/../lib), before any other copy. */
static MonoAssembly *
sp_mono_preload (MonoAssemblyLoadContext *alc, MonoAssemblyName *aname, char **paths, gboolean refonly, gpointer user_data, MonoError *error)
{
	(void)paths;
	(void)user_data;
	if (refonly || strcmp (aname->name, "SPersistence") != 0)
		return NULL;
	char exe [4096];
	ssize_t len = readlink ("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return NULL;
	exe [len] = '\0';
	char *bindir = g_path_get_dirname (exe);
	char *path = g_build_filename (bindir, "..", "lib", "SPersistence.dll", (const char *)NULL);
	MonoAssembly *assembly = NULL;
	if (g_file_test (path, G_FILE_TEST_EXISTS)) {
		MonoAssemblyOpenRequest req;
		mono_assembly_request_prepare_open (&req, MONO_ASMCTX_DEFAULT, alc);
		MonoImageOpenStatus status;
		assembly = mono_assembly_request_open (path, &req, &status);
	}
	g_free (path);
	g_free (bindir);
	return assembly;
}

/* The SP and writer tasks park when the runtime shuts down (sp-cycle.c). */
static void sp_cycle_shutdown_begin (MonoProfiler *prof);

void
sp_mono_init (const char *program)
{
	SpError err = { 0 };
	if (sp_options_check (&sp_options, &err) < 0 || sp_cycle_check_runtime (&err) < 0) {
		fprintf (stderr, "spmono: %s\n", err.msg);
		exit (1);
	}
	mono_coop_mutex_init (&sp_lock);
	sp_program = g_strdup (program);
	sp_roots = g_array_new (FALSE, TRUE, sizeof (SpRoot));
	sp_class_maps = g_hash_table_new (NULL, NULL);
	sp_class_map_failures = g_hash_table_new (NULL, NULL);
	sp_ser_init (&sp_ser);
	sp_buf_init (&sp_out);
	mono_install_assembly_preload_hook_v2 (sp_mono_preload, NULL, FALSE);
	MonoProfilerHandle profiler = mono_profiler_create (NULL);
	mono_profiler_set_gc_event_callback (profiler, sp_mono_gc_event);
	mono_profiler_set_runtime_shutdown_begin_callback (profiler, sp_cycle_shutdown_begin);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_add_root", sp_icall_add_root);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_remove_root", sp_icall_remove_root);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_recv", sp_icall_recv);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_is_warm", sp_icall_is_warm);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_send", sp_icall_send);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_wait", sp_icall_wait);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_stats", sp_icall_stats);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_pause_histogram", sp_icall_pause_histogram);
	mono_add_internal_call_internal ("SPersistence.SPDiagnostics::sp_bench_decode", sp_icall_bench_decode);
}
