/*
 * class-index.h: a snapshot as an spmono before the class index wrote it
 * (docs/FORMAT.md, "The class index"): the tests' way to old snapshots, and
 * spdowngrade's (tests/tools), which makes them for the runtime tests.
 */
#ifndef CLASS_INDEX_H
#define CLASS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The snapshot in data [0, *size), checked, rewritten in place without its
 * class index: the record removed, the header's flag cleared, the checksum
 * computed again; *size shrinks.  False (nothing changed) when it has none,
 * or one the reader would refuse.
 */
bool class_index_strip (uint8_t *data, size_t *size);

/* The snapshot's checksum (its last four bytes) computed again over the rest. */
void class_index_seal (uint8_t *data, size_t size);

#endif
