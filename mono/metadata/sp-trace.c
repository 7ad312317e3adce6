/*
 * sp-trace.c: a trace of what persistence takes from the program (part of
 * the client, see sp-mono-state.h), for measuring from the outside.
 *
 * SPMONO_TRACE=FILE: every run of the SP task (an increment) and of the writer
 * (a slice, with the commit when it ends a snapshot), every cycle's stopped
 * instant and every collection's stopped world, each SendPData that took
 * no snapshot ("skip", an instant), and an instant that cleared a delta
 * snapshot's taken marks left over ("taken-left"), as "what,start_ns,end_ns"
 * lines (CLOCK_MONOTONIC), written to FILE when the program ends.  Two spans
 * per incremental cycle are not runs: "cycle" (its start to its commit) and
 * "predicted" (its start to where the cost model said it would end), for the
 * model's accuracy cycle by cycle (bench/run-control.sh).  For
 * finding what took a CPU from the program, beside the program's own clock
 * (bench/run-mmu.sh); the first SP_TRACE_MAX runs are kept.
 */
#define SP_TRACE_MAX (1u << 20)
typedef struct SpTraceRun {
	uint64_t start_ns, end_ns;
	const char *what;
} SpTraceRun;
static SpTraceRun *sp_trace;
static gint32 sp_trace_count;

static void
sp_trace_run (const char *what, uint64_t start_ns, uint64_t end_ns)
{
	if (!sp_trace)
		return;
	gint32 i = __atomic_fetch_add (&sp_trace_count, 1, __ATOMIC_RELAXED);
	if (i < (gint32)SP_TRACE_MAX)
		sp_trace [i] = (SpTraceRun){ start_ns, end_ns, what };
}

static void
sp_trace_init (void)
{
	if (g_getenv ("SPMONO_TRACE"))
		sp_trace = g_new0 (SpTraceRun, SP_TRACE_MAX);
}

static void
sp_trace_write (void)
{
	const char *path = g_getenv ("SPMONO_TRACE");
	FILE *f = sp_trace && path ? fopen (path, "w") : NULL;
	if (!f)
		return;
	gint32 n = MIN (__atomic_load_n (&sp_trace_count, __ATOMIC_RELAXED), (gint32)SP_TRACE_MAX);
	for (gint32 i = 0; i < n; i++)
		fprintf (f, "%s,%llu,%llu\n", sp_trace [i].what, (unsigned long long)sp_trace [i].start_ns,
			 (unsigned long long)sp_trace [i].end_ns);
	fclose (f);
}

/* The world stopped for a collection (or a cycle's start), as the profiler reports it. */
static void
sp_trace_gc_event (MonoProfilerGCEvent event)
{
	static uint64_t stopping_ns;
	if (!sp_trace)
		return;
	if (event == MONO_GC_EVENT_PRE_STOP_WORLD)
		stopping_ns = sp_mono_monotonic_ns ();
	else if (event == MONO_GC_EVENT_POST_START_WORLD && stopping_ns)
		sp_trace_run ("world-stopped", stopping_ns, sp_mono_monotonic_ns ());
}
