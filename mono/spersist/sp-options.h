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

#define SP_DEFAULT_KEEP      2
#define SP_DEFAULT_PAUSE_US  500       /* the paper's Table 1 settings */
#define SP_DEFAULT_PERIOD_US 3000

typedef enum SpMode {
	SP_MODE_STW,            /* SendPData persists on the calling thread and returns when durable */
	SP_MODE_INCREMENTAL,    /* SendPData starts a cycle that the SP task performs in increments */
} SpMode;

/* Which JIT-compiled methods get the store barrier (paper section 3.2). */
typedef enum SpBarrier {
	SP_BARRIER_ANNOTATING,  /* methods marked [SPersistentUpdate] */
	SP_BARRIER_MARKING,     /* every method, class libraries included; a marking phase first */
	SP_BARRIER_MARKING_V2,  /* methods of [SPersistent] classes */
} SpBarrier;

typedef struct SpOptions {
	char *store;            /* NULL: SPMONO_STORE, else "<program>.spstore" next to the program */
	unsigned keep;          /* newest snapshots kept in the store */
	bool verbose;           /* one line on stderr per snapshot */
	bool stats;             /* one statistics line on stderr per cycle */
	SpMode mode;
	SpBarrier barrier;
	unsigned pause_us;      /* target pause of one increment */
	unsigned period_us;     /* release period of the SP task */
	unsigned priority;      /* SCHED_FIFO priority of the SP and writer tasks, 0: the default policy */
	bool busy_wait;         /* SendPData during a cycle: wait for it, then start one (else: skip, return at once) */
} SpOptions;

/* Defaults, usable as a static initializer (options are parsed before any init runs). */
#define SP_OPTIONS_DEFAULT { .store = NULL, .keep = SP_DEFAULT_KEEP, .verbose = false, .stats = false, \
	.mode = SP_MODE_STW, .barrier = SP_BARRIER_MARKING, .pause_us = SP_DEFAULT_PAUSE_US, \
	.period_us = SP_DEFAULT_PERIOD_US, .priority = 0, .busy_wait = false }

void sp_options_init (SpOptions *o);
void sp_options_free (SpOptions *o);
/* Parse one "--sp-..." argument: 0, or -1 with err naming the problem. */
int sp_options_parse (SpOptions *o, const char *arg, SpError *err);
/* After every option is parsed: the ones that must agree do (e.g. pause <= period). */
int sp_options_check (const SpOptions *o, SpError *err);
const char *sp_mode_name (SpMode m);
const char *sp_barrier_name (SpBarrier b);
/* The store location to use for `program` (malloc'd). */
char *sp_options_store_location (const SpOptions *o, const char *program);
void sp_options_usage (FILE *out);

#endif
