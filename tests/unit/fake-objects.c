/* fake-objects.c: see fake-objects.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strdup */
#endif
#include "fake-objects.h"

#include "unit.h"

#include <glib.h>

#include "sp-evolve.h"
#include "sp-serialize.h"

#define FAKE_MAGIC_LIVE 0x4c495645u
#define FAKE_MAGIC_DEAD 0xdeaddeadu

typedef struct FakeObjRec {
	void *obj;
	size_t size;
} FakeObjRec;

static GArray *fake_objects;      /* FakeObjRec of every live object */
static GPtrArray *fake_graveyard; /* moved-away blocks, poisoned, freed at reset */
static GPtrArray *fake_classes;   /* FakeClass * */
static FakeClass *fake_string_cls;
static void **fake_lids;          /* [0..fake_nlids] */
static uint32_t fake_nlids, fake_lid_cap;
static uint32_t fake_hash_counter;
static uint32_t fake_hash_buckets;
static bool fake_no_identity_slots;
static uint32_t fake_bind_fail_from;
static unsigned fake_class_failures;
static uint32_t fake_epoch;
static const SpStoreLog *fake_unseen_log;

static void
fake_init_once (void)
{
	if (!fake_objects) {
		fake_objects = g_array_new (FALSE, FALSE, sizeof (FakeObjRec));
		fake_graveyard = g_ptr_array_new ();
		fake_classes = g_ptr_array_new ();
	}
}

static void
fake_die (const char *fmt, const char *arg)
{
	print_error (fmt, arg);
	print_error ("\n");
	fail ();
}

/* ---- classes ------------------------------------------------------------ */

static FakeClass *
fake_class_new (uint8_t kind, const char *assembly, const char *name)
{
	fake_init_once ();
	FakeClass *c = calloc (1, sizeof *c);
	assert_non_null (c);
	c->sp.kind = kind;
	c->sp.assembly = strdup (assembly);
	c->sp.name = strdup (name);
	c->sp.client = c;
	c->persistable = true;
	c->instance_size = FAKE_HEADER_SIZE;
	g_ptr_array_add (fake_classes, c);
	return c;
}

FakeClass *
fake_class_object (const char *assembly, const char *name)
{
	return fake_class_new (SP_CLASS_OBJECT, assembly, name);
}

FakeClass *
fake_class_unpersistable (const char *name)
{
	FakeClass *c = fake_class_new (SP_CLASS_OBJECT, "System", name);
	c->persistable = false;
	c->instance_size = FAKE_HEADER_SIZE + 16;
	return c;
}

static void
fake_class_push_field (FakeClass *c, const char *name, SpKind kind, const char *type_name, uint32_t offset)
{
	if (c->sp.nfields == c->max_fields) {
		c->max_fields = c->max_fields ? 2 * c->max_fields : 8;
		c->sp.fields = realloc (c->sp.fields, c->max_fields * sizeof *c->sp.fields);
		assert_non_null (c->sp.fields);
	}
	SpField *f = &c->sp.fields [c->sp.nfields++];
	memset (f, 0, sizeof *f);
	f->name = strdup (name);
	f->type_name = type_name ? strdup (type_name) : NULL;
	f->offset = offset;
	f->kind = (uint8_t)kind;
}

static uint32_t
fake_kind_mem_size (SpKind kind)
{
	return kind == SP_KIND_REF ? (uint32_t)sizeof (void *) : sp_kind_size (kind);
}

uint32_t
fake_class_add_field (FakeClass *c, const char *name, SpKind kind, const char *type_name)
{
	uint32_t size = fake_kind_mem_size (kind);
	uint32_t end = c->sp.kind == SP_CLASS_OBJECT ? c->instance_size : c->sp.elem_size;
	uint32_t offset = (end + size - 1) / size * size;
	fake_class_add_field_at (c, name, kind, type_name, offset);
	return offset;
}

void
fake_class_add_field_at (FakeClass *c, const char *name, SpKind kind, const char *type_name, uint32_t offset)
{
	uint32_t end = offset + fake_kind_mem_size (kind);
	fake_class_push_field (c, name, kind, type_name, offset);
	if (c->sp.kind == SP_CLASS_OBJECT) {
		if (offset < FAKE_HEADER_SIZE)
			fake_die ("field %s overlaps the object header", name);
		if (end > c->instance_size)
			c->instance_size = end;
	} else if (end > c->sp.elem_size) {
		fake_die ("leaf %s lies outside its array element", name);
	}
}

uint32_t
fake_class_reserve (FakeClass *c, uint32_t bytes)
{
	uint32_t offset = (c->instance_size + 7) / 8 * 8;
	c->instance_size = offset + bytes;
	return offset;
}

FakeClass *
fake_class_string (void)
{
	if (!fake_string_cls)
		fake_string_cls = fake_class_new (SP_CLASS_STRING, "mscorlib", "System.String");
	return fake_string_cls;
}

static const char *
fake_prim_type_name (SpKind kind)
{
	static const char *const names [] = {
		NULL, "System.Boolean", "System.Char", "System.SByte", "System.Byte", "System.Int16",
		"System.UInt16", "System.Int32", "System.UInt32", "System.Int64", "System.UInt64",
		"System.Single", "System.Double",
	};
	if (kind < SP_KIND_BOOL || kind > SP_KIND_R8)
		fake_die ("%s is not a primitive kind", "kind");
	return names [kind];
}

FakeClass *
fake_class_prim_array (SpKind kind)
{
	char name [64];
	snprintf (name, sizeof name, "%s[]", fake_prim_type_name (kind));
	FakeClass *c = fake_class_new (SP_CLASS_ARRAY, "mscorlib", name);
	c->sp.elem_size = sp_kind_size (kind);
	fake_class_push_field (c, "", kind, NULL, 0);
	return c;
}

FakeClass *
fake_class_ref_array (const char *name, const char *elem_type_name)
{
	FakeClass *c = fake_class_new (SP_CLASS_ARRAY, "App", name);
	c->sp.elem_size = sizeof (void *);
	fake_class_push_field (c, "", SP_KIND_REF, elem_type_name, 0);
	return c;
}

FakeClass *
fake_class_struct_array (const char *name, uint32_t elem_size)
{
	FakeClass *c = fake_class_new (SP_CLASS_ARRAY, "App", name);
	c->sp.elem_size = elem_size;
	return c;
}

void
fake_class_rename (FakeClass *c, const char *name)
{
	free ((char *)c->sp.name);
	c->sp.name = strdup (name);
	assert_non_null (c->sp.name);
}

FakeClass *
fake_class_find (const char *name)
{
	fake_init_once ();
	for (guint i = 0; i < fake_classes->len; i++) {
		FakeClass *c = g_ptr_array_index (fake_classes, i);
		if (strcmp (c->sp.name, name) == 0)
			return c;
	}
	return NULL;
}

const SpField *
fake_class_field (const FakeClass *c, const char *name)
{
	for (uint32_t i = 0; i < c->sp.nfields; i++)
		if (strcmp (c->sp.fields [i].name, name) == 0)
			return &c->sp.fields [i];
	return NULL;
}

static void
fake_class_free (FakeClass *c)
{
	for (uint32_t i = 0; i < c->sp.nfields; i++) {
		free ((char *)c->sp.fields [i].name);
		free ((char *)c->sp.fields [i].type_name);
	}
	free (c->sp.fields);
	free ((char *)c->sp.assembly);
	free ((char *)c->sp.name);
	free (c);
}

/* ---- objects ------------------------------------------------------------ */

static void *
fake_alloc (FakeClass *c, size_t size, uint64_t length)
{
	fake_init_once ();
	void *obj = calloc (1, size);
	assert_non_null (obj);
	FakeHeader *h = obj;
	h->klass = c;
	h->length = length;
	h->hash = ++fake_hash_counter;
	h->magic = FAKE_MAGIC_LIVE;
	FakeObjRec rec = { obj, size };
	g_array_append_val (fake_objects, rec);
	return obj;
}

void *
fake_new_object (FakeClass *c)
{
	if (c->sp.kind != SP_CLASS_OBJECT)
		fake_die ("fake_new_object: %s is not an object class", c->sp.name);
	return fake_alloc (c, c->instance_size, 0);
}

static size_t fake_size_of (void *obj);

void *
fake_clone (void *obj)
{
	FakeHeader *h = obj;
	size_t size = fake_size_of (obj);
	void *copy = fake_alloc (h->klass, size, h->length);
	memcpy (fake_data (copy), fake_data (obj), size - FAKE_HEADER_SIZE);
	fake_header (copy)->lid_slot = h->lid_slot;
	return copy;
}

void
fake_set_identity_slots (bool on)
{
	fake_no_identity_slots = !on;
}

void *
fake_new_array (FakeClass *c, uint64_t length)
{
	if (c->sp.kind != SP_CLASS_ARRAY)
		fake_die ("fake_new_array: %s is not an array class", c->sp.name);
	/* At least one byte of data, so that the element pointer of [] is inside the block. */
	return fake_alloc (c, FAKE_HEADER_SIZE + (size_t)length * c->sp.elem_size + 1, length);
}

void *
fake_new_string_utf16 (const uint16_t *units, uint32_t n)
{
	void *s = fake_alloc (fake_class_string (), FAKE_HEADER_SIZE + ((size_t)n + 1) * 2, n);
	if (n && units)
		memcpy (fake_string_units (s), units, (size_t)n * 2);
	return s;
}

void *
fake_new_string_ascii (const char *s)
{
	size_t n = strlen (s);
	uint16_t *u = malloc ((n + 1) * sizeof *u);
	assert_non_null (u);
	for (size_t i = 0; i < n; i++)
		u [i] = (uint8_t)s [i];
	void *str = fake_new_string_utf16 (u, (uint32_t)n);
	free (u);
	return str;
}

uint8_t *
fake_elem (void *arr, uint64_t i)
{
	return fake_data (arr) + i * fake_class_of (arr)->sp.elem_size;
}

void *
fake_field_ptr (void *obj, const char *field)
{
	const SpField *f = fake_class_field (fake_class_of (obj), field);
	if (!f)
		fake_die ("no field %s", field);
	return (uint8_t *)obj + f->offset;
}

void
fake_set (void *obj, const char *field, const void *value, size_t size)
{
	memcpy (fake_field_ptr (obj, field), value, size);
}

void
fake_get (void *obj, const char *field, void *value, size_t size)
{
	memcpy (value, fake_field_ptr (obj, field), size);
}

void
fake_set_ref (void *obj, const char *field, void *target)
{
	fake_set (obj, field, &target, sizeof target);
}

void *
fake_get_ref (void *obj, const char *field)
{
	void *t;
	fake_get (obj, field, &t, sizeof t);
	return t;
}

/* ---- sp-client.h ---------------------------------------------------------- */

const void *
sp_client_class_token (const void *obj)
{
	return ((const FakeHeader *)obj)->klass;
}

SpClass *
sp_client_class_of (void *obj, SpError *err)
{
	FakeHeader *h = obj;
	if (h->magic != FAKE_MAGIC_LIVE) {
		fake_class_failures++;
		sp_error_set (err, "fake object model: %p is a stale pointer to an object the GC moved", obj);
		return NULL;
	}
	if (!h->klass->persistable) {
		fake_class_failures++;
		sp_error_set (err, "%s is not [SPersistent]", h->klass->sp.name);
		return NULL;
	}
	return &h->klass->sp;
}

uint32_t
sp_client_string_length (void *str)
{
	return (uint32_t)fake_length (str);
}

const uint16_t *
sp_client_string_chars (void *str)
{
	return fake_string_units (str);
}

uint64_t
sp_client_array_length (void *arr)
{
	return fake_length (arr);
}

void *
sp_client_array_data (void *arr)
{
	return fake_data (arr);
}

uint32_t
sp_client_identity_hash (void *obj)
{
	uint32_t h = fake_header (obj)->hash;
	return fake_hash_buckets ? h % fake_hash_buckets : h;
}

uint32_t
sp_client_lid_slot (void *obj)
{
	FakeHeader *h = obj;
	if (fake_no_identity_slots || h->magic != FAKE_MAGIC_LIVE || h->klass->sp.kind != SP_CLASS_OBJECT)
		return 0;
	return (uint32_t)offsetof (FakeHeader, lid_slot);
}

int
sp_client_lid_bind (uint32_t lid, void *obj, SpError *err)
{
	if (fake_bind_fail_from && lid >= fake_bind_fail_from)
		return sp_error_set (err, "fake object model: out of memory binding lid %u", lid);
	/* The contract: LIDs are bound 1, 2, ... in order. */
	if (lid != fake_nlids + 1)
		return sp_error_set (err, "fake object model: lid %u bound after lid %u", lid, fake_nlids);
	if (lid >= fake_lid_cap) {
		uint32_t cap = fake_lid_cap ? 2 * fake_lid_cap : 1024;
		void **t = realloc (fake_lids, cap * sizeof *t);
		if (!t)
			return sp_error_set (err, "out of memory");
		fake_lids = t;
		fake_lid_cap = cap;
	}
	fake_lids [lid] = obj;
	fake_nlids = lid;
	return 0;
}

void *
sp_client_lid_object (uint32_t lid)
{
	return lid >= 1 && lid <= fake_nlids ? fake_lids [lid] : NULL;
}

void
sp_client_lid_prefetch (uint32_t lid)
{
	if (lid >= 1 && lid <= fake_nlids)
		__builtin_prefetch (&fake_lids [lid]);
}

void
sp_client_lid_reset (void)
{
	fake_nlids = 0;
}

uint32_t
sp_client_gc_epoch (void)
{
	return fake_epoch;
}

/* The block's bytes: header and data, as fake_alloc sized it. */
static size_t
fake_size_of (void *obj)
{
	FakeHeader *h = obj;
	switch (h->klass->sp.kind) {
	case SP_CLASS_STRING: return FAKE_HEADER_SIZE + ((size_t)h->length + 1) * 2;
	case SP_CLASS_ARRAY: return FAKE_HEADER_SIZE + (size_t)h->length * h->klass->sp.elem_size + 1;
	default: return h->klass->instance_size;
	}
}

bool
sp_client_changed_unseen (void *obj, const void *from, const void *to)
{
	if (!fake_unseen_log)
		return false;
	uintptr_t lo = (uintptr_t)obj, hi = lo + fake_size_of (obj);
	return sp_storelog_touches (fake_unseen_log, lo, hi, from ? (uintptr_t)from : lo, to ? (uintptr_t)to : hi);
}

/* Objects given unknown data (fake_set_unknown_values); a few per test. */
#define FAKE_MAX_UNKNOWN 8
static struct {
	void *obj;
	const uint8_t *prims;
	void *const *refs;
} fake_unknown [FAKE_MAX_UNKNOWN];
static size_t fake_nunknown;

void
fake_set_unknown_values (void *obj, const uint8_t *prims, void *const *refs)
{
	if (fake_nunknown == FAKE_MAX_UNKNOWN)
		fake_die ("fake object model: more than %s objects with unknown data", "8");
	fake_unknown [fake_nunknown].obj = obj;
	fake_unknown [fake_nunknown].prims = prims;
	fake_unknown [fake_nunknown++].refs = refs;
}

bool
sp_client_unknown_values (void *obj, const SpClass *c, const uint8_t **prims, void *const **refs)
{
	(void)c;
	for (size_t i = 0; i < fake_nunknown; i++)
		if (fake_unknown [i].obj == obj) {
			*prims = fake_unknown [i].prims;
			*refs = fake_unknown [i].refs;
			return true;
		}
	return false;
}

bool fake_keep_unknown;
FakeLinkMode fake_link_mode = FAKE_LINKS;
FakeClass *fake_links_guess;
FakeDecodeCounts fake_decode_counts;

void
fake_set_unseen_log (const SpStoreLog *log)
{
	fake_unseen_log = log;
}

void
fake_set_hash_buckets (uint32_t k)
{
	fake_hash_buckets = k;
}

void
fake_fail_bind_from (uint32_t n)
{
	fake_bind_fail_from = n;
}

uint32_t
fake_lid_count (void)
{
	return fake_nlids;
}

unsigned
fake_class_of_failures (void)
{
	return fake_class_failures;
}

/* ---- moving GC ------------------------------------------------------------ */

static void *
fake_forward (GHashTable *fwd, void *p)
{
	void *n = p ? g_hash_table_lookup (fwd, p) : NULL;
	return n ? n : p;
}

static void
fake_forward_leaves (GHashTable *fwd, const SpClass *c, uint8_t *base)
{
	for (uint32_t i = 0; i < c->nfields; i++) {
		if (c->fields [i].kind != SP_KIND_REF)
			continue;
		void *p;
		memcpy (&p, base + c->fields [i].offset, sizeof p);
		p = fake_forward (fwd, p);
		memcpy (base + c->fields [i].offset, &p, sizeof p);
	}
}

void
fake_gc_advance_epoch (uint32_t n)
{
	fake_epoch += n;
}

void
fake_gc_move_all (void **slots, size_t nslots)
{
	fake_init_once ();
	fake_epoch++;   /* before anything moves, as the contract says */
	GHashTable *fwd = g_hash_table_new (g_direct_hash, g_direct_equal);
	for (guint i = 0; i < fake_objects->len; i++) {
		FakeObjRec *rec = &g_array_index (fake_objects, FakeObjRec, i);
		void *moved = malloc (rec->size);
		assert_non_null (moved);
		memcpy (moved, rec->obj, rec->size);
		g_hash_table_insert (fwd, rec->obj, moved);
		/* Poison the old copy: a stale pointer now reads a dead object. */
		memset (rec->obj, 0xdb, rec->size);
		fake_header (rec->obj)->magic = FAKE_MAGIC_DEAD;
		g_ptr_array_add (fake_graveyard, rec->obj);
		rec->obj = moved;
	}
	for (guint i = 0; i < fake_objects->len; i++) {
		void *obj = g_array_index (fake_objects, FakeObjRec, i).obj;
		const SpClass *c = &fake_class_of (obj)->sp;
		if (c->kind == SP_CLASS_OBJECT)
			fake_forward_leaves (fwd, c, obj);
		else if (c->kind == SP_CLASS_ARRAY)
			for (uint64_t e = 0; e < fake_length (obj); e++)
				fake_forward_leaves (fwd, c, fake_elem (obj, e));
	}
	for (uint32_t lid = 1; lid <= fake_nlids; lid++)
		fake_lids [lid] = fake_forward (fwd, fake_lids [lid]);
	for (size_t i = 0; i < nslots; i++)
		slots [i] = fake_forward (fwd, slots [i]);
	g_hash_table_destroy (fwd);
}

int
fake_teardown (void **state)
{
	(void)state;
	fake_reset ();
	return 0;
}

size_t
fake_object_mark (void)
{
	fake_init_once ();
	return fake_objects->len;
}

void
fake_free_objects_since (size_t mark)
{
	for (guint i = (guint)mark; i < fake_objects->len; i++)
		free (g_array_index (fake_objects, FakeObjRec, i).obj);
	g_array_set_size (fake_objects, (guint)mark);
}

void
fake_reset (void)
{
	fake_init_once ();
	for (guint i = 0; i < fake_objects->len; i++)
		free (g_array_index (fake_objects, FakeObjRec, i).obj);
	g_array_set_size (fake_objects, 0);
	for (guint i = 0; i < fake_graveyard->len; i++)
		free (g_ptr_array_index (fake_graveyard, i));
	g_ptr_array_set_size (fake_graveyard, 0);
	for (guint i = 0; i < fake_classes->len; i++)
		sp_evolve_unknown_free ((SpUnknown *)((FakeClass *)g_ptr_array_index (fake_classes, i))->sp.unknown);
	for (guint i = 0; i < fake_classes->len; i++)
		fake_class_free (g_ptr_array_index (fake_classes, i));
	g_ptr_array_set_size (fake_classes, 0);
	fake_string_cls = NULL;
	free (fake_lids);
	fake_lids = NULL;
	fake_nlids = fake_lid_cap = 0;
	fake_hash_counter = 0;
	fake_hash_buckets = 0;
	fake_bind_fail_from = 0;
	fake_class_failures = 0;
	fake_epoch = 0;
	fake_unseen_log = NULL;
	fake_nunknown = 0;
	fake_keep_unknown = false;
	fake_link_mode = FAKE_LINKS;
	fake_links_guess = NULL;
}

/* ---- graph equality ------------------------------------------------------- */

typedef struct FakeEq {
	GHashTable *a2b, *b2a;
	GQueue pending;          /* pairs: a, b, a, b, ... */
	char *why;
	size_t why_cap;
	char path [256];
} FakeEq;

static bool
fake_eq_fail (FakeEq *eq, const char *fmt, const char *a, const char *b)
{
	char msg [512];
	snprintf (msg, sizeof msg, fmt, a, b);
	if (eq->why)
		snprintf (eq->why, eq->why_cap, "%s", msg);
	return false;
}

/* Pair a with b: they must be both null, or a bijection must map one to the other. */
static bool
fake_eq_pair (FakeEq *eq, void *a, void *b, const char *where)
{
	if (!a || !b) {
		if (a || b)
			return fake_eq_fail (eq, "%s: null in one graph only%s", where, "");
		return true;
	}
	void *mapped_b = g_hash_table_lookup (eq->a2b, a);
	void *mapped_a = g_hash_table_lookup (eq->b2a, b);
	if (mapped_b || mapped_a) {
		if (mapped_b != b || mapped_a != a)
			return fake_eq_fail (eq, "%s: sharing differs (an object is reached as two, or two as one)%s", where, "");
		return true;
	}
	g_hash_table_insert (eq->a2b, a, b);
	g_hash_table_insert (eq->b2a, b, a);
	g_queue_push_tail (&eq->pending, a);
	g_queue_push_tail (&eq->pending, b);
	return true;
}

static bool
fake_eq_leaves (FakeEq *eq, const SpClass *c, const uint8_t *a, const uint8_t *b, const char *owner)
{
	char where [600];
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		snprintf (where, sizeof where, "%s.%s", owner, f->name);
		if (f->kind == SP_KIND_REF) {
			void *pa, *pb;
			memcpy (&pa, a + f->offset, sizeof pa);
			memcpy (&pb, b + f->offset, sizeof pb);
			if (!fake_eq_pair (eq, pa, pb, where))
				return false;
		} else if (f->kind == SP_KIND_BOOL) {
			if ((a [f->offset] != 0) != (b [f->offset] != 0))
				return fake_eq_fail (eq, "%s: bool differs%s", where, "");
		} else if (memcmp (a + f->offset, b + f->offset, sp_kind_size (f->kind)) != 0) {
			return fake_eq_fail (eq, "%s: %s value differs", where, sp_kind_name (f->kind));
		}
	}
	return true;
}

static bool
fake_eq_objects (FakeEq *eq, void *a, void *b)
{
	FakeClass *ca = fake_class_of (a), *cb = fake_class_of (b);
	if (ca != cb)
		return fake_eq_fail (eq, "class %s vs %s", ca->sp.name, cb->sp.name);
	if (fake_length (a) != fake_length (b))
		return fake_eq_fail (eq, "%s: lengths differ%s", ca->sp.name, "");
	switch (ca->sp.kind) {
	case SP_CLASS_STRING:
		if (memcmp (fake_string_units (a), fake_string_units (b), fake_length (a) * 2) != 0)
			return fake_eq_fail (eq, "string units differ%s%s", "", "");
		return true;
	case SP_CLASS_OBJECT:
		return fake_eq_leaves (eq, &ca->sp, a, b, ca->sp.name);
	case SP_CLASS_ARRAY:
		for (uint64_t i = 0; i < fake_length (a); i++)
			if (!fake_eq_leaves (eq, &ca->sp, fake_elem (a, i), fake_elem (b, i), ca->sp.name))
				return false;
		return true;
	}
	return fake_eq_fail (eq, "class %s has kind %s", ca->sp.name, "?");
}

bool
fake_graphs_equal (void **a, void **b, size_t n, char *why, size_t why_cap)
{
	FakeEq eq = { .why = why, .why_cap = why_cap };
	eq.a2b = g_hash_table_new (g_direct_hash, g_direct_equal);
	eq.b2a = g_hash_table_new (g_direct_hash, g_direct_equal);
	g_queue_init (&eq.pending);
	bool ok = true;
	for (size_t i = 0; ok && i < n; i++)
		ok = fake_eq_pair (&eq, a [i], b [i], "root");
	while (ok && !g_queue_is_empty (&eq.pending)) {
		void *x = g_queue_pop_head (&eq.pending);
		void *y = g_queue_pop_head (&eq.pending);
		ok = fake_eq_objects (&eq, x, y);
	}
	g_queue_clear (&eq.pending);
	g_hash_table_destroy (eq.a2b);
	g_hash_table_destroy (eq.b2a);
	return ok;
}

size_t
fake_graph_count (void **roots, size_t n)
{
	GHashTable *seen = g_hash_table_new (g_direct_hash, g_direct_equal);
	GQueue todo = G_QUEUE_INIT;
	for (size_t i = 0; i < n; i++)
		if (roots [i] && g_hash_table_add (seen, roots [i]))
			g_queue_push_tail (&todo, roots [i]);
	while (!g_queue_is_empty (&todo)) {
		void *obj = g_queue_pop_head (&todo);
		const SpClass *c = &fake_class_of (obj)->sp;
		uint64_t count = c->kind == SP_CLASS_ARRAY ? fake_length (obj) : c->kind == SP_CLASS_OBJECT ? 1 : 0;
		for (uint64_t e = 0; e < count; e++) {
			const uint8_t *base = c->kind == SP_CLASS_ARRAY ? fake_elem (obj, e) : (const uint8_t *)obj;
			for (uint32_t i = 0; i < c->nfields; i++) {
				if (c->fields [i].kind != SP_KIND_REF)
					continue;
				void *p;
				memcpy (&p, base + c->fields [i].offset, sizeof p);
				if (p && g_hash_table_add (seen, p))
					g_queue_push_tail (&todo, p);
			}
		}
	}
	size_t total = g_hash_table_size (seen);
	g_hash_table_destroy (seen);
	return total;
}

/* ---- serialize and restore ------------------------------------------------ */

int
fake_serialize (const uint32_t *ids, void **roots, size_t nroots, size_t step, uint64_t sequence,
		SpBuf *out, SpError *err)
{
	SpSerializer s;
	if (sp_ser_init (&s) < 0)
		return sp_error_set (err, "sp_ser_init failed");
	SpSnapHeader h = { .sequence = sequence, .time_ns = 1700000000123456789ull };
	int rc = sp_ser_begin (&s, out, &h, err);
	for (size_t i = 0; rc == 0 && i < nroots; i++)
		rc = sp_ser_root (&s, ids [i], roots [i], err);
	while (rc == 0) {
		int more = sp_ser_step (&s, step, err);
		if (more < 0)
			rc = -1;
		else if (more == 0)
			break;
	}
	if (rc == 0)
		rc = sp_ser_finish (&s, err);
	sp_ser_free (&s);
	return rc < 0 ? -1 : 0;
}

typedef struct FakeDecode {
	void **objects;          /* [1..nobjects] */
	uint32_t nobjects;
	bool early_missed;
} FakeDecode;


static int
fake_decode_begin (void *ctx, const SpSnapTrailer *t, SpError *err)
{
	FakeDecode *d = ctx;
	d->nobjects = t->nobjects;
	d->objects = calloc ((size_t)t->nobjects + 1, sizeof *d->objects);
	return d->objects ? 0 : sp_error_set (err, "out of memory");
}

static int
fake_decode_resolve (void *ctx, SpSnapClass *c, SpError *err)
{
	(void)ctx;
	FakeClass *live = fake_class_find (c->name);
	if (!live)
		return sp_error_set (err, "class %s cannot be found", c->name);
	c->resolved = &live->sp;
	c->keep_unknown = fake_keep_unknown && c->kind == SP_CLASS_OBJECT;
	/* A reference leaf's declared class, where the model has it (else untyped, as `object`): checked by store_ref and link. */
	for (uint32_t i = 0; i < live->sp.nfields; i++)
		if (live->sp.fields [i].kind == SP_KIND_REF && live->sp.fields [i].type_name)
			live->sp.fields [i].type_client = fake_class_find (live->sp.fields [i].type_name);
	return 0;
}

static void *
fake_decode_base (void *ctx, uint32_t lid, uint8_t kind)
{
	FakeDecode *d = ctx;
	void *obj = d->objects [lid];
	return kind == SP_CLASS_OBJECT ? obj : kind == SP_CLASS_ARRAY ? sp_client_array_data (obj) : (void *)fake_string_units (obj);
}

static void *
fake_decode_create (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t length, SpError *err)
{
	(void)err;
	FakeDecode *d = ctx;
	FakeClass *live = c ? (FakeClass *)((char *)c->resolved - offsetof (FakeClass, sp)) : NULL;
	uint8_t kind = c ? c->kind : SP_CLASS_STRING;
	if (d->objects [lid]) {                 /* made early by a link */
		if (fake_class_of (d->objects [lid]) == live && kind == SP_CLASS_OBJECT)
			return d->objects [lid];
		d->early_missed = true;
		fake_decode_counts.early_unused++;
	}
	if (!c)
		d->objects [lid] = fake_new_string_utf16 (NULL, (uint32_t)length);
	else
		d->objects [lid] = kind == SP_CLASS_ARRAY ? fake_new_array (live, length) : fake_new_object (live);
	return fake_decode_base (ctx, lid, kind);
}

static int
fake_store_ref (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err)
{
	FakeDecode *d = ctx;
	void *target = lid ? d->objects [lid] : NULL;
	if (target && field->type_client && field->type_client != fake_class_of (target))
		return sp_error_set (err, "object %u has type %s, which cannot be stored in '%s' of type %s",
				     lid, fake_class_of (target)->sp.name, field->name, field->type_name);
	memcpy (slot, &target, sizeof target);
	fake_decode_counts.fixed++;
	return 0;
}

/* The declared class of a typed reference field, when it is an object class (or the test's guess). */
static void *
fake_early_class (void *ctx, const SpField *field, const SpSnapClass *known, uint32_t nknown)
{
	(void)ctx;
	fake_decode_counts.early_asked++;
	bool all_resolved = known != NULL;
	for (uint32_t i = 0; known && i < nknown; i++)
		all_resolved = all_resolved && known [i].resolved;
	fake_decode_counts.early_knowing += all_resolved;
	FakeClass *declared = field->type_client;
	if (!declared || declared->sp.kind != SP_CLASS_OBJECT)
		return NULL;
	return fake_link_mode == FAKE_LINKS_GUESS ? fake_links_guess : declared;
}

static int
fake_link (void *ctx, uint32_t owner, uint8_t kind, size_t offset, const SpField *field, void *early, uint32_t lid, SpError *err)
{
	(void)err;
	FakeDecode *d = ctx;
	if (d->early_missed || (!d->objects [lid] && !early))
		return 1;
	if (!d->objects [lid])
		d->objects [lid] = fake_new_object (early);
	if (!field->type_client || fake_class_of (d->objects [lid]) != field->type_client)
		return 1;
	memcpy ((uint8_t *)fake_decode_base (d, owner, kind) + offset, &d->objects [lid], sizeof (void *));
	fake_decode_counts.linked++;
	return 0;
}

static bool
fake_early_missed (void *ctx)
{
	return ((FakeDecode *)ctx)->early_missed;
}

/* A delta's record of an object the chain made: it must be of that class (and, patched, that long). */
static void *
fake_decode_reuse (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t end, SpError *err)
{
	FakeDecode *d = ctx;
	void *obj = d->objects [lid];
	FakeClass *live = (FakeClass *)((char *)c->resolved - offsetof (FakeClass, sp));
	if (fake_class_of (obj) != live)
		return sp_error_set (err, "object %u is a %s, not a %s", lid, fake_class_of (obj)->sp.name, c->name), NULL;
	if (c->kind == SP_CLASS_ARRAY && end > fake_length (obj))
		return sp_error_set (err, "array %u has %llu elements, patched up to %llu", lid,
				     (unsigned long long)fake_length (obj), (unsigned long long)end), NULL;
	return fake_decode_base (ctx, lid, c->kind);
}

static const SpDecodeOps fake_decode_ops = {
	.begin = fake_decode_begin,
	.resolve = fake_decode_resolve,
	.create = fake_decode_create,
	.base = fake_decode_base,
	.store_ref = fake_store_ref,
	.reuse = fake_decode_reuse,
	.early_class = fake_early_class,
	.link = fake_link,
	.early_missed = fake_early_missed,
};

/* The ops of the current mode (FAKE_NO_LINKS: without the three links take), the counts reset. */
static const SpDecodeOps *
fake_decode_ops_now (void)
{
	static SpDecodeOps no_links;
	memset (&fake_decode_counts, 0, sizeof fake_decode_counts);
	if (fake_link_mode != FAKE_NO_LINKS)
		return &fake_decode_ops;
	no_links = fake_decode_ops;
	no_links.early_class = NULL;
	no_links.link = NULL;
	no_links.early_missed = NULL;
	return &no_links;
}

int
fake_decode_chain (const SpChainPart *parts, size_t n, SpSnapshot *last, void ***objects_out, size_t *failed, SpError *err)
{
	FakeDecode d = { 0 };
	int rc = sp_chain_decode (parts, n, fake_decode_ops_now (), &d, last, failed, err);
	*objects_out = d.objects;
	return rc;
}

int
fake_decode (const uint8_t *data, size_t size, SpSnapshot *snap, void ***objects_out, SpError *err)
{
	FakeDecode d = { 0 };
	int rc = sp_snapshot_decode (data, size, fake_decode_ops_now (), &d, snap, err);
	*objects_out = d.objects;
	return rc;
}

int
fake_restore (const SpSnapshot *snap, void ***objects_out, SpError *err)
{
	SpSnapshot decoded;
	int rc = fake_decode (snap->data, snap->size, &decoded, objects_out, err);
	sp_snapshot_free (&decoded);
	return rc;
}

void *
fake_restored_root (const SpSnapshot *snap, void **objects, uint32_t id, bool *found)
{
	for (uint32_t i = 0; i < snap->trailer.nroots; i++) {
		if (snap->roots [i].id == id) {
			if (found)
				*found = true;
			return snap->roots [i].lid ? objects [snap->roots [i].lid] : NULL;
		}
	}
	if (found)
		*found = false;
	return NULL;
}
