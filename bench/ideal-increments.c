/*
 * ideal-increments.c: the pause floor of this machine, for bench/run-pause.sh.
 *
 *   ideal-increments PAUSE_US PERIOD_US COUNT MEMORY_MB
 *
 * Runs COUNT "increments" the way the SP task does (released every PERIOD_US
 * at absolute times, SCHED_FIFO when allowed), each working in units of a
 * microsecond or two until PAUSE_US have passed: an increment with a
 * perfectly divisible workload.  With MEMORY_MB 0 a unit only computes; else
 * it also reads and writes 16 random words of a MEMORY_MB buffer, as the SP
 * task's work touches a large heap in no particular order.  What it
 * overshoots by is what the machine (timer ticks, interrupts, a hypervisor's
 * handling of memory) adds; no implementation of the SP task does better.
 * Prints the histogram of lengths as pause_us,count.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t
now_ns (void)
{
	struct timespec t;
	clock_gettime (CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int
main (int argc, char **argv)
{
	if (argc != 5) {
		fprintf (stderr, "usage: ideal-increments PAUSE_US PERIOD_US COUNT MEMORY_MB\n");
		return 2;
	}
	uint64_t pause = strtoull (argv [1], NULL, 10) * 1000, period = strtoull (argv [2], NULL, 10) * 1000;
	long count = atol (argv [3]);
	size_t words = (size_t)strtoull (argv [4], NULL, 10) << 17;   /* MB of 8-byte words */
	uint64_t *memory = words ? malloc (words * sizeof *memory) : NULL;
	if (words && !memory) {
		fprintf (stderr, "ideal-increments: cannot allocate %s MB\n", argv [4]);
		return 1;
	}
	for (size_t i = 0; i < words; i++)
		memory [i] = i;
	struct sched_param param = { .sched_priority = 50 };
	if (sched_setscheduler (0, SCHED_FIFO, &param) != 0)
		fprintf (stderr, "ideal-increments: SCHED_FIFO refused; normal policy\n");
	static long histogram [10001];
	struct timespec release;
	clock_gettime (CLOCK_MONOTONIC, &release);
	volatile uint64_t sink = 0;
	uint64_t x = 1;
	for (long k = 0; k < count; k++) {
		uint64_t t0 = now_ns (), t = t0;
		while (t - t0 < pause) {
			for (int i = 0; i < 64; i++)     /* a unit of work: a few hundred ns */
				sink = sink * 6364136223846793005u + 1;
			for (int i = 0; words && i < 16; i++) {
				x = x * 6364136223846793005u + 1;
				sink += memory [(x >> 20) % words];
				memory [(x >> 40) % words] = sink;
			}
			t = now_ns ();
		}
		uint64_t us = (t - t0) / 1000;
		histogram [us < 10000 ? us : 10000]++;
		uint64_t next = (uint64_t)release.tv_nsec + period;
		release.tv_sec += (time_t)(next / 1000000000u);
		release.tv_nsec = (long)(next % 1000000000u);
		while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &release, NULL) != 0)
			;
	}
	for (int us = 0; us <= 10000; us++)
		if (histogram [us])
			printf ("pause_us,%d,%ld\n", us, histogram [us]);
	free (memory);
	return 0;
}
