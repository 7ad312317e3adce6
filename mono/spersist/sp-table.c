/* sp-table.c: see sp-table.h. */
#include "sp-table.h"

#include <stdint.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif
#endif

#ifdef __linux__
/* The table's bytes as mapped: whole pages. */
static size_t
sp_table_mapped (size_t bytes)
{
	size_t page = (size_t)sysconf (_SC_PAGESIZE);
	return (bytes + page - 1) / page * page;
}

/* A mapping of `len` bytes (whole pages) starting on a huge page, or NULL: more is mapped, and the ends cut off. */
static uint8_t *
sp_table_map_aligned (size_t len)
{
	size_t over = len + SP_TABLE_HUGE;
	uint8_t *p = mmap (NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *at = (uint8_t *)(((uintptr_t)p + SP_TABLE_HUGE - 1) & ~(uintptr_t)(SP_TABLE_HUGE - 1));
	if (at > p)
		munmap (p, (size_t)(at - p));
	size_t tail = (size_t)(p + over - (at + len));
	if (tail)
		munmap (at + len, tail);
	return at;
}
#endif

void *
sp_table_alloc (size_t bytes)
{
#ifdef __linux__
	if (bytes >= SP_TABLE_HUGE) {
		size_t len = sp_table_mapped (bytes);
		uint8_t *at = sp_table_map_aligned (len);
		if (!at)
			return NULL;
#ifdef MADV_HUGEPAGE
		(void)madvise (at, len, MADV_HUGEPAGE);
#endif
		(void)madvise (at, len, MADV_POPULATE_WRITE);
		return at;
	}
#endif
	return calloc (bytes ? bytes : 1, 1);
}

void
sp_table_free (void *table, size_t bytes)
{
#ifdef __linux__
	if (bytes >= SP_TABLE_HUGE) {
		if (table)
			munmap (table, sp_table_mapped (bytes));
		return;
	}
#endif
	free (table);
}
