/*
 * sp-chain.h: a delta chain read whole, for the readers that need the state
 * at its last file by LID rather than as live objects: the folder
 * (sp-fold.c, which writes that state as one full snapshot) and spdump.
 * The restorer does not use it: sp_chain_decode builds objects part by part
 * without an index.
 *
 * Every file is parsed (sp_snapshot_parse: validated and indexed), every link
 * checked (sp_chain_link_check), and every delta's record about an earlier
 * object checked to fit it (the same class, a PATCH within its array), so
 * that a reader of the model never meets a contradiction.  The state at the
 * last file of an object is its defining record (in the file whose LIDs
 * reach it first) with the updates of later files applied in chain order.
 *
 * Memory: each file's index (sp_snapshot_parse: about 32 bytes an object it
 * defines) and 8 bytes a LID of the chain.
 */
#ifndef SP_CHAIN_H
#define SP_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-snapshot.h"

typedef struct SpStore SpStore;

/* One file of a chain, parsed. */
typedef struct SpChainFile {
	uint64_t seq;
	uint8_t *data;           /* as the store gave it, until sp_chain_free */
	size_t size;
	SpSnapshot snap;
} SpChainFile;

/* A delta's record about an object an earlier file defined: one of that file's SpSnapChange. */
typedef struct SpChainUpdate {
	uint32_t part;
	uint32_t change;
	size_t prev;             /* index+1 of the object's update before this one, 0 = none */
} SpChainUpdate;

typedef struct SpChain {
	SpChainFile *parts;      /* oldest (the full snapshot) first */
	size_t n;
	uint64_t bytes;          /* of every part */
	SpChainUpdate *updates;  /* in chain order */
	size_t *latest;          /* by lid: index+1 of its latest update, 0 = none */
	uint32_t *ends;          /* [k]: part k's nobjects (the definer's search reads these, not the parts) */
} SpChain;

/*
 * Snapshot seq of store s with its chain: each file read back along
 * prev_sequence to its full snapshot, parsed, linked and indexed
 * (sp_chain_complete).  On failure nothing is held and err names the file at
 * fault.
 */
int sp_chain_load (SpStore *s, uint64_t seq, SpChain *c, SpError *err);
/* c->parts [0..n) read and parsed, newest first: turn them oldest first, check the links, index the updates. */
int sp_chain_complete (SpChain *c, SpError *err);
/*
 * The same from bytes in memory (tests, tools): parts [0..n) oldest first,
 * each parsed (data must outlive c).  Free with sp_chain_free (NULL, c).
 */
int sp_chain_of_memory (const SpChainPart *parts, size_t n, SpChain *c, SpError *err);
/* Releases every file through store s (as read by it; NULL: not read from a store) and the index. */
void sp_chain_free (SpStore *s, SpChain *c);

/* The part that defines lid: the first whose objects reach it (a delta's new lids follow its prior ones). */
size_t sp_chain_definer (const SpChain *c, uint32_t lid);

static inline const SpChainFile *
sp_chain_last (const SpChain *c)
{
	return &c->parts [c->n - 1];
}

/* The same class in two files' caches: its name in its assembly (whose version is informational, FORMAT.md). */
bool sp_snap_class_same (const SpSnapClass *a, const SpSnapClass *b);
/*
 * The same description: the same class (sp_snap_class_same: the assembly's
 * version does not count, a program upgraded without a layout change goes on
 * with the same chain), kind and every leaf.
 */
bool sp_snap_class_equal (const SpSnapClass *a, const SpSnapClass *b);
/* The position after the values of one instance or element of c at p (validated bytes). */
const uint8_t *sp_snap_class_skip (const SpSnapClass *c, const uint8_t *p);

#endif
