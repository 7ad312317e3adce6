/*
 * sp-table.h: zeroed tables of one entry an object, as a restore makes
 * them (the walk's kind a LID, the restorer's object a LID).
 *
 * At the sizes a restore reaches they are megabytes, and every entry gets
 * written: faulted in 4 KiB at a time they were a restore's page faults
 * beside its objects' (a 1,000,000-object restore's table of objects is 8 MB,
 * 2,048 faults).  A table of SP_TABLE_HUGE bytes or more is mapped on its
 * own, aligned to a huge page, asked for transparent huge pages and
 * populated in one call (Linux; where the kernel refuses either, its pages
 * fault in as before).  Smaller ones, and other systems, use calloc.
 */
#ifndef SP_TABLE_H
#define SP_TABLE_H

#include <stddef.h>

/* A huge page on x86-64 and arm64 with 4 KiB pages. */
#define SP_TABLE_HUGE ((size_t)2 << 20)

/* `bytes` of zeros, or NULL when the system has no memory for them. */
void *sp_table_alloc (size_t bytes);
/* A table sp_table_alloc made of `bytes` (NULL: nothing). */
void sp_table_free (void *table, size_t bytes);

#endif
