/* sp-serialize.c: see sp-serialize.h and sp-format.h for the records written. */
#include "sp-serialize.h"

#include "sp-client.h"
#include "sp-crc32c.h"
#include "sp-snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

static uint64_t sp_ser_cycle_counter;

/* How many queued objects ahead sp_ser_step prefetches (about a memory latency of work). */
#define SP_SER_PREFETCH_DISTANCE 16

int
sp_ser_init (SpSerializer *s)
{
	memset (s, 0, sizeof *s);
	s->piece_bytes = SP_SER_PIECE_BYTES;
	sp_queue_init (&s->queue);
	sp_kids_init (&s->kids);
	return sp_lidmap_init (&s->lids, 1024);
}

/* A barrier could not write object lid while marking: why, for when the snapshot reaches it. */
typedef struct SpPoison {
	uint32_t lid;
	char *why;
} SpPoison;

static void
sp_ser_forget_poison (SpSerializer *s)
{
	for (size_t i = 0; i < s->npoison; i++)
		free (s->poison [i].why);
	free (s->poison);
	s->poison = NULL;
	s->npoison = 0;
}

/* A long array a barrier copied before a store (sp_ser_write_now): the rest of its record comes from the copy. */
typedef struct SpPreserved {
	uint32_t lid;
	uint64_t serial;         /* the ticket's */
	uint64_t first;          /* the element copy [0] holds */
	uint64_t next, end;      /* elements [next, end) not written yet */
	bool cards;              /* a delta's array of the chain: only the cards that differ from the chain's are patched */
	uint8_t *copy;           /* NULL while the barrier copies */
} SpPreserved;

/* An array set aside (SpSerializer.aside's values): its copy and itself. */
static void
sp_ser_aside_free (gpointer p)
{
	free (((SpPreserved *)p)->copy);
	free (p);
}

static void
sp_ser_forget_preserved (SpSerializer *s)
{
	for (size_t i = 0; i < s->npreserved; i++)
		free (s->preserved [i].copy);
	s->npreserved = 0;
	s->nparked = 0;
	if (s->aside)
		g_hash_table_remove_all (s->aside);
}

void
sp_ser_track_cards (SpSerializer *s)
{
	if (!s->cards)
		s->cards = g_hash_table_new_full (NULL, NULL, NULL, free);
}

void
sp_ser_free (SpSerializer *s)
{
	if (s->cards)
		g_hash_table_destroy (s->cards);
	sp_ser_forget_preserved (s);
	free (s->preserved);
	if (s->aside)
		g_hash_table_destroy (s->aside);
	free (s->parked);
	sp_ser_forget_poison (s);
	sp_reserve_free (&s->state_room);
	sp_lidmap_free (&s->lids);
	sp_queue_free (&s->queue);
	sp_kids_free (&s->kids);
	free (s->class_at);
}

static int
sp_ser_oom (SpError *err)
{
	return sp_error_set (err, "out of memory while serializing the snapshot");
}

/* What every snapshot starts with, full or delta: a new class cache, nothing in progress, the header. */
static int
sp_ser_start (SpSerializer *s, SpBuf *out, const SpSnapHeader *h, SpError *err)
{
	s->out = out;
	s->due = NULL;
	s->ndue = s->due_next = 0;
	s->due_scan = false;
	s->cycle = __atomic_add_fetch (&sp_ser_cycle_counter, 1, __ATOMIC_RELAXED);
	s->plain = (SpPlainClasses){ { NULL, NULL }, { NULL, NULL } };
	s->nclasses = s->nroots = 0;
	s->marked = 0;
	s->mark_next = 0;
	s->mark_done = false;
	s->partial_lid = 0;
	s->partial_cards = false;
	sp_ser_forget_preserved (s);
	s->objects_written = s->unreached_written = s->unreached_aside = 0;
	s->next_new = s->nobjects + 1;      /* after a delta's chain, or from 1 */
	/* A full snapshot ends with its class index; a delta's readers link nothing, and need none. */
	SpSnapHeader header = *h;
	s->class_index = !sp_header_is_delta (h);
	if (s->class_index)
		header.optional_flags |= SP_OPT_CLASS_INDEX;
	s->out_handed = 0;
	sp_buf_reset (out);
	size_t size = sp_format_header_size (&header);
	uint8_t *hdr = sp_buf_reserve (out, size);
	if (!hdr)
		return sp_ser_oom (err);
	sp_format_write_header (hdr, &header);
	out->len += size;
	return 0;
}

int
sp_ser_begin (SpSerializer *s, SpBuf *out, const SpSnapHeader *h, SpError *err)
{
	if (!s->clean)
		sp_ser_reset (s);
	s->clean = false;
	s->nobjects = s->prior = 0;
	sp_client_lid_reset ();
	return sp_ser_start (s, out, h, err);
}

int
sp_ser_begin_delta (SpSerializer *s, SpBuf *out, SpSnapHeader *h, SpError *err)
{
	if (s->clean)
		return sp_error_set (err, "internal error: a delta without the snapshot it applies to");
	sp_queue_clear (&s->queue);
	__atomic_store_n (&s->prior, s->nobjects, __ATOMIC_RELEASE);   /* read by sp_ser_written_hint without a lock */
	h->required_flags |= SP_FLAG_DELTA;
	h->prior_objects = s->prior;
	return sp_ser_start (s, out, h, err);
}

int
sp_ser_changed (SpSerializer *s, uint32_t lid, SpError *err)
{
	if (lid == 0 || lid > s->prior)
		return sp_error_set (err, "internal error: object %u changed, but the chain has %u", lid, s->prior);
	/* Recorded by a barrier before the steps let it go (sp_ser_let_go): its empty record is all the chain has of it. */
	if (s->state [lid] & SP_SER_LET_GO)
		return 0;
	/*
	 * Written in an earlier snapshot of the chain: its record is due again.
	 * Reached or not, as then: one a barrier wrote in case it was part of
	 * the state, and was not, may hold by now what cannot be persisted
	 * (sp_ser_claim_writable).
	 */
	s->state [lid] &= SP_SER_REACHED;
	return sp_queue_push (&s->queue, lid) < 0 ? sp_ser_oom (err) : 0;
}

/*
 * Many changed objects are given in LID order, found by scanning their
 * marks, not in the list's order (the order they were first stored into).
 * LIDs follow the graph's breadth-first order, which follows allocation
 * order, so the steps then meet them about in address order, as a full
 * snapshot does; in the list's order each is a cache miss.  The scan costs
 * a byte a LID of the chain, so only where at least one LID in
 * SP_SER_SCAN_DENSITY is due (session 25, DeltaBench: 100,000 changed of
 * 10,000,000 took 32 ms in the list's order, 26 scanned; 10,000 of them,
 * 2.9 ms listed, 5.1 scanned).
 */
#define SP_SER_SCAN_DENSITY 256

void
sp_ser_set_due (SpSerializer *s, const uint32_t *lids, size_t n, uint8_t *marks, size_t marks_cap)
{
	s->due_marks = marks;
	s->due_marks_cap = marks_cap;
	s->due_scan = n && (uint64_t)n * SP_SER_SCAN_DENSITY >= s->prior;
	if (s->due_scan) {
		/* due_next..ndue: the LIDs left to scan. */
		s->due = NULL;
		s->due_next = 1;
		s->ndue = MIN ((size_t)s->prior + 1, marks_cap);
	} else {
		s->due = lids;
		s->due_next = 0;
		s->ndue = n;
	}
}

/* Object lid, if it is a changed object not given to sp_ser_changed yet, is now. */
static inline int
sp_ser_feed_one (SpSerializer *s, uint32_t lid, SpError *err)
{
	if (lid >= s->due_marks_cap || s->due_marks [lid] != SP_SER_DUE)
		return 0;
	s->due_marks [lid] = SP_SER_FED;
	return sp_ser_changed (s, lid, err);
}

/* The next changed objects, a batch, to the queue (those a barrier met first are there already). */
#define SP_SER_FEED_BATCH 64

/* In LID order: up to a batch found, scanning at most SP_SER_FEED_BATCH * SP_SER_SCAN_DENSITY marks, a word at a time. */
static int
sp_ser_feed_scan (SpSerializer *s, SpError *err)
{
	size_t end = MIN (s->ndue, s->due_next + SP_SER_FEED_BATCH * SP_SER_SCAN_DENSITY);
	unsigned found = 0;
	while (s->due_next < end && found < SP_SER_FEED_BATCH) {
		uint64_t word = s->due_marks [s->due_next];
		bool whole = s->due_next + sizeof word <= end;   /* a word of marks, or the last few one by one */
		if (whole)
			memcpy (&word, s->due_marks + s->due_next, sizeof word);
		if (!word) {
			s->due_next += whole ? sizeof word : 1;
			continue;
		}
		if (s->due_marks [s->due_next] == SP_SER_DUE) {
			found++;
			if (sp_ser_feed_one (s, (uint32_t)s->due_next, err) < 0)
				return -1;
		}
		s->due_next++;
	}
	return 0;
}

static int
sp_ser_feed (SpSerializer *s, SpError *err)
{
	if (s->due_scan)
		return sp_ser_feed_scan (s, err);
	for (size_t end = MIN (s->ndue, s->due_next + SP_SER_FEED_BATCH); s->due_next < end; s->due_next++)
		if (sp_ser_feed_one (s, s->due [s->due_next], err) < 0)
			return -1;
	return 0;
}

/* Room in s->state for LID lid (every LID handed out has its state byte). */
#define SP_SER_STATE_MAX (sizeof (void *) >= 8 ? (size_t)SP_LID_MAX + 1 : (size_t)1 << 28)

static int
sp_ser_state_room (SpSerializer *s, uint32_t lid, SpError *err)
{
	if (lid < s->state_room.cap)
		return 0;
	if (sp_reserve_grow (&s->state_room, (size_t)lid + 1, SP_SER_STATE_MAX) < 0)
		return sp_ser_oom (err);
	s->state = s->state_room.base;
	return 0;
}

/* The snapshot reached poisoned object lid: its error. */
static int
sp_ser_poison_error (SpSerializer *s, uint32_t lid, SpError *err)
{
	for (size_t i = 0; i < s->npoison; i++)
		if (s->poison [i].lid == lid)
			return sp_error_set (err, "%s", s->poison [i].why);
	return sp_error_set (err, "internal error: object %u is poisoned for no known reason", lid);
}

/* Object lid is a root or referenced by an object of the snapshot. */
static inline int
sp_ser_reach (SpSerializer *s, uint32_t lid, SpError *err)
{
	uint8_t *st = &s->state [lid];
	if (*st & SP_SER_REACHED)
		return 0;
	*st |= SP_SER_REACHED;
	if (*st & SP_SER_WRITTEN)
		s->unreached_written--;
	return (*st & SP_SER_POISONED) ? sp_ser_poison_error (s, lid, err) : 0;
}

void
sp_ser_reset (SpSerializer *s)
{
	while (sp_ser_reset_step (s, SIZE_MAX) == 1)
		;
}

enum { SP_RESET_STATES, SP_RESET_LIDMAP, SP_RESET_KIDS, SP_RESET_RETIRED };

/* Zero up to `budget` units of [reset_at, reset_end) with clear (from, n); true when the range is done. */
static bool
sp_ser_reset_range (SpSerializer *s, size_t budget, void (*clear) (SpSerializer *s, size_t from, size_t n))
{
	size_t n = s->reset_end - s->reset_at < budget ? s->reset_end - s->reset_at : budget;
	if (n)
		clear (s, s->reset_at, n);
	s->reset_at += n;
	return s->reset_at == s->reset_end;
}

static void
sp_ser_clear_states (SpSerializer *s, size_t from, size_t n)
{
	memset (s->state + from, 0, n);
}

static void
sp_ser_clear_lidmap (SpSerializer *s, size_t from, size_t n)
{
	sp_lidmap_clear_slots (&s->lids, from, n);
}

static void
sp_ser_clear_kids (SpSerializer *s, size_t from, size_t n)
{
	for (size_t c = from; c < from + n; c++)
		sp_kids_reset_chunk (&s->kids, c);
}

int
sp_ser_reset_step (SpSerializer *s, size_t max_bytes)
{
	if (max_bytes < 4096)
		max_bytes = 4096;
	switch (s->reset_phase) {
	case SP_RESET_STATES:
		/* The previous snapshot's states, as far as it went (a snapshot costs what it wrote). */
		if (s->reset_end == 0 && s->state)
			s->reset_end = s->nobjects + 1 < s->state_room.cap ? s->nobjects + 1 : s->state_room.cap;
		if (!sp_ser_reset_range (s, max_bytes, sp_ser_clear_states))
			return 1;
		s->reset_phase = SP_RESET_LIDMAP;
		s->reset_at = 0;
		s->reset_end = sp_lidmap_clear_begin (&s->lids);
		return 1;
	case SP_RESET_LIDMAP:
		if (!sp_ser_reset_range (s, max_bytes / sizeof (SpLidEntry), sp_ser_clear_lidmap))
			return 1;
		s->reset_phase = SP_RESET_KIDS;
		s->reset_at = 0;
		s->reset_end = sp_kids_reset_begin (&s->kids);
		return 1;
	case SP_RESET_KIDS:
		if (!sp_ser_reset_range (s, max_bytes / (sizeof (uint32_t) << SP_KIDS_AT_BITS) + 1, sp_ser_clear_kids))
			return 1;
		s->reset_phase = SP_RESET_RETIRED;
		return 1;
	case SP_RESET_RETIRED:
		/* The map's tables of this snapshot that are no longer used: their pages go back. */
		if (sp_lidmap_release_step (&s->lids, max_bytes))
			return 1;
		sp_ser_forget_poison (s);
		sp_ser_forget_preserved (s);
		sp_queue_clear (&s->queue);
		if (s->cards)
			g_hash_table_remove_all (s->cards);
		s->clean = true;
		s->reset_phase = SP_RESET_STATES;
		s->reset_at = s->reset_end = 0;
		return 0;
	}
	return 0;
}

/*
 * An identity slot holds a LID, and SP_SLOT_WRITTEN once the object's record
 * is complete (incremental mode, for the barrier's lock-free check).
 */
#define SP_SLOT_WRITTEN 0x80000000u

static inline uint32_t
sp_ser_slot_load (const void *obj, uint32_t slot)
{
	return __atomic_load_n ((const uint32_t *)((const uint8_t *)obj + slot), __ATOMIC_ACQUIRE);
}

static inline void
sp_ser_slot_store (void *obj, uint32_t slot, uint32_t value)
{
	__atomic_store_n ((uint32_t *)((uint8_t *)obj + slot), value, __ATOMIC_RELEASE);
}

/*
 * obj's LID in this snapshot when its slot names it, else 0.  The slot is a
 * hint (sp_client_lid_slot): a value left by an earlier snapshot, or copied
 * with the object by a clone, counts only when the LID table binds that LID
 * to obj itself.  (The LID table holds the objects' current addresses, and
 * obj is on this thread's stack, pinned, so they compare.)
 */
static inline uint32_t
sp_ser_slot_lid (const SpSerializer *s, void *obj, uint32_t slot)
{
	uint32_t lid = sp_ser_slot_load (obj, slot) & SP_LID_MAX;
	return lid && lid <= s->nobjects && sp_client_lid_object (lid) == obj ? lid : 0;
}

/* obj's LID if it has one in this snapshot, else 0 (objects with a slot first, then the LID map). */
static inline uint32_t
sp_ser_known_lid (SpSerializer *s, void *obj, uint32_t slot)
{
	if (slot)
		return sp_ser_slot_lid (s, obj, slot);
	SpLidEntry *e = sp_lidmap_find (&s->lids, sp_client_identity_hash (obj), obj, sp_client_gc_epoch ());
	return e ? sp_lid_of (e) : 0;
}

/* sp_ser_new_lid for an object whose class is known persistable. */
static inline __attribute__ ((always_inline)) int
sp_ser_new_lid_of_persistable (SpSerializer *s, void *obj, uint32_t slot, bool reached, uint32_t *lid, SpError *err)
{
	if (s->nobjects >= SP_LID_MAX)
		return sp_error_set (err, "the snapshot would hold more than %u objects", SP_LID_MAX);
	uint32_t new_lid = s->nobjects + 1;
	if (sp_ser_state_room (s, new_lid, err) < 0)
		return -1;
	/* The slot first, its written mark cleared, then the bind (sp_ser_complete says why). */
	if (slot)
		sp_ser_slot_store (obj, slot, new_lid);
	if (sp_client_lid_bind (new_lid, obj, err) < 0)
		return -1;
	if (reached)
		s->state [new_lid] = SP_SER_REACHED;
	/* Binding may allocate, and so collect: read the epoch again for the cached address. */
	if (!slot && !sp_lidmap_add (&s->lids, sp_client_identity_hash (obj), new_lid, obj, sp_client_gc_epoch ()))
		return sp_ser_oom (err);
	/* Read without the lock (sp_ser_written_hint); this also queues its turn (SpSerializer.next_new). */
	__atomic_store_n (&s->nobjects, new_lid, __ATOMIC_RELEASE);
	*lid = new_lid;
	return 0;
}

/* Hand obj (not yet in the snapshot) the next LID, and queue it; fails when obj's class cannot be persisted. */
static inline __attribute__ ((always_inline)) int
sp_ser_new_lid (SpSerializer *s, void *obj, uint32_t slot, bool reached, uint32_t *lid, SpError *err)
{
	if (!sp_client_class_of (obj, err))
		return -1;
	return sp_ser_new_lid_of_persistable (s, obj, slot, reached, lid, err);
}

/* sp_ser_lid_of for an object whose slot (sp_client_lid_slot) the caller read. */
static int
sp_ser_lid_of_slotted (SpSerializer *s, void *obj, uint32_t slot, bool reached, uint32_t *lid, SpError *err)
{
	uint32_t known = sp_ser_known_lid (s, obj, slot);
	if (!known)
		return sp_ser_new_lid (s, obj, slot, reached, lid, err);
	*lid = known;
	return reached ? sp_ser_reach (s, known, err) : 0;
}

/*
 * The LID of obj, handing out a new one (and queueing obj) the first time;
 * `reached`: obj is a root or referenced by an object of the snapshot (not
 * merely met by a barrier).  Fails, with err saying why, when obj's class
 * cannot be persisted, or obj is reached and poisoned.
 */
static int
sp_ser_lid_of (SpSerializer *s, void *obj, bool reached, uint32_t *lid, SpError *err)
{
	if (!obj) {
		*lid = 0;
		return 0;
	}
	return sp_ser_lid_of_slotted (s, obj, sp_client_lid_slot (obj), reached, lid, err);
}

void
sp_ser_adopt_begin (SpSerializer *s)
{
	if (!s->clean)
		sp_ser_reset (s);
	s->clean = false;
	s->nobjects = s->prior = 0;
	sp_client_lid_reset ();
}

int
sp_ser_adopt (SpSerializer *s, uint32_t lid, void *obj, SpError *err)
{
	if (lid != s->nobjects + 1 || !obj)
		return sp_error_set (err, "internal error: restored object %u adopted out of order", lid);
	if (sp_ser_state_room (s, lid, err) < 0)
		return -1;
	uint32_t slot = sp_client_lid_slot (obj);
	if (slot)
		sp_ser_slot_store (obj, slot, lid);
	if (sp_client_lid_bind (lid, obj, err) < 0)
		return -1;
	if (!slot && !sp_lidmap_add (&s->lids, sp_client_identity_hash (obj), lid, obj, sp_client_gc_epoch ()))
		return sp_ser_oom (err);
	s->state [lid] = SP_SER_WRITTEN | SP_SER_REACHED;
	__atomic_store_n (&s->nobjects, lid, __ATOMIC_RELEASE);
	return 0;
}

/* Say which reference led to an object that cannot be persisted (only on failure). */
static int
sp_ser_blame (SpError *err, const SpClass *owner, const SpField *f)
{
	if (owner->kind == SP_CLASS_OBJECT)
		return sp_error_prefix (err, "field %s.%s", owner->name, f->name);
	if (f->name [0])
		return sp_error_prefix (err, "field %s of an element of %s", f->name, owner->name);
	return sp_error_prefix (err, "an element of %s", owner->name);
}

/* Reference leaf f meets an object of another class than the last: its inline cache (SpField.ic_token) takes that class. */
static __attribute__ ((noinline)) void
sp_ser_field_meets (SpField *f, void *child, const void *token)
{
	f->ic_token = token;
	f->slot_hint = sp_client_lid_slot (child);
	f->ic_persistable = false;
}

/*
 * The LID of child (not NULL), held by reference leaf f of an instance of c
 * (the failure names the field).  Inline, the two common cases: the identity
 * slot names child and child was reached before, or child is new and has a
 * slot; an object without a slot, or one only a barrier met before, takes
 * sp_ser_lid_of_slotted's path.  Child's slot, and whether its class is
 * persistable, come from f's inline cache when child is of the class the
 * last one met there was (a tree's fields nearly always are).
 */
static inline __attribute__ ((always_inline)) int
sp_ser_ref_lid (SpSerializer *s, const SpClass *c, SpField *f, void *child, uint32_t *lid, SpError *err)
{
	const void *token = sp_client_class_token (child);
	if (__builtin_expect (token != f->ic_token, 0))
		sp_ser_field_meets (f, child, token);
	uint32_t slot = f->slot_hint;
	if (slot) {
		uint32_t known = sp_ser_slot_lid (s, child, slot);
		if (known && (s->state [known] & SP_SER_REACHED)) {
			*lid = known;
			return 0;
		}
		if (!known) {
			if (!f->ic_persistable) {
				if (!sp_client_class_of (child, err))
					return sp_ser_blame (err, c, f);
				f->ic_persistable = true;
			}
			return sp_ser_new_lid_of_persistable (s, child, slot, true, lid, err) < 0 ? sp_ser_blame (err, c, f) : 0;
		}
	}
	return sp_ser_lid_of_slotted (s, child, slot, true, lid, err) < 0 ? sp_ser_blame (err, c, f) : 0;
}

/* The LID of what reference leaf f of the instance at `base` points to, 0 for null. */
static inline __attribute__ ((always_inline)) int
sp_ser_child_lid (SpSerializer *s, const SpClass *c, SpField *f, const uint8_t *base, uint32_t *lid, SpError *err)
{
	void *child;
	memcpy (&child, base + f->offset, sizeof child);
	if (!child) {
		*lid = 0;
		return 0;
	}
	return sp_ser_ref_lid (s, c, f, child, lid, err);
}

/*
 * Start loading the object a reference leaf points to: its header (class)
 * and its identity slot, which sp_ser_lid_of reads next.  The slot is the
 * object's last 4 bytes, often in the next cache line (a tree's nodes
 * straddle lines): prefetching it too made serializing a tree of 1,000,000
 * nodes 20% faster.  (When it shares the header's line, the second prefetch
 * costs next to nothing; testing for that first made GCC 12 drop both.)
 */
static inline void
sp_ser_prefetch_child (const SpField *f, const uint8_t *base)
{
	const uint8_t *child;
	memcpy (&child, base + f->offset, sizeof child);
	if (!child)
		return;
	__builtin_prefetch (child);
	__builtin_prefetch (child + f->slot_hint);
}

int
sp_ser_root (SpSerializer *s, uint32_t root_id, void *obj, SpError *err)
{
	if (root_id == 0 || root_id > SP_MAX_ROOT_ID)
		return sp_error_set (err, "root id %u is out of range (1 to %u)", root_id, SP_MAX_ROOT_ID);
	uint32_t lid;
	if (sp_ser_lid_of (s, obj, true, &lid, err) < 0)
		return sp_error_prefix (err, "root %u", root_id);
	sp_buf_put_u8 (s->out, SP_REC_ROOT);
	sp_buf_put_varint (s->out, root_id);
	sp_buf_put_varint (s->out, lid);
	s->nroots++;
	return s->out->oom ? sp_ser_oom (err) : 0;
}

/* c->plan, for a class of few leaves (its own: unknown ones are walked apart). */
static void
sp_ser_plan (SpClass *c)
{
	SpLeafPlan *plan = &c->plan;
	plan->built = false;
	plan->tried = true;
	if (c->nfields > SP_PLAN_LEAVES)
		return;
	plan->nprims = plan->nrefs = 0;
	for (uint32_t i = 0; i < c->nfields; i++) {
		if (c->fields [i].kind == SP_KIND_REF)
			plan->refs [plan->nrefs++] = &c->fields [i];
		else
			plan->nprims++;
	}
	plan->prim_bytes = sp_prim_copies_build (plan->prims, plan->prim_end, c->fields, c->nfields);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	plan->nwindows = sp_prim_windows_build (plan->windows, plan->prims, plan->prim_end, plan->prim_bytes);
#else
	plan->nwindows = 0;
#endif
	plan->built = true;
}

/*
 * The loops over a class's reference leaves: with its plan, its references
 * only; else every leaf, the loop skipping the primitives.
 */
static inline uint32_t
sp_ser_ref_scan_count (const SpClass *c)
{
	return c->plan.built ? c->plan.nrefs : c->nfields;
}

static inline SpField *
sp_ser_ref_scan_at (const SpClass *c, uint32_t i)
{
	return c->plan.built ? c->plan.refs [i] : &c->fields [i];
}

/* For the class index: class id's CLASS record starts here (out of memory: out says so). */
static void
sp_ser_class_at (SpSerializer *s, uint32_t id)
{
	if (id > s->class_at_cap) {
		uint32_t cap = s->class_at_cap ? s->class_at_cap * 2 : 64;
		uint64_t *grown = realloc (s->class_at, (size_t)cap * sizeof *grown);
		if (!grown) {
			s->out->oom = true;
			return;
		}
		s->class_at = grown;
		s->class_at_cap = cap;
	}
	s->class_at [id - 1] = s->out_handed + s->out->len;
}

/* The class's id in this snapshot, writing its CLASS record the first time. */
static uint32_t
sp_ser_class_id (SpSerializer *s, SpClass *c)
{
	if (c->snap_cycle == s->cycle)
		return c->snap_id;
	c->snap_cycle = s->cycle;
	c->snap_id = ++s->nclasses;
	if (s->class_index)
		sp_ser_class_at (s, c->snap_id);
	/* A class carrying unknown data names those leaves too, after its own (sp-layout.h). */
	uint32_t nleaves = c->unknown ? c->unknown->nleaves : c->nfields;
	const SpField *leaves = c->unknown ? c->unknown->leaves : c->fields;
	sp_format_put_class (s->out, c->snap_id, c->kind, c->assembly, c->name, nleaves, leaves);
	uint32_t wire_max = 0;
	for (uint32_t i = 0; i < nleaves; i++)
		wire_max += leaves [i].kind == SP_KIND_REF ? SP_VARINT32_MAX : sp_kind_size (leaves [i].kind);
	c->wire_max = wire_max;
	sp_ser_plan (c);
	return c->snap_id;
}

/* LEB128, unrolled for the values of one to three bytes (LIDs below 2,097,152, class ids) that most are. */
static inline uint8_t *
sp_put_varint_raw (uint8_t *dst, uint32_t v)
{
	if (v < 0x80) {
		dst [0] = (uint8_t)v;
		return dst + 1;
	}
	if (v < 0x4000) {
		dst [0] = (uint8_t)(v | 0x80);
		dst [1] = (uint8_t)(v >> 7);
		return dst + 2;
	}
	if (v < 0x200000) {
		dst [0] = (uint8_t)(v | 0x80);
		dst [1] = (uint8_t)(v >> 7 | 0x80);
		dst [2] = (uint8_t)(v >> 14);
		return dst + 3;
	}
	while (v >= 0x80) {
		*dst++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*dst++ = (uint8_t)v;
	return dst;
}

static inline uint8_t *
sp_put_primitive_raw (uint8_t *dst, const uint8_t *src, unsigned kind)
{
	return dst + sp_kind_copy_sized (dst, src, kind);
}

/*
 * The values of one object or array element at `base`: its primitive leaves,
 * then its references (sp-format.h: primitives first, so a reader skips or
 * copies them as one block), from dst on, where the caller reserved room for
 * their largest encoding (c->wire_max), so the loops write without further
 * checks: nothing in them touches the output buffer but these loops.  `kids`:
 * the references' LIDs as marking recorded them (sp-kids.h), or NULL to look
 * each one up.  Returns where they end, NULL on error.
 */
/* The header of the object the reference at base + offset points to: its class and identity slot are read next. */
static inline void
sp_ser_prefetch_referenced (const uint8_t *base, uint32_t offset)
{
	void *child;
	memcpy (&child, base + offset, sizeof child);
	if (child)
		__builtin_prefetch (child);
}

static inline uint8_t *
sp_ser_put_primitives (const SpClass *c, const uint8_t *base, bool prefetch_children, uint8_t *dst)
{
	if (c->plan.built) {
		const SpLeafPlan *plan = &c->plan;
		sp_prims_to_wire (plan->prims, plan->prim_end, base, dst);
		dst += plan->prim_bytes;
		for (uint32_t i = 0; prefetch_children && i < plan->nrefs; i++)
			sp_ser_prefetch_referenced (base, plan->refs [i]->offset);
		return dst;
	}
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		if (f->kind != SP_KIND_REF)
			dst = sp_put_primitive_raw (dst, base + f->offset, f->kind);
		else if (prefetch_children)
			sp_ser_prefetch_referenced (base, f->offset);
	}
	return dst;
}

/* The LID of reference leaf f, from *kids (advanced) or looked up, appended at dst. */
static inline uint8_t *
sp_ser_put_reference (SpSerializer *s, const SpClass *c, SpField *f, const uint8_t *base, const uint32_t **kids, uint8_t *dst, SpError *err)
{
	uint32_t lid = 0;   /* (set on success; GCC cannot tell) */
	if (*kids)
		lid = *(*kids)++;
	else if (sp_ser_child_lid (s, c, f, base, &lid, err) < 0)
		return NULL;
	return sp_put_varint_raw (dst, lid);
}

/* The LIDs of the reference leaves, from *kids (advanced) or looked up. */
static inline uint8_t *
sp_ser_put_references (SpSerializer *s, const SpClass *c, const uint8_t *base, const uint32_t **kids, uint8_t *dst, SpError *err)
{
	if (c->plan.built) {
		for (uint32_t i = 0; i < c->plan.nrefs && dst; i++)
			dst = sp_ser_put_reference (s, c, c->plan.refs [i], base, kids, dst, err);
		return dst;
	}
	for (uint32_t i = 0; i < c->nfields && dst; i++)
		if (c->fields [i].kind == SP_KIND_REF)
			dst = sp_ser_put_reference (s, c, &c->fields [i], base, kids, dst, err);
	return dst;
}

/* The LID of an object the unknown reference leaf `leaf` (of class c) holds. */
static int
sp_ser_unknown_lid (SpSerializer *s, const SpClass *c, uint32_t leaf, void *child, uint32_t *lid, SpError *err)
{
	*lid = 0;
	if (!child || sp_ser_lid_of (s, child, true, lid, err) == 0)
		return 0;
	return sp_error_prefix (err, "unknown field %s.%s", c->name, c->unknown->leaves [leaf].name);
}

/* Index of the first unknown reference leaf, in c->unknown->leaves. */
static uint32_t
sp_ser_next_unknown_ref (const SpClass *c, uint32_t from)
{
	while (from < c->unknown->nleaves && c->unknown->leaves [from].kind != SP_KIND_REF)
		from++;
	return from;
}

/*
 * sp_ser_put_leaves for a class carrying unknown data: its own primitives,
 * the unknown ones, its own references, the unknown ones (the order of the
 * class record's leaves, primitives first).
 */
static __attribute__ ((noinline)) uint8_t *
sp_ser_put_unknown_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, const uint32_t *kids, uint8_t *dst, SpError *err)
{
	const SpUnknown *u = c->unknown;
	const uint8_t *prims = NULL;
	void *const *refs = NULL;
	bool carried = sp_client_unknown_values ((void *)base, c, &prims, &refs);
	dst = sp_ser_put_primitives (c, base, false, dst);
	if (carried)
		memcpy (dst, prims, u->prim_bytes);
	else
		memset (dst, 0, u->prim_bytes);
	dst += u->prim_bytes;
	if (!(dst = sp_ser_put_references (s, c, base, &kids, dst, err)))
		return NULL;
	for (uint32_t i = 0, leaf = sp_ser_next_unknown_ref (c, c->nfields); i < u->nrefs; i++) {
		uint32_t lid;
		if (kids)
			lid = *kids++;
		else if (sp_ser_unknown_lid (s, c, leaf, carried ? refs [i] : NULL, &lid, err) < 0)
			return NULL;
		dst = sp_put_varint_raw (dst, lid);
		leaf = sp_ser_next_unknown_ref (c, leaf + 1);
	}
	return dst;
}

static uint8_t *
sp_ser_put_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, const uint32_t *kids, uint8_t *dst, SpError *err)
{
	if (__builtin_expect (c->unknown != NULL, 0))
		return sp_ser_put_unknown_leaves (s, c, base, kids, dst, err);
	dst = sp_ser_put_primitives (c, base, !kids, dst);
	return sp_ser_put_references (s, c, base, &kids, dst, err);
}

static int
sp_ser_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, const uint32_t *kids, SpError *err)
{
	uint8_t *start = sp_buf_reserve (s->out, c->wire_max);
	if (!start)
		return sp_ser_oom (err);
	uint8_t *end = sp_ser_put_leaves (s, c, base, kids, start, err);
	if (!end)
		return -1;
	s->out->len += (size_t)(end - start);
	return 0;
}

static int sp_ser_poison (SpSerializer *s, uint32_t lid, const SpError *why, SpError *err);

/*
 * After obj's bytes [from, to) were read for its record (NULL, NULL: all of
 * it): if a store no barrier saw may have changed them since the start
 * (sp-storelog.h), the record is not the state at SendPData.  An object the
 * snapshot reached fails the cycle now; one only a barrier met is poisoned,
 * and fails it if marking reaches it after all.
 */
static __attribute__ ((noinline)) int
sp_ser_changed_unseen (SpSerializer *s, const SpClass *c, uint32_t lid, SpError *err)
{
	SpError why = { 0 };
	sp_error_set (&why, "an instance of %s was written while the snapshot was taken through a ref, Span or pointer "
		"that no barrier saw (one made before SendPData and used after, or made by new Span<T>(array), "
		"MemoryMarshal, fixed or unsafe code), or by native code: a P/Invoke running at SendPData had it as an argument "
		"not declared [In] only: its state at SendPData is lost, so the snapshot is not committed", c->name);
	if (s->state [lid] & SP_SER_REACHED)
		return sp_error_set (err, "%s", why.msg);
	return sp_ser_poison (s, lid, &why, err);
}

/* Inline: once per record, and nearly always nothing to say. */
static inline int
sp_ser_check_unseen (SpSerializer *s, void *obj, const SpClass *c, uint32_t lid, const void *from, const void *to, SpError *err)
{
	if (s->whole_objects || !sp_client_changed_unseen (obj, from, to))
		return 0;
	return sp_ser_changed_unseen (s, c, lid, err);
}

static int
sp_ser_object (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, SpError *err)
{
	uint32_t class_id = sp_ser_class_id (s, c);   /* first: it may write a CLASS record */
	/* The whole record with one reservation: this runs once per object. */
	uint8_t *dst = sp_buf_reserve (s->out, 1 + 2 * SP_VARINT32_MAX + c->wire_max);
	if (!dst)
		return sp_ser_oom (err);
	uint8_t *start = dst;
	*dst++ = SP_REC_OBJECT;
	dst = sp_put_varint_raw (dst, lid);
	dst = sp_put_varint_raw (dst, class_id);
	/* Marking's records of the children, in the snapshot that marks (a delta does not: those of an earlier one are stale). */
	dst = sp_ser_put_leaves (s, c, obj, s->marked ? sp_kids_of (&s->kids, lid) : NULL, dst, err);
	if (!dst)
		return -1;
	s->out->len += (size_t)(dst - start);
	return sp_ser_check_unseen (s, obj, c, lid, NULL, NULL, err);
}

static bool
sp_ser_string_is_latin1 (const uint16_t *chars, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (chars [i] > 0xff)
			return false;
	return true;
}

/* Elements in one piece of a string or an array of class c. */
static uint64_t
sp_ser_piece_length (const SpSerializer *s, const SpClass *c)
{
	if (s->whole_objects)
		return UINT64_MAX;
	if (c->kind == SP_CLASS_STRING)
		return s->piece_bytes / 2;
	if (sp_class_is_primitive_array (c))
		return s->piece_bytes / (c->elem_size ? c->elem_size : 1);
	return c->nfields < SP_SER_PIECE_LEAVES ? SP_SER_PIECE_LEAVES / (c->nfields ? c->nfields : 1) : 1;
}

/* A piece of a string: count, encoding (Latin-1 when every unit fits), units. */
static void
sp_ser_string_piece (SpBuf *o, const uint16_t *chars, uint64_t n)
{
	sp_buf_put_varint (o, n);
	bool latin1 = sp_ser_string_is_latin1 (chars, (uint32_t)n);
	sp_buf_put_u8 (o, latin1 ? SP_STR_LATIN1 : SP_STR_UTF16LE);
	uint8_t *dst = sp_buf_reserve (o, (size_t)n * (latin1 ? 1 : 2));
	if (!dst)
		return;
	for (uint64_t i = 0; i < n; i++) {
		if (latin1)
			dst [i] = (uint8_t)chars [i];
		else
			sp_put_le (dst + 2 * i, chars [i], 2);
	}
	o->len += (size_t)n * (latin1 ? 1 : 2);
}

static int
sp_ser_array_elements (SpSerializer *s, const SpClass *c, const uint8_t *data, uint64_t n, SpError *err)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (sp_class_is_primitive_array (c) && c->fields [0].kind != SP_KIND_BOOL) {
		sp_buf_put_bytes (s->out, data, (size_t)n * c->elem_size);
		return 0;
	}
#endif
	for (uint64_t i = 0; i < n; i++)
		if (sp_ser_leaves (s, c, data + i * c->elem_size, NULL, err) < 0)
			return -1;
	return 0;
}

/*
 * The body of a piece of array lid (class c): count elements, which are its
 * elements [start, start + count), from `from` (the array's memory, or a
 * barrier's copy of it).  Its cards, if it has them, are fed the very bytes
 * written (an array with cards is copied as is: sp_ser_cardable).
 */
static int
sp_ser_piece_body (SpSerializer *s, const SpClass *c, uint32_t lid, uint64_t start, uint64_t count, const uint8_t *from,
		   SpError *err)
{
	size_t bytes = (size_t)count * c->elem_size;
	sp_buf_put_varint (s->out, count);
	if (sp_ser_array_elements (s, c, from, count, err) < 0)
		return -1;
	SpCards *cards = s->cards && !s->out->oom ? g_hash_table_lookup (s->cards, GUINT_TO_POINTER (lid)) : NULL;
	if (cards)
		sp_cards_feed (cards, start * c->elem_size, s->out->data + s->out->len - bytes, bytes);
	return 0;
}

/* Elements [start, start + count) of string or array obj (LID lid), as a piece. */
static int
sp_ser_piece (SpSerializer *s, void *obj, const SpClass *c, uint32_t lid, uint64_t start, uint64_t count, SpError *err)
{
	const uint8_t *from;
	size_t bytes;
	if (c->kind == SP_CLASS_STRING) {
		from = (const uint8_t *)(sp_client_string_chars (obj) + start);
		bytes = (size_t)count * 2;
		sp_ser_string_piece (s->out, (const uint16_t *)from, count);
	} else {
		from = (const uint8_t *)sp_client_array_data (obj) + start * c->elem_size;
		bytes = (size_t)count * c->elem_size;
		if (sp_ser_piece_body (s, c, lid, start, count, from, err) < 0)
			return -1;
	}
	return sp_ser_check_unseen (s, obj, c, lid, from, from + bytes, err);
}

/* Is an array of class c and n elements worth cards (sp-cards.h)?  Its bytes must be written as they are in memory. */
static bool
sp_ser_cardable (const SpSerializer *s, const SpClass *c, uint64_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return s->cards && c->kind == SP_CLASS_ARRAY && sp_class_is_primitive_array (c) && c->fields [0].kind != SP_KIND_BOOL &&
	       n * c->elem_size >= SP_CARDS_MIN_BYTES;
#else
	(void)s, (void)c, (void)n;
	return false;
#endif
}

/* Array lid is written whole from now on (an ARRAY record, or a whole PATCH): its cards are fed as its pieces go out. */
static int
sp_ser_cards_begin (SpSerializer *s, const SpClass *c, uint32_t lid, uint64_t n, SpError *err)
{
	if (!sp_ser_cardable (s, c, n))
		return 0;
	SpCards *cards = sp_cards_new (n * c->elem_size);
	if (!cards)
		return sp_ser_oom (err);
	g_hash_table_replace (s->cards, GUINT_TO_POINTER (lid), cards);
	return 0;
}

/* Array lid's cards (n elements of class c), when it is a delta's array of the chain whose cards say what the chain holds. */
static SpCards *
sp_ser_chain_cards (const SpSerializer *s, const SpClass *c, uint32_t lid, uint64_t n)
{
	SpCards *cards = lid <= s->prior && s->cards ? g_hash_table_lookup (s->cards, GUINT_TO_POINTER (lid)) : NULL;
	return cards && cards->bytes == n * c->elem_size ? cards : NULL;
}

static int sp_ser_patch_cards_begin (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err);
static int sp_ser_patch_cards_next (SpSerializer *s, void *obj, const SpClass *c, uint32_t lid, SpError *err);

/* Cards a piece of a delta's array of the chain looks at: a written piece's bytes, a card at least. */
static uint32_t
sp_ser_cards_per_piece (const SpSerializer *s)
{
	return s->piece_bytes >= SP_CARD_BYTES ? s->piece_bytes / SP_CARD_BYTES : 1;
}

/* A delta's PATCH record of array lid of the chain, up to its piece (elements from `start`). */
static void
sp_ser_patch_head (SpSerializer *s, SpClass *c, uint32_t lid, uint64_t start)
{
	uint32_t class_id = sp_ser_class_id (s, c);
	sp_buf_put_u8 (s->out, SP_REC_PATCH);
	sp_buf_put_varint (s->out, lid);
	sp_buf_put_varint (s->out, class_id);
	sp_buf_put_varint (s->out, start);
}

static uint64_t
sp_ser_length (void *obj, const SpClass *c)
{
	return c->kind == SP_CLASS_STRING ? sp_client_string_length (obj) : sp_client_array_length (obj);
}

/*
 * The record of a string or array, with its first piece; the rest follow as
 * ELEMS records (sp_ser_continue), unless `whole` (the barrier: the object's
 * state must be taken entirely before the store lands, and there is one
 * object in pieces at a time).
 */
static int
sp_ser_sized (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err)
{
	uint64_t n = sp_ser_length (obj, c);
	SpBuf *o = s->out;
	if (sp_ser_chain_cards (s, c, lid, n))
		return sp_ser_patch_cards_begin (s, obj, c, lid, whole, err);
	if (sp_ser_cards_begin (s, c, lid, n, err) < 0)
		return -1;
	if (lid <= s->prior) {
		sp_ser_patch_head (s, c, lid, 0);
	} else if (c->kind == SP_CLASS_STRING) {
		sp_buf_put_u8 (o, SP_REC_STRING);
		sp_buf_put_varint (o, lid);
	} else {
		uint32_t class_id = sp_ser_class_id (s, c);
		sp_buf_put_u8 (o, SP_REC_ARRAY);
		sp_buf_put_varint (o, lid);
		sp_buf_put_varint (o, class_id);
	}
	if (lid > s->prior)
		sp_buf_put_varint (o, n);
	uint64_t first = whole || n < sp_ser_piece_length (s, c) ? n : sp_ser_piece_length (s, c);
	if (first < n) {
		s->partial_lid = lid;
		s->partial_next = first;
	}
	return sp_ser_piece (s, obj, c, lid, 0, first, err);
}

/*
 * Object obj's record (LID lid) is complete: say so where barriers find it without a
 * lock, in obj's identity slot (SP_SLOT_WRITTEN), or in the written set for
 * objects without one (whose GC epoch is read with obj in hand and no
 * safepoint between: the SP task's increment, or a barrier's slow path).
 *
 * Why a written mark read without the lock is never wrong
 * (sp_ser_written_hint): a mark counts only when the slot's LID is bound to
 * obj in the LID table and the slot reads the same before and after the
 * table.  A mark left by an earlier snapshot, whose LID obj was handed again
 * in this one, cannot pass: handing out a LID stores the slot (mark cleared)
 * before it binds the table, so a reader that sees the bind sees the cleared
 * slot on its second read.  A clone's copied mark names its original's LID,
 * bound to the original.
 */
static void
sp_ser_complete (SpSerializer *s, void *obj, uint32_t lid)
{
	if (!s->written)
		return;
	/* obj's slot holds lid: handing out a LID stores it there (sp_ser_new_lid), and nothing else writes slots. */
	uint32_t slot = sp_client_lid_slot (obj);
	if (slot)
		sp_ser_slot_store (obj, slot, lid | SP_SLOT_WRITTEN);
	else
		sp_wset_add (s->written, obj, sp_client_gc_epoch ());
}

bool
sp_ser_written_hint (const SpSerializer *s, void *obj)
{
	uint32_t slot = sp_client_lid_slot (obj);
	if (!slot)
		return false;
	uint32_t before = sp_ser_slot_load (obj, slot);
	uint32_t lid = before & SP_LID_MAX;
	if (!(before & SP_SLOT_WRITTEN) || lid > __atomic_load_n (&s->nobjects, __ATOMIC_ACQUIRE))
		return false;
	/* A delta's objects of the chain keep the mark of the snapshot that wrote them last: it says nothing of this one. */
	if (lid <= __atomic_load_n (&s->prior, __ATOMIC_ACQUIRE))
		return false;
	if (sp_client_lid_object (lid) != obj)
		return false;
	/* The table's load before the slot's second (an acquire load alone lets an earlier load pass it). */
	__atomic_thread_fence (__ATOMIC_ACQUIRE);
	return sp_ser_slot_load (obj, slot) == before;
}

/* The next piece of the string or array being written in pieces. */
static int
sp_ser_continue (SpSerializer *s, SpError *err)
{
	uint32_t lid = s->partial_lid;
	void *obj = sp_client_lid_object (lid);     /* read again: the GC may have moved it since the last piece */
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	if (s->partial_cards) {
		if (sp_ser_patch_cards_next (s, obj, c, lid, err) < 0)
			return -1;
		if (!s->partial_lid)
			sp_ser_complete (s, obj, lid);
		return 0;
	}
	uint64_t n = sp_ser_length (obj, c), start = s->partial_next;
	uint64_t count = n - start < sp_ser_piece_length (s, c) ? n - start : sp_ser_piece_length (s, c);
	if (lid <= s->prior) {
		sp_ser_patch_head (s, c, lid, start);
	} else {
		sp_buf_put_u8 (s->out, SP_REC_ELEMS);
		sp_buf_put_varint (s->out, lid);
		sp_buf_put_varint (s->out, start);
	}
	s->partial_next += count;
	if (s->partial_next == n)
		s->partial_lid = 0;
	if (sp_ser_piece (s, obj, c, lid, start, count, err) < 0)
		return -1;
	if (s->out->oom)
		return sp_ser_oom (err);
	if (!s->partial_lid)
		sp_ser_complete (s, obj, lid);
	return 0;
}

/* Mark object `lid` written: 1, or 0 when it already was (a barrier or a step got there first). */
static int
sp_ser_claim (SpSerializer *s, uint32_t lid)
{
	uint8_t *st = &s->state [lid];
	if (*st & SP_SER_WRITTEN)
		return 0;
	*st |= SP_SER_WRITTEN;
	if (!(*st & SP_SER_REACHED))
		s->unreached_written++;
	return 1;
}

/*
 * A delta's PATCH records of cards [k, end) of array lid (class c, of the
 * chain), those that differ from what the chain holds (its cards), each run
 * of them in pieces.  `bytes` holds the array's elements from byte `offset`
 * on (a card's start): the array itself, or a barrier's copy of its rest.
 */
static bool sp_ser_children_persistable (const SpClass *c, void *obj, SpError *err);

/*
 * Claim object lid (obj, of class c) for writing: 1, or 0 when it is not to
 * be written (poisoned now), or -1.  An object of the chain that was never
 * reached (a barrier wrote it in case it was part of the state, and it was
 * not), changed since and now holding something that cannot be persisted,
 * is poisoned, as the barrier would have poisoned it: an error only if this
 * snapshot reaches it.  Its earlier record stands meanwhile.
 */
static int
sp_ser_claim_writable (SpSerializer *s, uint32_t lid, void *obj, const SpClass *c, SpError *err)
{
	if (lid <= s->prior && !(s->state [lid] & SP_SER_REACHED)) {
		SpError why = { 0 };
		if (!sp_ser_children_persistable (c, obj, &why))
			return sp_ser_poison (s, lid, &why, err) < 0 ? -1 : 0;
	}
	return sp_ser_claim (s, lid);
}

static int
sp_ser_patch_card_range (SpSerializer *s, const SpClass *c, uint32_t lid, SpCards *cards, const uint8_t *bytes,
			 uint64_t offset, uint32_t k, uint32_t end, SpError *err)
{
	uint64_t per_card = SP_CARD_BYTES / c->elem_size, n = cards->bytes / c->elem_size, piece = sp_ser_piece_length (s, c);
#define SP_CARD_AT(card) (bytes + (uint64_t)(card) * SP_CARD_BYTES - offset)
	while (k < end) {
		if (!sp_cards_card_differs (cards, k, SP_CARD_AT (k))) {
			k++;
			continue;
		}
		uint32_t run = k + 1;
		while (run < end && sp_cards_card_differs (cards, run, SP_CARD_AT (run)))
			run++;
		uint64_t first = k * per_card, last = (uint64_t)run * per_card < n ? (uint64_t)run * per_card : n;
		for (uint64_t at = first; at < last; ) {
			uint64_t count = last - at < piece ? last - at : piece;
			sp_ser_patch_head (s, (SpClass *)c, lid, at);
			if (sp_ser_piece_body (s, c, lid, at, count, bytes + at * c->elem_size - offset, err) < 0)
				return -1;
			at += count;
		}
		k = run;
	}
#undef SP_CARD_AT
	return s->out->oom ? sp_ser_oom (err) : 0;
}

/*
 * The next piece of the delta's array of the chain being patched in pieces
 * (partial_cards): the next few cards, looked at and patched where they
 * differ, from the array's memory.
 */
static int
sp_ser_patch_cards_next (SpSerializer *s, void *obj, const SpClass *c, uint32_t lid, SpError *err)
{
	uint64_t n = sp_client_array_length (obj), per_card = SP_CARD_BYTES / c->elem_size;
	SpCards *cards = sp_ser_chain_cards (s, c, lid, n);
	if (!cards)
		return sp_error_set (err, "internal error: array %u of the chain lost its cards while being patched", lid);
	uint32_t k = (uint32_t)(s->partial_next / per_card);
	uint32_t end = cards->ncards - k > sp_ser_cards_per_piece (s) ? k + sp_ser_cards_per_piece (s) : cards->ncards;
	const uint8_t *data = sp_client_array_data (obj);
	if (sp_ser_patch_card_range (s, c, lid, cards, data, 0, k, end, err) < 0)
		return -1;
	s->partial_next = (uint64_t)end * per_card;
	if (end == cards->ncards) {
		s->partial_lid = 0;
		s->partial_cards = false;
	}
	uint64_t to = (uint64_t)end * SP_CARD_BYTES < cards->bytes ? (uint64_t)end * SP_CARD_BYTES : cards->bytes;
	return sp_ser_check_unseen (s, obj, c, lid, data + (uint64_t)k * SP_CARD_BYTES, data + to, err);
}

/*
 * A delta's array of the chain (lid, its cards saying what the chain holds):
 * PATCH records of the cards that differ only.  `whole`: all of it now (a
 * barrier without a ticket: its store must wait; the steps' own object in
 * pieces is left as it is).  Else the cards are looked at a piece's worth a
 * step, as any long array is written (sp_ser_continue), so that a step
 * stays bounded however long the array.
 */
static int
sp_ser_patch_cards_begin (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err)
{
	if (whole) {
		SpCards *cards = sp_ser_chain_cards (s, c, lid, sp_client_array_length (obj));
		const uint8_t *data = sp_client_array_data (obj);
		if (sp_ser_patch_card_range (s, c, lid, cards, data, 0, 0, cards->ncards, err) < 0)
			return -1;
		return sp_ser_check_unseen (s, obj, c, lid, data, data + cards->bytes, err);
	}
	s->partial_lid = lid;
	s->partial_next = 0;
	s->partial_cards = true;
	return sp_ser_patch_cards_next (s, obj, c, lid, err);
}

/* Write the record of object `lid` (obj) of class c (`whole`: no pieces left for later). */
static int
sp_ser_write (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err)
{
	int rc = 0;
	if (lid <= s->prior && c->kind == SP_CLASS_STRING)
		return 0;            /* strings never change: the chain's record stands */
	switch (c->kind) {
	case SP_CLASS_OBJECT: rc = sp_ser_object (s, obj, c, lid, err); break;
	case SP_CLASS_STRING:
	case SP_CLASS_ARRAY: rc = sp_ser_sized (s, obj, c, lid, whole, err); break;
	default: rc = sp_error_set (err, "internal error: class %s has kind %u", c->name, c->kind);
	}
	if (rc < 0)
		return -1;
	if (s->out->oom)
		return sp_ser_oom (err);
	s->objects_written++;
	return 0;
}

/* ---- copy before write (sp_ser_write_now with a ticket) ----------------------- */

/* Is obj (class c) an array whose elements from `from` on are worth a copy outside the lock, rather than written under it? */
static bool
sp_ser_preservable (const SpSerializer *s, void *obj, const SpClass *c, uint64_t from)
{
	if (s->whole_objects || c->kind != SP_CLASS_ARRAY || !sp_class_is_primitive_array (c))
		return false;
	uint64_t n = sp_client_array_length (obj);
	return n > from && (n - from) * c->elem_size >= SP_SER_PRESERVE_MIN_BYTES;
}

/* Is a barrier copying object lid now (its copy not attached yet)? */
static bool
sp_ser_copy_awaited (const SpSerializer *s, uint32_t lid)
{
	for (size_t i = 0; i < s->npreserved; i++)
		if (s->preserved [i].lid == lid && !s->preserved [i].copy)
			return true;
	SpPreserved *aside = s->aside ? g_hash_table_lookup (s->aside, GUINT_TO_POINTER (lid)) : NULL;
	return aside && !aside->copy;
}

/* Elements [first, length) of array obj (LID lid, class c) are to come from a copy the barrier takes: its ticket. */
/* Room for one more preserved array: its slot, or NULL (out of memory). */
static SpPreserved *
sp_ser_preserved_push (SpSerializer *s)
{
	if (s->npreserved == s->preserved_cap) {
		size_t cap = s->preserved_cap ? 2 * s->preserved_cap : 4;
		SpPreserved *grown = realloc (s->preserved, cap * sizeof *grown);
		if (!grown)
			return NULL;
		s->preserved = grown;
		s->preserved_cap = cap;
	}
	return &s->preserved [s->npreserved++];
}

/* *p: elements [first, length) of array obj (LID lid) to come from a copy the barrier takes; *t its ticket. */
static void
sp_ser_preserved_init (SpSerializer *s, SpPreserved *p, void *obj, const SpClass *c, uint32_t lid, uint64_t first, bool cards,
		       SpPreserveTicket *t)
{
	uint64_t n = sp_client_array_length (obj);
	*p = (SpPreserved){ .lid = lid, .serial = ++s->preserve_serial, .first = first, .next = first, .end = n, .cards = cards };
	*t = (SpPreserveTicket){ .lid = lid, .serial = s->preserve_serial, .offset = (size_t)(first * c->elem_size),
				 .bytes = (size_t)((n - first) * c->elem_size) };
}

static int
sp_ser_preserve_begin (SpSerializer *s, void *obj, const SpClass *c, uint32_t lid, uint64_t first, bool cards,
		       SpPreserveTicket *t, SpError *err)
{
	SpPreserved *p = sp_ser_preserved_push (s);
	if (!p)
		return sp_ser_oom (err);
	sp_ser_preserved_init (s, p, obj, c, lid, first, cards, t);
	return SP_SER_WRITE_COPY;
}

/*
 * Array obj (LID lid, claimed): its record and first piece now, under the
 * lock (a piece is a few microseconds), the rest from the barrier's copy.
 * The steps' own object in pieces, if any, is left as it was.
 */
static int
sp_ser_preserve_new (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, SpPreserveTicket *t, SpError *err)
{
	uint32_t steps_lid = s->partial_lid;
	uint64_t steps_next = s->partial_next;
	bool steps_cards = s->partial_cards;
	s->partial_lid = 0;
	s->partial_cards = false;
	int rc = sp_ser_write (s, obj, c, lid, false, err);
	uint64_t first = s->partial_lid == lid ? s->partial_next : 0;
	bool cards = s->partial_lid == lid && s->partial_cards;
	s->partial_lid = steps_lid;
	s->partial_next = steps_next;
	s->partial_cards = steps_cards;
	if (rc < 0)
		return -1;
	if (!first) {
		sp_ser_complete (s, obj, lid);   /* one piece held it all */
		return 1;
	}
	return sp_ser_preserve_begin (s, obj, c, lid, first, cards, t, err);
}

int
sp_ser_preserve_attach (SpSerializer *s, void *obj, const SpPreserveTicket *t, uint8_t *copy, SpError *err)
{
	SpPreserved *p = NULL;
	for (size_t i = 0; i < s->npreserved && !p; i++)
		if (s->preserved [i].serial == t->serial)
			p = &s->preserved [i];
	if (!p && s->aside && (p = g_hash_table_lookup (s->aside, GUINT_TO_POINTER (t->lid))) && p->serial != t->serial)
		p = NULL;
	if (!p || p->copy) {
		free (copy);             /* its snapshot failed meanwhile (and another may have begun) */
		return 0;
	}
	if (!copy)
		return sp_error_set (err, "out of memory for a copy of %zu bytes of a long array stored into while the "
				     "snapshot was being written", t->bytes);
	p->copy = copy;
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	const uint8_t *from = (const uint8_t *)sp_client_array_data (obj) + t->offset;
	return sp_ser_check_unseen (s, obj, c, t->lid, from, from + t->bytes, err);
}

/* The first preserved array whose copy is attached, or NULL. */
static SpPreserved *
sp_ser_preserved_ready (const SpSerializer *s)
{
	for (size_t i = 0; i < s->npreserved; i++)
		if (s->preserved [i].copy)
			return &s->preserved [i];
	return NULL;
}

bool
sp_ser_copy_came (const SpSerializer *s)
{
	return sp_ser_preserved_ready (s) != NULL;
}

/* count more elements of preserved array p (obj) are written; p goes after its last. */
static int
sp_ser_preserved_advance (SpSerializer *s, SpPreserved *p, void *obj, uint64_t count)
{
	p->next += count;
	if (p->next == p->end) {
		uint32_t lid = p->lid;
		free (p->copy);
		*p = s->preserved [--s->npreserved];
		sp_ser_complete (s, obj, lid);
	}
	return 0;
}

/* The next piece of preserved array p, from its copy; p goes when its last piece is written. */
static int
sp_ser_preserved_piece (SpSerializer *s, SpPreserved *p, SpError *err)
{
	void *obj = sp_client_lid_object (p->lid);
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	const uint8_t *from = p->copy;
	uint64_t offset = p->first * c->elem_size;     /* the array's byte that copy [0] holds */
	if (p->cards) {
		/* A delta's array of the chain: the next cards of the copy, patched where they differ from the chain's. */
		uint64_t per_card = SP_CARD_BYTES / c->elem_size;
		SpCards *cards = sp_ser_chain_cards (s, c, p->lid, sp_client_array_length (obj));
		if (!cards)
			return sp_error_set (err, "internal error: array %u of the chain lost its cards while being patched", p->lid);
		uint32_t k = (uint32_t)(p->next / per_card);
		uint32_t end = cards->ncards - k > sp_ser_cards_per_piece (s) ? k + sp_ser_cards_per_piece (s) : cards->ncards;
		if (sp_ser_patch_card_range (s, c, p->lid, cards, from, offset, k, end, err) < 0)
			return -1;
		uint64_t count = (uint64_t)end * per_card < p->end ? (uint64_t)end * per_card - p->next : p->end - p->next;
		return sp_ser_preserved_advance (s, p, obj, count);
	}
	uint64_t count = p->end - p->next < sp_ser_piece_length (s, c) ? p->end - p->next : sp_ser_piece_length (s, c);
	if (p->lid <= s->prior) {
		sp_ser_patch_head (s, c, p->lid, p->next);
	} else {
		sp_buf_put_u8 (s->out, SP_REC_ELEMS);
		sp_buf_put_varint (s->out, p->lid);
		sp_buf_put_varint (s->out, p->next);
	}
	if (sp_ser_piece_body (s, c, p->lid, p->next, count, from + p->next * c->elem_size - offset, err) < 0)
		return -1;
	if (s->out->oom)
		return sp_ser_oom (err);
	return sp_ser_preserved_advance (s, p, obj, count);
}

/* ---- arrays set aside while marking (SP_SER_ASIDE) ----------------------------- */

/*
 * Is obj (class c) an array of primitives that a barrier meeting it before
 * anything reached it (while marking, or in a delta) sets aside rather than
 * writes?  Not one whose cards a chain would keep (64 KiB or more, with
 * deltas): a chain keeps an array's cards from the snapshot that wrote it.
 */
static bool
sp_ser_asidable (const SpSerializer *s, void *obj, const SpClass *c)
{
	return !s->whole_objects && c->kind == SP_CLASS_ARRAY && sp_class_is_primitive_array (c) &&
	       sp_client_array_length (obj) > 0 && !sp_ser_cardable (s, c, sp_client_array_length (obj));
}

/*
 * Array obj (class c, no LID yet) is about to be stored into while marking:
 * its LID, and its elements copied aside, under the lock or, a long one
 * with `ticket`, by the caller outside it (SP_SER_WRITE_COPY).  Kept by LID
 * in s->aside, apart from the preserved arrays being written: a program may
 * set aside thousands (small arrays of the state stored into before marking
 * reaches them), and the steps look through those at every object.
 */
static int
sp_ser_set_aside (SpSerializer *s, void *obj, const SpClass *c, SpPreserveTicket *ticket, SpError *err)
{
	uint32_t lid;
	if (sp_ser_lid_of (s, obj, false, &lid, err) < 0)
		return -1;
	if (!s->aside)
		s->aside = g_hash_table_new_full (NULL, NULL, NULL, sp_ser_aside_free);
	SpPreserved *p = malloc (sizeof *p);
	if (!p)
		return sp_ser_oom (err);
	SpPreserveTicket t;
	sp_ser_preserved_init (s, p, obj, c, lid, 0, false, &t);
	g_hash_table_insert (s->aside, GUINT_TO_POINTER (lid), p);
	s->state [lid] |= SP_SER_ASIDE;
	if (ticket && t.bytes >= SP_SER_PRESERVE_MIN_BYTES) {
		*ticket = t;
		return SP_SER_WRITE_COPY;
	}
	uint8_t *copy = malloc (t.bytes);
	if (copy)
		memcpy (copy, sp_client_array_data (obj), t.bytes);
	return sp_ser_preserve_attach (s, obj, &t, copy, err) < 0 ? -1 : 1;
}

/* An array set aside and met unreached in a snapshot that does not mark: what the rest of the steps write may still reach it. */
static int
sp_ser_park (SpSerializer *s, uint32_t lid, SpError *err)
{
	if (s->nparked == s->parked_cap) {
		size_t cap = s->parked_cap ? 2 * s->parked_cap : 16;
		uint32_t *grown = realloc (s->parked, cap * sizeof *grown);
		if (!grown)
			return sp_ser_oom (err);
		s->parked = grown;
		s->parked_cap = cap;
	}
	s->parked [s->nparked++] = lid;
	return 0;
}

/*
 * An array set aside and never reached, in a snapshot a chain may build on
 * (deltas): its LID had an empty record, so the chain must not take the
 * array for one of its objects when a later delta links it into the state
 * (it would point at that record): the LID map forgets it, and the array
 * gets a new LID, and is written whole, by the snapshot that reaches it.
 * A store a barrier recorded under the LID before (for the next delta) is
 * dropped when that delta is given it (sp_ser_changed): a patch of the
 * empty record would break the chain.
 */
static void
sp_ser_let_go (SpSerializer *s, void *obj, uint32_t lid)
{
	if (!s->cards || sp_client_lid_slot (obj))
		return;
	(void)sp_lidmap_forget (&s->lids, sp_client_identity_hash (obj), obj, sp_client_gc_epoch ());
	s->state [lid] |= SP_SER_LET_GO;
}

/*
 * The steps meet array lid, set aside by a barrier.  Reached: its record
 * begins, and it joins the preserved arrays, whose elements follow in
 * pieces from their copies (sp_ser_preserved_piece).  Never reached
 * (marking complete, or the steps otherwise done): a record of no elements,
 * so that its LID is defined; nothing the roots reach refers to it (a copy
 * still being taken is freed when it comes: no ticket matches).  Poisoned
 * (a store no barrier saw changed it): sp_ser_close gives it a placeholder,
 * as any poisoned object.  In a snapshot that does not mark, met unreached
 * before the steps are otherwise done (steps_done false): parked, judged
 * then.
 */
static int
sp_ser_aside_resolve (SpSerializer *s, uint32_t lid, bool steps_done, SpError *err)
{
	SpPreserved *aside = s->aside ? g_hash_table_lookup (s->aside, GUINT_TO_POINTER (lid)) : NULL;
	if (!aside)
		return sp_error_set (err, "internal error: array %u, set aside, lost its copy", lid);
	if (s->state [lid] & SP_SER_POISONED) {
		g_hash_table_remove (s->aside, GUINT_TO_POINTER (lid));
		return 0;
	}
	/*
	 * A snapshot that does not mark (a delta, a one-pass cycle; the steps
	 * of one that marks run after marking is done): an object is in its
	 * state exactly when a record it writes refers to it, known once the
	 * steps are done.
	 */
	if (!s->mark_done && !steps_done && !(s->state [lid] & SP_SER_REACHED))
		return sp_ser_park (s, lid, err);
	void *obj = sp_client_lid_object (lid);
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	bool reached = s->state [lid] & SP_SER_REACHED;
	SpPreserved *p = reached ? sp_ser_preserved_push (s) : NULL;
	if (reached && !p)
		return sp_ser_oom (err);
	uint32_t class_id = sp_ser_class_id (s, c);   /* first: it may write a CLASS record */
	sp_buf_put_u8 (s->out, SP_REC_ARRAY);
	sp_buf_put_varint (s->out, lid);
	sp_buf_put_varint (s->out, class_id);
	sp_buf_put_varint (s->out, reached ? aside->end : 0);
	sp_buf_put_varint (s->out, 0);              /* the first piece: none (the rest from the copy, or nothing) */
	s->state [lid] |= SP_SER_WRITTEN;
	if (reached) {
		*p = *aside;
		g_hash_table_steal (s->aside, GUINT_TO_POINTER (lid));
		free (aside);
		s->objects_written++;
	} else {
		g_hash_table_remove (s->aside, GUINT_TO_POINTER (lid));
		s->unreached_aside++;
		sp_ser_complete (s, obj, lid);
		sp_ser_let_go (s, obj, lid);
	}
	return s->out->oom ? sp_ser_oom (err) : 0;
}

/* The steps are otherwise done: the parked arrays were reached, and are written from their copies, or not. */
static int
sp_ser_resolve_parked (SpSerializer *s, SpError *err)
{
	size_t n = s->nparked;
	s->nparked = 0;
	for (size_t i = 0; i < n; i++)
		if (sp_ser_aside_resolve (s, s->parked [i], true, err) < 0)
			return -1;
	return 0;
}

void
sp_ser_set_chunk (SpSerializer *s, size_t chunk)
{
	size_t piece = chunk / 4;
	s->piece_bytes = piece < SP_SER_PIECE_BYTES ? (uint32_t)(piece < 16 ? 16 : piece) : SP_SER_PIECE_BYTES;
}

/*
 * What the turn of an object reads to give its references LIDs: the objects
 * they point to (on a heap whose neighbours in the graph are not neighbours
 * in memory, each a cache miss).  Fetched a few turns ahead, once obj itself
 * is in the cache.
 */
static inline void
sp_ser_prefetch_children (const uint8_t *obj)
{
	SpError ignored;
	const SpClass *c = sp_client_class_of ((void *)obj, &ignored);
	if (!c || c->kind != SP_CLASS_OBJECT)
		return;
	for (uint32_t i = 0, n = sp_ser_ref_scan_count (c); i < n; i++) {
		const SpField *f = sp_ser_ref_scan_at (c, i);
		if (f->kind == SP_KIND_REF)
			sp_ser_prefetch_child (f, obj);
	}
}

/*
 * The order of the turns is known ahead (the queue while writing, LID order
 * while marking): fetch the object 2d turns ahead, and the children of the
 * one d turns ahead, fetched d turns ago.
 */
static inline void
sp_ser_prefetch_object (uint32_t lid)
{
	/* Its first two lines: an object of a few fields, references and the identity slot often spans them. */
	const uint8_t *obj = sp_client_lid_object (lid);
	__builtin_prefetch (obj);
	__builtin_prefetch (obj + 64);
}

static inline void
sp_ser_prefetch_ahead (uint32_t far_lid, uint32_t near_lid)
{
	if (far_lid)
		sp_ser_prefetch_object (far_lid);
	if (near_lid)
		sp_ser_prefetch_children (sp_client_lid_object (near_lid));
}

/* ---- turns: a delta's changed objects (queue), then the LIDs handed out (next_new..nobjects) ---- */

static inline size_t
sp_ser_turn_count (const SpSerializer *s)
{
	return sp_queue_count (&s->queue) + (s->nobjects + 1 - s->next_new);
}

static inline bool
sp_ser_turn_pop (SpSerializer *s, uint32_t *lid)
{
	if (sp_queue_pop (&s->queue, lid))
		return true;
	if (s->next_new > s->nobjects)
		return false;
	*lid = s->next_new++;
	return true;
}

/* The LID whose turn comes k turns after the next one's, if there is one yet. */
static inline bool
sp_ser_turn_peek (const SpSerializer *s, size_t k, uint32_t *lid)
{
	size_t queued = sp_queue_count (&s->queue);
	if (k < queued)
		return sp_queue_peek (&s->queue, k, lid);
	uint64_t at = (uint64_t)s->next_new + (k - queued);
	if (at > s->nobjects)
		return false;
	*lid = (uint32_t)at;
	return true;
}

/*
 * The turns ahead (sp_ser_turn_peek): sp_ser_prefetch_ahead's, and a turn further
 * the LID table's entry, which sp_ser_prefetch_ahead reads.  In a full
 * snapshot LIDs come in order and the entries are neighbours; a delta's
 * changed objects are scattered over the chain's LIDs, and reading each
 * entry was a cache miss that held up the turn (1,000 changed objects of
 * 1,000,000: 150-170 us a delta, 100-120 with this).
 */
static inline void
sp_ser_prefetch_queued (const SpSerializer *s)
{
	uint32_t farthest_lid = 0, far_lid = 0, near_lid = 0;
	if (sp_ser_turn_peek (s, 3 * SP_SER_PREFETCH_DISTANCE, &farthest_lid))
		sp_client_lid_prefetch (farthest_lid);
	(void)sp_ser_turn_peek (s, 2 * SP_SER_PREFETCH_DISTANCE, &far_lid);
	/* After marking, a record takes its children's LIDs from marking's (sp-kids.h): they are not read. */
	if (!s->marked)
		(void)sp_ser_turn_peek (s, SP_SER_PREFETCH_DISTANCE, &near_lid);
	sp_ser_prefetch_ahead (far_lid, near_lid);
}

/*
 * A plain turn: an object of an [SPersistent] class with a plan (sp_ser_plan)
 * and no unknown data, reached and met by no barrier (its state is REACHED
 * and nothing else), in a full snapshot that does not mark and has nothing in
 * pieces, copied, due or parked.  Nearly every turn of a typical state is
 * one, and for it each question sp_ser_step's general turn asks has the same
 * answer: sp_ser_plain_turns asks what can change per object only.
 */
static inline bool
sp_ser_plain_snapshot (const SpSerializer *s)
{
	return !s->prior && !s->marked && !s->partial_lid && !s->npreserved && s->due_next >= s->ndue && !s->nparked;
}

static inline bool
sp_ser_plain_class (const SpSerializer *s, const SpClass *c)
{
	return c->kind == SP_CLASS_OBJECT && c->plan.built && !c->unknown && c->snap_cycle == s->cycle;
}

/*
 * The output buffer as a run of plain turns writes it: a cursor and the end
 * of the room reserved, in locals (the record's stores may alias s->out for
 * all the compiler knows, and would make it load s->out again a turn).
 * s->out->len is behind the cursor until sp_ser_plain_sync.
 */
typedef struct SpPlainOut {
	uint8_t *at, *room_end;
} SpPlainOut;

static inline void
sp_ser_plain_sync (SpSerializer *s, const SpPlainOut *o)
{
	if (o->at)
		s->out->len = (size_t)(o->at - s->out->data);
}

/* Room for `need` bytes at o->at: the buffer's own path when the room reserved is short. */
static inline uint8_t *
sp_ser_plain_room (SpSerializer *s, SpPlainOut *o, size_t need)
{
	if (__builtin_expect (o->at && (size_t)(o->room_end - o->at) >= need, 1))
		return o->at;
	sp_ser_plain_sync (s, o);
	o->at = sp_buf_reserve (s->out, need);
	o->room_end = o->at ? s->out->data + s->out->cap : NULL;
	return o->at;
}

/* sp_ser_object for a plain turn (its class's id is known, its plan built, no unknown data, no marking's records). */
static inline int
sp_ser_plain_object (SpSerializer *s, SpPlainOut *o, const uint8_t *obj, SpClass *c, uint32_t lid, SpError *err)
{
	uint8_t *dst = sp_ser_plain_room (s, o, 1 + 2 * SP_VARINT32_MAX + c->wire_max + SP_PRIM_WINDOW_SLACK);
	if (!dst)
		return sp_ser_oom (err);
	*dst++ = SP_REC_OBJECT;
	dst = sp_put_varint_raw (dst, lid);
	dst = sp_put_varint_raw (dst, c->snap_id);
	const SpLeafPlan *plan = &c->plan;
	if (__builtin_expect (plan->nwindows != 0, 1))
		sp_prim_windows_to_wire (plan->windows, plan->nwindows, plan->prims + plan->prim_end [SP_COPY_1],
					 plan->prims + plan->prim_end [SP_COPY_BOOL], obj, dst);
	else
		sp_prims_to_wire (plan->prims, plan->prim_end, obj, dst);
	dst += plan->prim_bytes;
	for (uint32_t i = 0, n = plan->nrefs; i < n; i++) {
		uint32_t child_lid = 0;   /* (set on success; GCC cannot tell) */
		if (sp_ser_child_lid (s, c, plan->refs [i], obj, &child_lid, err) < 0)
			return -1;
		dst = sp_put_varint_raw (dst, child_lid);
	}
	o->at = dst;
	return sp_ser_check_unseen (s, (void *)obj, c, lid, NULL, NULL, err);
}

static inline SpClass *
sp_plain_known (const SpPlainClasses *k, const void *token)
{
	return token == k->token [0] ? k->c [0] : token == k->token [1] ? k->c [1] : NULL;
}

static inline void
sp_plain_learn (SpPlainClasses *k, const void *token, SpClass *c)
{
	k->token [1] = k->token [0], k->c [1] = k->c [0];
	k->token [0] = token, k->c [0] = c;
}

/*
 * sp_ser_prefetch_queued for a plain turn, in a quarter of its
 * instructions: a full snapshot's turns are its LIDs in order
 * (SpSerializer.next_new), so the turns d and 2d ahead are those of lid + d
 * and lid + 2d, if handed out yet.  The children of the object d turns
 * ahead are fetched when its class is a known plain one (`known`), the usual
 * case.
 */
static inline void
sp_ser_plain_prefetch (const SpSerializer *s, const SpPlainClasses *known, uint32_t lid)
{
	uint32_t far_lid = lid + 2 * SP_SER_PREFETCH_DISTANCE, near_lid = lid + SP_SER_PREFETCH_DISTANCE;
	if (far_lid <= s->nobjects)
		sp_ser_prefetch_object (far_lid);
	if (near_lid > s->nobjects)
		return;
	const uint8_t *near = sp_client_lid_object (near_lid);
	const SpClass *c = near ? sp_plain_known (known, sp_client_class_token (near)) : NULL;
	if (!c)
		return;
	for (uint32_t i = 0, n = c->plan.nrefs; i < n; i++)
		sp_ser_prefetch_child (c->plan.refs [i], near);
}

/*
 * Plain turns while the next turn is one, until *done reaches max_objects;
 * what is not plain (and a class's first instance, which writes the CLASS
 * record) is left as the next turn for the general one.
 */
static int
sp_ser_plain_turns (SpSerializer *s, size_t max_objects, size_t *done, SpError *err)
{
	/* A full snapshot queues nothing (sp_ser_changed takes a delta's objects): its turns are next_new on. */
	if (sp_queue_count (&s->queue))
		return 0;
	SpPlainOut out = { NULL, NULL };
	SpPlainClasses known = s->plain;   /* in a local: the record's stores may alias s for all the compiler knows */
	size_t n = *done;
	int rc = 0;
	while (n < max_objects && s->next_new <= s->nobjects) {
		uint32_t lid = s->next_new;
		if (s->state [lid] != SP_SER_REACHED)
			break;
		void *obj = sp_client_lid_object (lid);
		const void *token = sp_client_class_token (obj);
		SpClass *c = sp_plain_known (&known, token);
		if (!c) {
			c = sp_client_class_of (obj, err);
			if (!c || !sp_ser_plain_class (s, c))
				break;
			sp_plain_learn (&known, token, c);
		}
		s->next_new++;
		sp_ser_plain_prefetch (s, &known, lid);
		s->state [lid] = SP_SER_REACHED | SP_SER_WRITTEN;
		if ((rc = sp_ser_plain_object (s, &out, obj, c, lid, err)) < 0)
			break;
		sp_ser_complete (s, obj, lid);
		n++;
	}
	sp_ser_plain_sync (s, &out);
	s->plain = known;
	s->objects_written += n - *done;
	*done = n;
	return rc;
}

int
sp_ser_step (SpSerializer *s, size_t max_objects, SpError *err)
{
	uint32_t lid;
	for (size_t done = 0; done < max_objects; done++) {
		if (sp_ser_plain_snapshot (s)) {
			if (sp_ser_plain_turns (s, max_objects, &done, err) < 0)
				return -1;
			if (done == max_objects)
				break;
		}
		SpPreserved *copied = s->partial_lid ? NULL : sp_ser_preserved_ready (s);
		if (s->partial_lid || copied) {
			if ((copied ? sp_ser_preserved_piece (s, copied, err) : sp_ser_continue (s, err)) < 0)
				return -1;
			done += SP_SER_PIECE_COST - 1;
			continue;
		}
		/* A delta's changed objects are fed before the queue runs short, so that every turn is prefetched as far ahead. */
		if (s->due_next < s->ndue && sp_ser_turn_count (s) < 3 * SP_SER_PREFETCH_DISTANCE && sp_ser_feed (s, err) < 0)
			return -1;
		if (!sp_ser_turn_pop (s, &lid)) {
			if (s->due_next < s->ndue) {
				if (sp_ser_feed (s, err) < 0)
					return -1;
				continue;
			}
			if (s->nparked) {
				if (sp_ser_resolve_parked (s, err) < 0)
					return -1;
				continue;
			}
			return s->npreserved ? SP_SER_STEP_WAITING : 0;
		}
		sp_ser_prefetch_queued (s);
		if (s->state [lid] & SP_SER_ASIDE) {
			if (sp_ser_aside_resolve (s, lid, false, err) < 0)
				return -1;
			continue;
		}
		/* Written by a barrier already, or met only by one and not writable (not in the snapshot). */
		if (s->state [lid] & (SP_SER_POISONED | SP_SER_WRITTEN))
			continue;
		void *obj = sp_client_lid_object (lid);
		SpClass *c = sp_client_class_of (obj, err);   /* known persistable: checked when queued */
		if (!c)
			return sp_error_set (err, "internal error: queued object %u lost its class", lid);
		int claimed = sp_ser_claim_writable (s, lid, obj, c, err);
		if (claimed <= 0) {
			if (claimed < 0)
				return -1;
			continue;
		}
		if (sp_ser_write (s, obj, c, lid, false, err) < 0)
			return -1;
		if (s->partial_lid != lid)
			sp_ser_complete (s, obj, lid);
	}
	return sp_ser_turn_count (s) || s->partial_lid || s->npreserved || s->due_next < s->ndue || s->nparked ? 1 : 0;
}

/*
 * Give LIDs to the objects the reference leaves of one instance/element at
 * `base` point to; `kids`, if not NULL, receives their LIDs in field order.
 */
static int
sp_ser_mark_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, uint32_t *kids, SpError *err)
{
	for (uint32_t i = 0, n = sp_ser_ref_scan_count (c); i < n; i++) {
		uint32_t lid;
		SpField *f = sp_ser_ref_scan_at (c, i);
		if (f->kind != SP_KIND_REF)
			continue;
		if (sp_ser_child_lid (s, c, f, base, &lid, err) < 0)
			return -1;
		if (kids)
			*kids++ = lid;
	}
	return 0;
}

/* sp_ser_mark_leaves for the unknown reference leaves obj carries (c->unknown). */
static int
sp_ser_mark_unknown (SpSerializer *s, const SpClass *c, const uint8_t *obj, uint32_t *kids, SpError *err)
{
	const uint8_t *prims;
	void *const *refs;
	bool carried = sp_client_unknown_values ((void *)obj, c, &prims, &refs);
	for (uint32_t i = 0, leaf = sp_ser_next_unknown_ref (c, c->nfields); i < c->unknown->nrefs; i++) {
		uint32_t lid;
		if (sp_ser_unknown_lid (s, c, leaf, carried ? refs [i] : NULL, &lid, err) < 0)
			return -1;
		if (kids)
			*kids++ = lid;
		leaf = sp_ser_next_unknown_ref (c, leaf + 1);
	}
	return 0;
}

/*
 * Give LIDs to the children of object lid (class c, at obj), and record them
 * for its record (sp-kids.h; when they cannot be recorded, the record looks
 * them up again).
 */
static int
sp_ser_mark_fields (SpSerializer *s, uint32_t lid, const SpClass *c, const uint8_t *obj, SpError *err)
{
	uint32_t nrefs = 0;
	if (!c->plan.tried)
		sp_ser_plan ((SpClass *)c);    /* marking meets a class before the writing does */
	for (uint32_t i = 0, n = sp_ser_ref_scan_count (c); i < n; i++) {
		const SpField *f = sp_ser_ref_scan_at (c, i);
		if (f->kind != SP_KIND_REF)
			continue;
		/* Its class and identity slot are read below: start the loads now (if not fetched ahead). */
		sp_ser_prefetch_child (f, obj);
		nrefs++;
	}
	uint32_t nunknown = c->unknown ? c->unknown->nrefs : 0;
	uint32_t *kids = sp_kids_reserve (&s->kids, nrefs + nunknown);
	if (sp_ser_mark_leaves (s, c, obj, kids, err) < 0)
		return -1;
	if (nunknown && sp_ser_mark_unknown (s, c, obj, kids ? kids + nrefs : NULL, err) < 0)
		return -1;
	if (kids)
		(void)sp_kids_commit (&s->kids, lid, nrefs + nunknown);     /* failing: not recorded */
	return 0;
}

/*
 * Give LIDs to the children of object lid (obj, class c) not looked at yet;
 * returns the work done, in objects: 1, or SP_SER_PIECE_COST for a piece of
 * a long array of references (mark_next remembers where the next one starts).
 */
static int
sp_ser_mark_object (SpSerializer *s, uint32_t lid, void *obj, const SpClass *c, size_t *work, SpError *err)
{
	*work = 1;
	if (c->kind == SP_CLASS_OBJECT)
		return sp_ser_mark_fields (s, lid, c, obj, err);
	if (c->kind != SP_CLASS_ARRAY || sp_class_is_primitive_array (c))
		return 0;
	const uint8_t *data = sp_client_array_data (obj);
	/*
	 * A quarter of a written piece: marking gives most elements a new LID
	 * (its slot written, or a LID-map entry added), about four times a lookup's cost.
	 */
	uint64_t piece = sp_ser_piece_length (s, c) / 4 ? sp_ser_piece_length (s, c) / 4 : 1;
	uint64_t n = sp_client_array_length (obj), i = s->mark_next;
	uint64_t end = n - i > piece ? i + piece : n;
	for (; i < end; i++)
		if (sp_ser_mark_leaves (s, c, data + i * c->elem_size, NULL, err) < 0)
			return -1;
	if (end < n) {
		*work = SP_SER_PIECE_COST;
		s->mark_next = end;
		return 1;
	}
	return 0;
}

int
sp_ser_mark (SpSerializer *s, size_t max_objects, SpError *err)
{
	for (size_t done = 0; done < max_objects && s->marked < s->nobjects;) {
		uint32_t lid = s->marked + 1;
		size_t work = 1;
		if (s->mark_next == 0) {
			uint32_t far_lid = lid + 2 * SP_SER_PREFETCH_DISTANCE, near_lid = lid + SP_SER_PREFETCH_DISTANCE;
			sp_ser_prefetch_ahead (far_lid <= s->nobjects ? far_lid : 0, near_lid <= s->nobjects ? near_lid : 0);
		}
		/* A written object's children got their LIDs when its record was; a poisoned one is not (yet) in the snapshot. */
		if (!(s->state [lid] & (SP_SER_WRITTEN | SP_SER_POISONED))) {
			void *obj = sp_client_lid_object (lid);
			SpClass *c = sp_client_class_of (obj, err);
			int rc = c ? sp_ser_mark_object (s, lid, obj, c, &work, err) : -1;
			if (rc < 0)
				return -1;
			if (rc == 1) {        /* more pieces of this array */
				done += work;
				continue;
			}
		}
		s->marked = lid;
		s->mark_next = 0;
		done += work;
	}
	if (s->marked < s->nobjects)
		return 1;
	s->mark_done = true;
	return 0;
}

uint32_t
sp_ser_lid_if_known (SpSerializer *s, void *obj)
{
	return obj ? sp_ser_known_lid (s, obj, sp_client_lid_slot (obj)) : 0;
}

/* Can every object obj (class c) references be persisted?  Else err names the first that cannot. */
static bool
sp_ser_children_persistable (const SpClass *c, void *obj, SpError *err)
{
	const uint8_t *base = obj;
	uint64_t n = 1;
	if (c->kind == SP_CLASS_STRING || (c->kind == SP_CLASS_ARRAY && sp_class_is_primitive_array (c)))
		return true;
	if (c->kind == SP_CLASS_ARRAY) {
		base = sp_client_array_data (obj);
		n = sp_client_array_length (obj);
	}
	for (uint64_t i = 0; i < n; i++, base += c->elem_size) {
		for (uint32_t k = 0; k < c->nfields; k++) {
			const SpField *f = &c->fields [k];
			void *child;
			if (f->kind != SP_KIND_REF)
				continue;
			memcpy (&child, base + f->offset, sizeof child);
			if (child && !sp_client_class_of (child, err)) {
				sp_ser_blame (err, c, f);
				return false;
			}
		}
	}
	return true;
}

/* Remember that object lid could not be written, and why (err). */
static int
sp_ser_poison (SpSerializer *s, uint32_t lid, const SpError *why, SpError *err)
{
	SpPoison *grown = realloc (s->poison, (s->npoison + 1) * sizeof *grown);
	if (!grown)
		return sp_ser_oom (err);
	s->poison = grown;
	s->poison [s->npoison].lid = lid;
	s->poison [s->npoison].why = strdup (why->msg);
	if (!s->poison [s->npoison].why)
		return sp_ser_oom (err);
	s->npoison++;
	s->state [lid] |= SP_SER_POISONED;
	return 0;
}

/*
 * The barrier before marking is complete, on an object without a LID: it may
 * be part of the snapshot, so it is written, if it can be (see sp-serialize.h).
 */
static int
sp_ser_write_unmarked (SpSerializer *s, void *obj, SpPreserveTicket *ticket, SpError *err)
{
	SpError why = { 0 };
	SpClass *c = sp_client_class_of (obj, &why);
	if (!c)
		return 0;               /* never part of a snapshot: reaching it is an error of its own */
	/*
	 * A string is stored into only while it is built (String.Concat fills a
	 * new one through a pointer it made with ldflda, which meets the
	 * barrier), before anything can reference it: one that the snapshot
	 * reaches holds then what it held at the snapshot's start.  Written now,
	 * it would be written half built, and in a delta chain it would keep
	 * that record, since a chain's strings are never written again.
	 */
	if (c->kind == SP_CLASS_STRING)
		return 0;
	if (sp_ser_asidable (s, obj, c))
		return sp_ser_set_aside (s, obj, c, ticket, err);
	uint32_t lid;
	if (sp_ser_lid_of (s, obj, false, &lid, err) < 0)
		return -1;
	if (!sp_ser_children_persistable (c, obj, &why))
		return sp_ser_poison (s, lid, &why, err);
	sp_ser_claim (s, lid);
	if (ticket && sp_ser_preservable (s, obj, c, 0))
		return sp_ser_preserve_new (s, obj, c, lid, ticket, err);
	return sp_ser_write (s, obj, c, lid, true, err) < 0 ? -1 : 1;
}

int
sp_ser_write_now (SpSerializer *s, void *obj, SpPreserveTicket *ticket, SpError *err)
{
	uint32_t lid = sp_ser_lid_if_known (s, obj);
	if (!lid)
		return !obj || s->mark_done ? 0 : sp_ser_write_unmarked (s, obj, ticket, err);
	/* A changed object of the chain not given yet: due now, its record before the store. */
	if (s->ndue && lid <= s->prior && sp_ser_feed_one (s, lid, err) < 0)
		return -1;
	if ((s->npreserved || (s->aside && g_hash_table_size (s->aside))) && sp_ser_copy_awaited (s, lid))
		return SP_SER_WRITE_WAIT;
	if (s->state [lid] & SP_SER_ASIDE)
		return 0;            /* its elements at the start are in its copy */
	if (lid == s->partial_lid) {
		SpClass *c = sp_client_class_of (obj, err);
		if (!c)
			return -1;
		/* Being written in pieces: the rest from a copy taken outside the lock, or now, before the store lands. */
		if (ticket && sp_ser_preservable (s, obj, c, s->partial_next)) {
			bool cards = s->partial_cards;
			s->partial_lid = 0;
			s->partial_cards = false;
			return sp_ser_preserve_begin (s, obj, c, lid, s->partial_next, cards, ticket, err);
		}
		while (s->partial_lid == lid)
			if (sp_ser_continue (s, err) < 0)
				return -1;
		return 1;
	}
	if (s->state [lid] & (SP_SER_POISONED | SP_SER_WRITTEN))
		return 0;
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	int claimed = sp_ser_claim_writable (s, lid, obj, c, err);
	if (claimed <= 0)
		return claimed;
	if (ticket && sp_ser_preservable (s, obj, c, 0))
		return sp_ser_preserve_new (s, obj, c, lid, ticket, err);
	return sp_ser_write (s, obj, c, lid, true, err) < 0 ? -1 : 1;
}

int
sp_ser_finish (SpSerializer *s, SpError *err)
{
	if (sp_ser_close (s, err) < 0)
		return -1;
	sp_ser_seal (s->out);
	return 0;
}

void
sp_ser_seal (SpBuf *closed)
{
	uint32_t crc = sp_crc32c (0, closed->data, closed->len - 4);
	sp_put_le (closed->data + closed->len - 4, crc, 4);
}

/*
 * A record for poisoned object lid, which the snapshot never reached (a
 * barrier met it, and it held something that cannot be persisted): every
 * LID handed out is defined (sp-format.h), so it gets one, with every
 * reference null and its primitives as they are.  It is not part of the
 * state: nothing the roots reach refers to it.
 */
static int
sp_ser_placeholder (SpSerializer *s, uint32_t lid, SpError *err)
{
	void *obj = sp_client_lid_object (lid);
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	uint32_t *nulls = calloc (c->nfields + (c->unknown ? c->unknown->nrefs : 0) + 1, sizeof *nulls);
	if (!nulls)
		return sp_ser_oom (err);
	uint32_t class_id = sp_ser_class_id (s, c);
	int rc = 0;
	if (c->kind == SP_CLASS_OBJECT) {
		sp_buf_put_u8 (s->out, SP_REC_OBJECT);
		sp_buf_put_varint (s->out, lid);
		sp_buf_put_varint (s->out, class_id);
		rc = sp_ser_leaves (s, c, obj, nulls, err);
	} else {
		uint64_t n = sp_client_array_length (obj);
		const uint8_t *data = sp_client_array_data (obj);
		sp_buf_put_u8 (s->out, SP_REC_ARRAY);
		sp_buf_put_varint (s->out, lid);
		sp_buf_put_varint (s->out, class_id);
		sp_buf_put_varint (s->out, n);
		sp_buf_put_varint (s->out, n);
		for (uint64_t i = 0; i < n && rc == 0; i++)
			rc = sp_ser_leaves (s, c, data + i * c->elem_size, nulls, err);
	}
	free (nulls);
	s->state [lid] |= SP_SER_WRITTEN;
	return rc < 0 ? -1 : s->out->oom ? sp_ser_oom (err) : 0;
}

int
sp_ser_close (SpSerializer *s, SpError *err)
{
	size_t aside = s->aside ? g_hash_table_size (s->aside) : 0;
	if (sp_ser_turn_count (s) || s->partial_lid || s->npreserved || aside || s->due_next < s->ndue)
		return sp_error_set (err, "internal error: snapshot finished with %zu objects still queued",
				     sp_ser_turn_count (s) + (s->partial_lid != 0) + s->npreserved + aside + (s->ndue - s->due_next));
	/* A poisoned object of the chain keeps its earlier record: only new LIDs need one. */
	for (size_t i = 0; i < s->npoison; i++)
		if (s->poison [i].lid > s->prior && !(s->state [s->poison [i].lid] & SP_SER_WRITTEN) &&
		    sp_ser_placeholder (s, s->poison [i].lid, err) < 0)
			return -1;
	if (s->class_index) {
		if (s->nclasses > s->class_at_cap)   /* an offset could not be kept (the record's writer saw out of memory) */
			return sp_ser_oom (err);
		sp_format_put_class_index (s->out, s->class_at, s->nclasses);
	}
	SpSnapTrailer t = { .nclasses = s->nclasses, .nobjects = s->nobjects, .nroots = s->nroots };
	uint8_t *dst = sp_buf_reserve (s->out, SP_FORMAT_TRAILER_SIZE);
	if (!dst)
		return sp_ser_oom (err);
	sp_format_write_trailer (dst, &t);   /* crc 0 until sealed */
	s->out->len += SP_FORMAT_TRAILER_SIZE;
	return 0;
}
