/*
 * fake-objects.h: a fake object model for the core's unit tests.
 *
 * Implements every function of sp-client.h (see fake-objects.c) over objects
 * that are malloc'd blocks:
 *
 *   [ FakeHeader: class, length, identity hash ][ data ... ]
 *
 * Objects of an SP_CLASS_OBJECT class keep their fields after the header, at
 * SpField offsets measured from the object start (like Mono, where fields
 * follow the MonoObject header); strings keep their UTF-16 units and arrays
 * their elements after the header.
 *
 * Every class and object made here is registered, and fake_reset() frees them
 * all (and forgets the LID table), so each test starts from nothing.
 */
#ifndef FAKE_OBJECTS_H
#define FAKE_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-buf.h"
#include "sp-client.h"
#include "sp-error.h"
#include "sp-layout.h"
#include "sp-snapshot.h"
#include "sp-storelog.h"

typedef struct FakeClass FakeClass;

typedef struct FakeHeader {
	FakeClass *klass;
	uint64_t length;          /* strings: UTF-16 units; arrays: elements */
	uint32_t hash;            /* identity hash assigned at allocation (kept by fake_gc_move_all) */
	uint32_t magic;           /* FAKE_MAGIC_LIVE, or FAKE_MAGIC_DEAD once moved away */
	uint32_t lid_slot;        /* OBJECT: the identity slot, when fake_set_identity_slots is on */
	uint32_t pad;
} FakeHeader;

#define FAKE_HEADER_SIZE ((uint32_t)sizeof (FakeHeader))

struct FakeClass {
	SpClass sp;               /* what sp_client_class_of hands the core */
	bool persistable;         /* false: sp_client_class_of fails naming this type */
	uint32_t instance_size;   /* OBJECT: header + fields */
	uint32_t max_fields;
};

/* ---- classes ------------------------------------------------------------ */

/* An [SPersistent]-like class; fields are added with fake_class_add_field*. */
FakeClass *fake_class_object (const char *assembly, const char *name);
/* A type that is not persistable (sp_client_class_of fails naming `name`). */
FakeClass *fake_class_unpersistable (const char *name);
/*
 * Append a leaf, aligned to its size (references: pointer size), after the
 * previous one; returns its offset.  type_name: the declared type of a REF leaf.
 */
uint32_t fake_class_add_field (FakeClass *c, const char *name, SpKind kind, const char *type_name);
/* A leaf at an explicit offset (struct leaves, padding); grows the instance as needed. */
void fake_class_add_field_at (FakeClass *c, const char *name, SpKind kind, const char *type_name, uint32_t offset);
/* Room for `bytes` of non-persistent state (no leaf describes it); returns its offset. */
uint32_t fake_class_reserve (FakeClass *c, uint32_t bytes);
/* System.String (one class per reset). */
FakeClass *fake_class_string (void);
/* "System.Int32[]" etc.: one leaf named "" at offset 0, elem_size = the kind's size. */
FakeClass *fake_class_prim_array (SpKind kind);
/* Array of references, elements declared as `elem_type_name`. */
FakeClass *fake_class_ref_array (const char *name, const char *elem_type_name);
/* Array of structs; leaves are added with fake_class_add_field_at (offsets within the element). */
FakeClass *fake_class_struct_array (const char *name, uint32_t elem_size);
/* Another name for c (its objects are of it still): a test's way to make an old version of a class. */
void fake_class_rename (FakeClass *c, const char *name);
/* The class registered under `name` (restore-time resolution), or NULL. */
FakeClass *fake_class_find (const char *name);
const SpField *fake_class_field (const FakeClass *c, const char *name);

/* ---- objects ------------------------------------------------------------ */

void *fake_new_object (FakeClass *c);
/* A copy of obj, every byte after the header (its identity slot too), as MemberwiseClone makes. */
void *fake_clone (void *obj);
/*
 * Do objects of OBJECT classes have an identity slot (sp_client_lid_slot), as
 * Mono gives [SPersistent] classes, or does the LID map keep their identity?
 * On by default, and as set until set again (fake_reset leaves it).
 */
void fake_set_identity_slots (bool on);
void *fake_new_array (FakeClass *c, uint64_t length);
void *fake_new_string_ascii (const char *s);
void *fake_new_string_utf16 (const uint16_t *units, uint32_t n);

static inline FakeHeader *fake_header (void *obj) { return (FakeHeader *)obj; }
static inline FakeClass *fake_class_of (void *obj) { return ((FakeHeader *)obj)->klass; }
static inline uint64_t fake_length (void *obj) { return ((FakeHeader *)obj)->length; }
static inline uint8_t *fake_data (void *obj) { return (uint8_t *)obj + FAKE_HEADER_SIZE; }
static inline uint16_t *fake_string_units (void *str) { return (uint16_t *)fake_data (str); }
/* Start of element i of an array. */
uint8_t *fake_elem (void *arr, uint64_t i);

/* Field access by name (the field must exist: fails the test otherwise). */
void *fake_field_ptr (void *obj, const char *field);
void fake_set (void *obj, const char *field, const void *value, size_t size);
void fake_get (void *obj, const char *field, void *value, size_t size);
void fake_set_ref (void *obj, const char *field, void *target);
void *fake_get_ref (void *obj, const char *field);
#define FAKE_SET(obj, field, type, v) do { type fake_v_ = (v); fake_set ((obj), (field), &fake_v_, sizeof fake_v_); } while (0)
static inline void fake_elem_set_ref (void *arr, uint64_t i, void *target) { memcpy (fake_elem (arr, i), &target, sizeof target); }
static inline void *fake_elem_get_ref (void *arr, uint64_t i) { void *t; memcpy (&t, fake_elem (arr, i), sizeof t); return t; }

/* ---- identity hash, LID table, moving ------------------------------------ */

/*
 * 0 (default): every object has its own hash (assigned from a counter at
 * allocation).  k > 0: the hash is the own hash modulo k, so k = 1 makes every
 * object hash to the same value (forced collisions).
 */
void fake_set_hash_buckets (uint32_t k);
/* Make sp_client_lid_bind fail (as out of memory) for lid >= n; 0 = never. */
void fake_fail_bind_from (uint32_t n);
uint32_t fake_lid_count (void);
/* sp_client_changed_unseen answers from log (NULL: never changed); the reset forgets it. */
void fake_set_unseen_log (const SpStoreLog *log);
/* Number of sp_client_class_of calls that failed since the last reset. */
unsigned fake_class_of_failures (void);

/*
 * A moving GC: advance sp_client_gc_epoch, copy every live object to a new
 * block, update every reference in every object, the LID table and the
 * caller's `slots`, and poison the old blocks (kept, so a stale pointer reads
 * a dead object, never reused memory).
 */
void fake_gc_move_all (void **slots, size_t nslots);
/* Collections that move nothing: advance sp_client_gc_epoch by n. */
void fake_gc_advance_epoch (uint32_t n);

/* Free every object and class, forget the LID table and hash settings. */
void fake_reset (void);
/* fake_reset as a cmocka teardown: each test starts from nothing. */
int fake_teardown (void **state);
/* Free the objects made since fake_object_mark () returned `mark` (loops that make many). */
size_t fake_object_mark (void);
void fake_free_objects_since (size_t mark);

/* ---- whole graphs --------------------------------------------------------- */

/*
 * Deep equality of the graphs reachable from a [i] and b [i]: same classes,
 * same primitive bytes (leaves only), same strings and lengths, and the same
 * shape: a bijection between the objects of the two graphs (sharing and cycles
 * in one are exactly those in the other).  On a difference, false and `why`.
 */
bool fake_graphs_equal (void **a, void **b, size_t n, char *why, size_t why_cap);

/* Distinct objects reachable from roots through persistent references (an independent walk). */
size_t fake_graph_count (void **roots, size_t n);

/*
 * Unknown data (sp_client_unknown_values): obj carries these values for its
 * class's unknown leaves (c->unknown, which the test sets and fake_reset
 * frees); the arrays stay the caller's.
 */
void fake_set_unknown_values (void *obj, const uint8_t *prims, void *const *refs);
/* Restores (fake_decode*) ask for unknown leaves to be kept (SpSnapClass.keep_unknown). */
extern bool fake_keep_unknown;

/* Serialize `roots` (ids [i], objects may be NULL) into out, with steps of `step` objects. */
int fake_serialize (const uint32_t *ids, void **roots, size_t nroots, size_t step, uint64_t sequence,
		    SpBuf *out, SpError *err);

/*
 * Restore a snapshot with sp_snapshot_decode: classes resolved by name through
 * fake_class_find, one fake object per LID.  *objects [lid] for lid
 * 1..nobjects (objects [0] = NULL), malloc'd, also on failure (may be NULL).
 * Returns sp_snapshot_decode's result; `snap` gets the classes and roots.
 */
int fake_decode (const uint8_t *data, size_t size, SpSnapshot *snap, void ***objects, SpError *err);
/*
 * How fake_decode* link references as the walk meets them (SpDecodeOps.link,
 * sp-decode.c): FAKE_LINKS (the default), FAKE_NO_LINKS (a restorer without
 * them: every reference by the fix-up), FAKE_LINKS_GUESS (objects made early
 * are of fake_links_guess, whatever the declared class).
 */
typedef enum { FAKE_LINKS, FAKE_NO_LINKS, FAKE_LINKS_GUESS } FakeLinkMode;
extern FakeLinkMode fake_link_mode;
extern FakeClass *fake_links_guess;
/* What the last fake_decode* did: references linked, stored by the fix-up; objects made early and not used. */
typedef struct FakeDecodeCounts {
	uint32_t linked, fixed, early_unused;
	uint32_t early_asked;    /* early_class calls ... */
	uint32_t early_knowing;  /* ... of which with every class of the snapshot known and resolved (its class index) */
} FakeDecodeCounts;
extern FakeDecodeCounts fake_decode_counts;
/* The same for a chain (sp_chain_decode): a full snapshot and the deltas on it. */
int fake_decode_chain (const SpChainPart *parts, size_t n, SpSnapshot *last, void ***objects, size_t *failed, SpError *err);
/* The same for the bytes of a parsed snapshot. */
int fake_restore (const SpSnapshot *snap, void ***objects, SpError *err);
/* The restored object of root `id`, or NULL (and *found = false when no such root). */
void *fake_restored_root (const SpSnapshot *snap, void **objects, uint32_t id, bool *found);

#endif
