/*
 * unit.h: what every unit test includes: cmocka (with the headers it needs
 * first) and a few assertions cmocka 1.1 lacks.
 */
#ifndef UNIT_H
#define UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

/* haystack contains needle (both strings), else fail showing both. */
#define assert_contains(haystack, needle) \
	unit_assert_contains ((haystack), (needle), #haystack, __FILE__, __LINE__)

static inline void
unit_assert_contains (const char *haystack, const char *needle, const char *expr, const char *file, int line)
{
	if (!haystack || !needle || !strstr (haystack, needle)) {
		print_error ("%s = \"%s\" does not contain \"%s\"\n", expr, haystack ? haystack : "(null)", needle ? needle : "(null)");
		_fail (file, line);
	}
}

/* A core call that must succeed: on failure, show its error message. */
#define assert_ok(call, errp) do { \
		if ((call) != 0) { \
			print_error ("%s failed: %s\n", #call, (errp)->msg); \
			fail (); \
		} \
	} while (0)

/* A core call that must fail with a non-empty message. */
#define assert_fails(call, errp) do { \
		(errp)->msg [0] = '\0'; \
		if ((call) != -1) { \
			print_error ("%s succeeded but should have failed\n", #call); \
			fail (); \
		} \
		if (!(errp)->msg [0]) { \
			print_error ("%s failed without a message\n", #call); \
			fail (); \
		} \
	} while (0)

/* The process's minor page faults so far (a test of how memory is first touched). */
static inline long
unit_minor_faults (void)
{
	struct rusage ru;
	getrusage (RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

#endif
