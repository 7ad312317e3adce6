/* sp-error.c: see sp-error.h. */
#include "sp-error.h"

#include <stdio.h>
#include <string.h>

static void
sp_error_vformat (SpError *err, const char *fmt, va_list ap)
{
	vsnprintf (err->msg, sizeof err->msg, fmt, ap);
}

int
sp_error_set (SpError *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start (ap, fmt);
	sp_error_vformat (err, fmt, ap);
	va_end (ap);
	err->code = 0;
	return -1;
}

int
sp_error_set_errno (SpError *err, int code, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start (ap, fmt);
	sp_error_vformat (err, fmt, ap);
	va_end (ap);
	size_t len = strlen (err->msg);
	snprintf (err->msg + len, sizeof err->msg - len, ": %s", strerror (code));
	err->code = code;
	return -1;
}

int
sp_error_prefix (SpError *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char old [SP_ERROR_MAX];
	memcpy (old, err->msg, sizeof old);
	va_list ap;
	va_start (ap, fmt);
	sp_error_vformat (err, fmt, ap);
	va_end (ap);
	size_t len = strlen (err->msg);
	snprintf (err->msg + len, sizeof err->msg - len, ": %s", old);
	return -1;
}

void
sp_error_clear (SpError *err)
{
	if (err) {
		err->code = 0;
		err->msg [0] = '\0';
	}
}
