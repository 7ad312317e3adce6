/*
 * sp-evolve.h: restoring a snapshot into a newer (or older) version of its
 * classes (class evolution, docs/FORMAT.md "Class evolution").
 *
 * A snapshot's class records name every persistent leaf with its kind (and a
 * reference leaf's declared type), so the restorer can match the snapshot's
 * leaves to the running program's by name, whatever changed in between:
 *
 *   same name, same kind         the value is copied (a reference: the same
 *                                declared type, and each target is still
 *                                checked against it at fix-up);
 *   same name, a wider kind      the value is converted, when no value of the
 *                                old kind can change on the way (sp_evolve_widens:
 *                                sbyte -> short -> int -> long, float -> double...);
 *   a leaf only the snapshot has the value is kept as unknown data when the
 *                                restorer asks (c->keep_unknown: the program
 *                                carries it into its next snapshots), else
 *                                dropped;
 *   a leaf only the program has  the field gets its declared Default, else
 *                                the value an object made without its
 *                                constructor has (0, false, null).
 *
 * Anything else (a narrowing, a primitive that became a reference or back, a
 * reference whose declared type changed) is refused before any object is
 * made, naming the class, the field, the rule and what to do.
 *
 * Safety against a hostile snapshot: the bytes are read by the snapshot's own
 * class record (as the validating walk checked them) and written by the live
 * class map, so a class record that lies about its leaves can make values
 * wrong but never make a read or a write leave its object.  A class whose
 * plan is not exact never takes the bulk copy of a primitive array.
 */
#ifndef SP_EVOLVE_H
#define SP_EVOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-snapshot.h"

/* Can every value of kind `from` be stored in kind `to` unchanged (a widening, or the same kind)? */
bool sp_evolve_widens (unsigned from, unsigned to);

/*
 * The decode plan of snapshot class c against its live class map entry:
 * exact when the leaves are the same (c->evolution stays NULL), else by
 * name under the rules above (c->prim_live_kinds set, c->evolution says what
 * changed, e.g. "field 'added' (int) is new: 0; field 'count' int -> long").
 * Fails, naming the rule, for a change that cannot restore.
 */
int sp_snapshot_plan (SpSnapClass *c, const SpClass *live, SpError *err);

/*
 * The old values of the leaves of one record of class c (validated bytes at
 * `values`) that did not restore as they were (dropped, renamed, widened),
 * in the snapshot's order: fn gets each leaf as the snapshot describes it,
 * and its value's bytes (wire order) or, for a reference, the LID (0: null).
 */
typedef void (*SpOldLeafFn) (void *ctx, const SpField *leaf, const uint8_t *value, uint32_t lid);
void sp_evolve_old_leaves (const SpSnapClass *c, const uint8_t *values, SpOldLeafFn fn, void *ctx);

/*
 * The values of the leaves of one record of class c that no live leaf takes
 * (leaf_changed SP_LEAF_DROPPED), in the snapshot's leaf order: primitives'
 * bytes (wire order) appended from prims on, references' LIDs from lids on.
 */
void sp_evolve_dropped_values (const SpSnapClass *c, const uint8_t *values, uint8_t *prims, uint32_t *lids);

/* sp_trusted_primitives for a class whose plan is not exact: drops and conversions. */
void sp_evolved_primitives (const SpSnapClass *c, const uint8_t *src, uint8_t *dst);

/*
 * Unknown data (sp-layout.h SpUnknown): the leaves of snapshot class c that
 * no leaf of live restores into, added to *into (made with live's own leaves
 * first when NULL), each name once: what live's instances carry into later
 * snapshots.  Fails when memory or SP_MAX_FIELDS runs out.
 */
int sp_evolve_unknown_merge (SpUnknown **into, const SpSnapClass *c, const SpClass *live, SpError *err);
void sp_evolve_unknown_free (SpUnknown *u);
/* The unknown leaf of that name (its index in u->leaves: live->nfields or more), or NULL. */
const SpField *sp_evolve_unknown_leaf (const SpUnknown *u, const SpClass *live, const char *name, uint32_t *index);

/*
 * A leaf's declared Default ([SPersistentField (Default = ...)]): `value`,
 * of kind `from` (little-endian, as the attribute's blob holds it), as f's
 * kind (host order, into out): any integer in the field's range, any number
 * into float or double, a bool into a bool.  Fails naming the field
 * otherwise (a fraction into an integer, 300 into a byte, a number into a
 * bool, a Default on a reference).
 */
int sp_evolve_default_value (const SpField *f, unsigned from, const uint8_t value [8], uint8_t out [8], SpError *err);

#endif
