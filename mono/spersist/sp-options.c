/* sp-options.c: see sp-options.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strdup */
#endif
#include "sp-options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
sp_options_init (SpOptions *o)
{
	*o = (SpOptions)SP_OPTIONS_DEFAULT;
}

void
sp_options_free (SpOptions *o)
{
	free (o->store);
	sp_options_init (o);
}

static int
sp_parse_unsigned (const char *value, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul (value, &end, 10);
	if (errno || end == value || *end || value [0] == '-' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int
sp_options_parse (SpOptions *o, const char *arg, SpError *err)
{
	const char *eq = strchr (arg, '=');
	size_t name_len = eq ? (size_t)(eq - arg) : strlen (arg);
	const char *value = eq ? eq + 1 : NULL;
#define SP_IS(name) (name_len == strlen (name) && strncmp (arg, name, name_len) == 0)
	if (SP_IS ("--sp-store")) {
		if (!value || !*value)
			return sp_error_set (err, "--sp-store needs a location: --sp-store=DIR or --sp-store=file:DIR");
		free (o->store);
		o->store = strdup (value);
		return o->store ? 0 : sp_error_set (err, "out of memory");
	}
	if (SP_IS ("--sp-keep")) {
		if (!value || sp_parse_unsigned (value, 1, 1000000, &o->keep) < 0)
			return sp_error_set (err, "--sp-keep takes a whole number of snapshots from 1 to 1000000, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-verbose")) {
		if (value)
			return sp_error_set (err, "--sp-verbose takes no value");
		o->verbose = true;
		return 0;
	}
#undef SP_IS
	return sp_error_set (err, "unknown persistence option '%.*s' (spmono --help lists them)", (int)name_len, arg);
}

char *
sp_options_store_location (const SpOptions *o, const char *program)
{
	if (o->store)
		return strdup (o->store);
	const char *env = getenv ("SPMONO_STORE");
	if (env && *env)
		return strdup (env);
	/* "dir/App.exe" -> "dir/App.spstore" */
	const char *prog = program && *program ? program : "spmono";
	size_t len = strlen (prog);
	const char *base = strrchr (prog, '/');
	base = base ? base + 1 : prog;
	const char *dot = strrchr (base, '.');
	if (dot && dot != base)
		len = (size_t)(dot - prog);
	char *loc = malloc (len + sizeof ".spstore");
	if (loc) {
		memcpy (loc, prog, len);
		memcpy (loc + len, ".spstore", sizeof ".spstore");
	}
	return loc;
}

void
sp_options_usage (FILE *out)
{
	fprintf (out,
		"\n"
		"Persistence (spmono; also accepted in MONO_ENV_OPTIONS):\n"
		"    --sp-store=LOCATION    Where snapshots are kept: a directory (created when\n"
		"                           missing), also spelled file:DIR.  Default: $SPMONO_STORE,\n"
		"                           else PROGRAM.spstore next to the program.\n"
		"    --sp-keep=N            Keep the newest N snapshots (default %d).\n"
		"    --sp-verbose           Report each snapshot on stderr (objects, bytes, time).\n",
		SP_DEFAULT_KEEP);
}
