/*
 * touch-floor.c: what the machine takes to hand a program a page it has not
 * touched before, with nothing of spmono in the process.  Maps MB megabytes
 * of fresh anonymous memory ROUNDS times and writes one byte a page, timing
 * each write; prints the pages, the mean, the worst and how many took longer
 * than THRESHOLD_US (default 50).
 *
 * Why run-mmu.sh prints it beside its runs: a persistence cycle's first run
 * over a new state touches pages for the first time (its per-object tables),
 * and so does the program.  On a bare machine a first touch costs a page fault
 * of a microsecond or two.  On a VM whose balloon reports free pages to the
 * host (virtio-balloon free page reporting), or whose host backs guest memory
 * lazily, some first touches also wait for the host to back the page, and
 * that stall (hundreds of microseconds) is not the guest's to schedule: it
 * lands in whatever ran on the CPU, an increment included.
 *
 *   touch-floor MB ROUNDS [THRESHOLD_US]
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096u

static long long
now_ns (void)
{
	struct timespec t;
	clock_gettime (CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One round: a fresh mapping, each page written once; the worst write and how many exceeded the threshold. */
static int
touch_round (size_t bytes, long long threshold_ns, long long *worst, long *over, long long *total)
{
	volatile char *p = mmap (NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror ("touch-floor: mmap");
		return -1;
	}
	long long start = now_ns ();
	for (size_t at = 0; at < bytes; at += PAGE) {
		long long t0 = now_ns ();
		p [at] = 1;
		long long took = now_ns () - t0;
		if (took > *worst)
			*worst = took;
		if (took > threshold_ns)
			(*over)++;
	}
	*total += now_ns () - start;
	munmap ((void *)p, bytes);
	return 0;
}

int
main (int argc, char **argv)
{
	if (argc < 3) {
		fprintf (stderr, "usage: touch-floor MB ROUNDS [THRESHOLD_US]\n");
		return 2;
	}
	long mb = atol (argv [1]), rounds = atol (argv [2]), threshold_us = argc > 3 ? atol (argv [3]) : 50;
	if (mb <= 0 || mb > 65536 || rounds <= 0 || rounds > 1000 || threshold_us <= 0) {
		fprintf (stderr, "touch-floor: MB 1..65536, ROUNDS 1..1000, THRESHOLD_US > 0\n");
		return 2;
	}
	size_t bytes = (size_t)mb << 20;
	long long worst = 0, total = 0;
	long over = 0;
	for (long r = 0; r < rounds; r++)
		if (touch_round (bytes, threshold_us * 1000LL, &worst, &over, &total) < 0)
			return 1;
	long pages = (long)(bytes / PAGE) * rounds;
	printf ("%ld pages first touched: %.2f us a page, the worst %.0f us, %ld over %ld us (one in %ld)\n", pages,
		total / 1e3 / pages, worst / 1e3, over, threshold_us, over ? pages / over : pages);
	return 0;
}
