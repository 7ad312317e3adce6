/*
 * sp-error.h: error reporting for the spmono core.
 *
 * Every fallible core function returns 0 on success and -1 on failure, after
 * filling an SpError with a message a user can act on ("field Plant.valve refers
 * to System.IO.FileStream, which is not [SPersistent]").  Messages are complete
 * sentences without a trailing period; callers add context with sp_error_prefix.
 */
#ifndef SP_ERROR_H
#define SP_ERROR_H

#include <stdarg.h>

#define SP_ERROR_MAX 512

typedef struct SpError {
	int code;                  /* errno when an OS call failed, else 0 */
	char msg[SP_ERROR_MAX];
} SpError;

#if defined(__GNUC__)
#define SP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SP_PRINTF(f, a)
#endif

/* Set the message (and code 0).  Always returns -1 so callers can `return sp_error_set(...)`. */
int sp_error_set (SpError *err, const char *fmt, ...) SP_PRINTF(2, 3);
/* Like sp_error_set, with the errno value `code` and its strerror text appended. */
int sp_error_set_errno (SpError *err, int code, const char *fmt, ...) SP_PRINTF(3, 4);
/* Prepend context: "opening store /x: <old message>". */
int sp_error_prefix (SpError *err, const char *fmt, ...) SP_PRINTF(2, 3);
void sp_error_clear (SpError *err);

#endif
