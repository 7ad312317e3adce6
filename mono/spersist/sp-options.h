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
#define SP_DEFAULT_BUFFER    (1u << 20)  /* bytes of each of the two chunk buffers */
#define SP_MIN_BUFFER        (4u << 10)
#define SP_MAX_BUFFER        (1u << 30)
#define SP_DEFAULT_DELTA_RATIO 50      /* percent of the base a chain of deltas may reach before a new base */
#define SP_MAX_CPU_LATENCY_US 1000000  /* --sp-cpu-latency: a second; no idle state takes longer to leave */

typedef enum SpMode {
	SP_MODE_STW,            /* SendPData persists on the calling thread and returns when durable */
	SP_MODE_INCREMENTAL,    /* SendPData starts a cycle that the SP task performs in increments */
} SpMode;

/* Which JIT-compiled methods get the store barrier (paper section 3.2). */
typedef enum SpBarrier {
	SP_BARRIER_ANNOTATING,  /* methods marked [SPersistentUpdate] */
	SP_BARRIER_MARKING,     /* every method, class libraries included */
	SP_BARRIER_MARKING_V2,  /* methods of [SPersistent] classes */
} SpBarrier;

/* How the writer task shares the CPU (incremental mode). */
typedef enum SpWriter {
	SP_WRITER_BUDGET,       /* at the SP task's priority, within the same budget a period (default: safe on one CPU) */
	SP_WRITER_BACKGROUND,   /* at the normal policy, no budget: for a program whose deadlines run on another CPU */
} SpWriter;

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
	bool mark_first;        /* --sp-passes=2: a full cycle marks its objects, then writes them (paper's Marking SP) */
	unsigned buffer;        /* bytes of a chunk buffer: the serializer fills one while the writer drains the other */
	SpWriter writer;
	bool delta;             /* snapshots after the first are deltas on it (docs/FORMAT.md), while the chain is short */
	unsigned delta_ratio;   /* percent: a new full snapshot once the chain's deltas pass this share of its base */
	bool check;             /* --sp-check: say whether the newest snapshot restores into the program, and exit */
	bool heap_kept;         /* --sp-heap=keep (or huge): heap memory, once populated, is not returned to the system */
	bool heap_huge;         /* --sp-heap=huge: the old generation in 2 MB sections, in transparent huge pages */
	int cpu_latency_us;     /* --sp-cpu-latency: the CPUs' wake-up latency limit held while the program runs, -1: none */
} SpOptions;

/* Defaults, usable as a static initializer (options are parsed before any init runs). */
#define SP_OPTIONS_DEFAULT { .store = NULL, .keep = SP_DEFAULT_KEEP, .verbose = false, .stats = false, \
	.mode = SP_MODE_STW, .barrier = SP_BARRIER_MARKING, .pause_us = SP_DEFAULT_PAUSE_US, \
	.period_us = SP_DEFAULT_PERIOD_US, .priority = 0, .busy_wait = false, .mark_first = false, .buffer = SP_DEFAULT_BUFFER, \
	.writer = SP_WRITER_BUDGET, .delta = false, .delta_ratio = SP_DEFAULT_DELTA_RATIO, .cpu_latency_us = -1 }

void sp_options_init (SpOptions *o);
void sp_options_free (SpOptions *o);
/* Parse one "--sp-..." argument: 0, or -1 with err naming the problem. */
int sp_options_parse (SpOptions *o, const char *arg, SpError *err);
/* After every option is parsed: the ones that must agree do (e.g. pause <= period). */
int sp_options_check (const SpOptions *o, SpError *err);
const char *sp_mode_name (SpMode m);
const char *sp_barrier_name (SpBarrier b);
const char *sp_writer_name (SpWriter w);
/* The store location to use for `program` (malloc'd). */
char *sp_options_store_location (const SpOptions *o, const char *program);
void sp_options_usage (FILE *out);

#endif
