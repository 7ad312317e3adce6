/*
 * sp-options.h: spmono's persistence options.
 *
 * Spelled --sp-NAME=VALUE on the command line or in MONO_ENV_OPTIONS (which
 * mono splices in front of the command line, so the command line wins);
 * SPMONO_STORE is the fallback for the store location.  A bad value is an error
 * that names the option and what it accepts: spmono does not start with a
 * configuration it did not understand.
 */
#ifndef SP_OPTIONS_H
#define SP_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "sp-error.h"

#define SP_DEFAULT_KEEP 2

typedef struct SpOptions {
	char *store;            /* NULL: SPMONO_STORE, else "<program>.spstore" next to the program */
	unsigned keep;          /* newest snapshots kept in the store */
	bool verbose;           /* one line on stderr per snapshot */
} SpOptions;

/* Defaults, usable as a static initializer (options are parsed before any init runs). */
#define SP_OPTIONS_DEFAULT { .store = NULL, .keep = SP_DEFAULT_KEEP, .verbose = false }

void sp_options_init (SpOptions *o);
void sp_options_free (SpOptions *o);
/* Parse one "--sp-..." argument: 0, or -1 with err naming the problem. */
int sp_options_parse (SpOptions *o, const char *arg, SpError *err);
/* The store location to use for `program` (malloc'd). */
char *sp_options_store_location (const SpOptions *o, const char *program);
void sp_options_usage (FILE *out);

#endif
