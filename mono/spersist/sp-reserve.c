/* sp-reserve.c: see sp-reserve.h. */
#include "sp-reserve.h"

#include <sys/mman.h>
#include <unistd.h>

static size_t
sp_reserve_page_round (size_t n)
{
	size_t page = (size_t)sysconf (_SC_PAGESIZE);
	return (n + page - 1) / page * page;
}

int
sp_reserve_grow (SpReserve *r, size_t need, size_t max)
{
	if (need <= r->cap)
		return 0;
	if (!r->base) {
		size_t reserved = sp_reserve_page_round (max);
		void *p = mmap (NULL, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		r->base = p;
		r->reserved = reserved;
	}
	if (need > r->reserved)
		return -1;
	/* Twice the size at least: few system calls, and commit charge in proportion to use. */
	size_t cap = r->cap * 2 > need ? r->cap * 2 : need;
	cap = sp_reserve_page_round (cap < 65536 ? 65536 : cap);
	if (cap > r->reserved)
		cap = r->reserved;
	if (mprotect (r->base + r->cap, cap - r->cap, PROT_READ | PROT_WRITE) < 0)
		return -1;
	r->cap = cap;
	return 0;
}

void
sp_reserve_free (SpReserve *r)
{
	if (r->base)
		munmap (r->base, r->reserved);
	*r = (SpReserve){ 0 };
}
