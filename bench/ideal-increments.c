/*
 * ideal-increments.c: the pause floor of this machine, for bench/run-pause.sh.
 *
 *   ideal-increments PAUSE_US PERIOD_US COUNT
 *
 * Runs COUNT "increments" the way the SP task does (released every PERIOD_US
 * at absolute times, SCHED_FIFO when allowed), each spinning in units of a
 * few hundred nanoseconds until PAUSE_US have passed: an increment with a
 * perfectly divisible workload.  What it overshoots by is what the machine
 * (timer ticks, interrupts, a hypervisor) adds; no implementation of the SP
 * task does better.  Prints the histogram of lengths as pause_us,count.
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
	if (argc != 4) {
		fprintf (stderr, "usage: ideal-increments PAUSE_US PERIOD_US COUNT\n");
		return 2;
	}
	uint64_t pause = strtoull (argv [1], NULL, 10) * 1000, period = strtoull (argv [2], NULL, 10) * 1000;
	long count = atol (argv [3]);
	struct sched_param param = { .sched_priority = 50 };
	if (sched_setscheduler (0, SCHED_FIFO, &param) != 0)
		fprintf (stderr, "ideal-increments: SCHED_FIFO refused; normal policy\n");
	static long histogram [10001];
	struct timespec release;
	clock_gettime (CLOCK_MONOTONIC, &release);
	volatile uint64_t sink = 0;
	for (long k = 0; k < count; k++) {
		uint64_t t0 = now_ns (), t = t0;
		while (t - t0 < pause) {
			for (int i = 0; i < 64; i++)     /* a unit of work: a few hundred ns */
				sink = sink * 6364136223846793005u + 1;
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
	return 0;
}
