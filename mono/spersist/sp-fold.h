/*
 * sp-fold.h: folding a delta chain into one full snapshot, off the program's
 * path (docs/FORMAT.md, "Folded snapshots").
 *
 * A chain grows by a delta a period; restoring it reads every file, and the
 * store keeps them all.  Writing a new base from the program's objects costs
 * the program a full snapshot (stop-the-world: tens of ms at 1,000,000
 * objects).  Folding costs it nothing: the state at the chain's last delta K
 * is written from the chain's files alone, as a full snapshot with the same
 * LIDs, which then takes K's place in the store (SpStoreOps.replace).  The
 * program's next delta still applies: a folded snapshot names the base and
 * the checksum of the delta it replaced (SP_OPT_FOLDED), and the link check
 * accepts either.  The files before K are then retired.
 *
 * The folded snapshot holds every LID of the chain, reached or not (an object
 * the program dropped may be named again by a later delta: the program still
 * has it, with its LID).  How many its roots no longer reach is counted, so
 * that the program can let them go with a full snapshot once they are many.  Its records, in LID order: each object's latest
 * OBJECT record; a string or an unpatched array as its pieces were; a
 * patched array whole, its elements as the latest record gave them.  Class
 * ids are the folded file's own: one per distinct class description of the
 * chain's files.
 */
#ifndef SP_FOLD_H
#define SP_FOLD_H

#include <stdint.h>

#include "sp-buf.h"
#include "sp-chain.h"
#include "sp-error.h"

typedef struct SpFoldResult {
	uint64_t bytes;
	uint32_t crc;            /* the folded snapshot's trailer checksum */
	uint32_t objects;
	uint32_t classes;
	uint32_t unreached;      /* of its objects, those its roots no longer reach (kept: see above) */
} SpFoldResult;

/*
 * Write the state at c's last file (a delta: a chain of one has nothing to
 * fold) as a folded full snapshot, through `write`, a MiB or so at a time.
 * Fails, writing nothing more, when the chain gives one class two
 * descriptions (a layout changed between its files: the restorer would
 * refuse the chain too), or memory runs out, or `write` fails.
 */
int sp_fold_write (const SpChain *c, SpWriteFn write, void *write_ctx, SpFoldResult *out, SpError *err);

#endif
