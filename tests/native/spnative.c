/*
 * spnative.c: native code for test_native_calls (tests/runtime/Native.cs),
 * called by P/Invoke.  Each function takes its time, in pauses, so that a
 * persistence cycle starts while it runs; the stores are volatile, so each
 * lands in the array when the program order says.
 */
#include <stdint.h>
#include <time.h>

static void
spnative_pause (int32_t us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep (&ts, NULL);
}

/* a [0..n) = v, in the order i = j * step mod n (step prime to n), pausing every n / pauses stores (0: never). */
void
spnative_scattered_fill (int32_t *a, int32_t n, int32_t v, int32_t step, int32_t pauses, int32_t us)
{
	int32_t every = pauses > 0 ? n / pauses : 0;
	for (int64_t j = 0; j < n; j++) {
		((volatile int32_t *)a) [(j * step) % n] = v;
		if (every > 0 && j % every == every - 1)
			spnative_pause (us);
	}
}

/* The sum of a [0..n), read with a pause in the middle: native code that only reads its argument. */
int64_t
spnative_slow_sum (const int32_t *a, int32_t n, int32_t us)
{
	int64_t sum = 0;
	for (int32_t i = 0; i < n; i++) {
		if (i == n / 2)
			spnative_pause (us);
		sum += ((const volatile int32_t *)a) [i];
	}
	return sum;
}

/* *slot = v after a pause: native code writing through a ref. */
void
spnative_slow_set (int32_t *slot, int32_t v, int32_t us)
{
	spnative_pause (us);
	*(volatile int32_t *)slot = v;
}
