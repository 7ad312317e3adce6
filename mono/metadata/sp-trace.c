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
 * model's accuracy cycle by cycle (bench/run-control.sh).  An increment's
 * line has a fourth column, the SP task's CPU time in it (ns), which says
 * whether it worked that long or the CPU was taken from it; and a unit of
 * an increment longer than SP_TRACE_LONG_UNIT_NS is a span of its own
 * inside its increment's, "unit-KIND" (mark, objects, piece or forget),
 * which says which work it was; a run of the SP task from its wake to its
 * sleep that spent that long outside its increments is one too, "awake".
 * (A unit's own CPU time would cost two system calls a unit: at 1,000
 * objects, units of a few microseconds, that was enough to make a 1 kHz
 * loop's cycles miss their period.)  For
 * finding what took a CPU from the program, beside the program's own clock
 * (bench/run-mmu.sh); the first SP_TRACE_MAX runs are kept.
 */
#define SP_TRACE_MAX (1u << 20)
#define SP_TRACE_LONG_UNIT_NS 100000
typedef struct SpTraceRun {
	uint64_t start_ns, end_ns;
	const char *what;
	uint64_t cpu_ns;        /* an increment's CPU time (0: not an increment) */
} SpTraceRun;
static SpTraceRun *sp_trace;
static gint32 sp_trace_count;

static void
sp_trace_add (SpTraceRun run)
{
	gint32 i = __atomic_fetch_add (&sp_trace_count, 1, __ATOMIC_RELAXED);
	if (i < (gint32)SP_TRACE_MAX)
		sp_trace [i] = run;
}

static void
sp_trace_run (const char *what, uint64_t start_ns, uint64_t end_ns)
{
	if (sp_trace)
		sp_trace_add ((SpTraceRun){ start_ns, end_ns, what, 0 });
}

/* A run of the SP task, with its CPU time. */
static void
sp_trace_run_cpu (const char *what, uint64_t start_ns, uint64_t end_ns, uint64_t cpu_ns)
{
	if (sp_trace)
		sp_trace_add ((SpTraceRun){ start_ns, end_ns, what, cpu_ns ? cpu_ns : 1 });
}

/* A unit of an increment (`what`: "unit-mark", ...), traced when it was long. */
static inline void
sp_trace_unit (const char *what, uint64_t start_ns, uint64_t end_ns)
{
	if (sp_trace && end_ns - start_ns > SP_TRACE_LONG_UNIT_NS)
		sp_trace_add ((SpTraceRun){ start_ns, end_ns, what, 0 });
}

/* Is a trace being kept?  (What only the trace needs is measured only then.) */
static inline gboolean
sp_tracing (void)
{
	return sp_trace != NULL;
}

/*
 * A run of the SP task from its wake to its sleep, traced ("awake", with its
 * CPU time, as an increment's) when it spent more than SP_TRACE_LONG_UNIT_NS
 * of it (`outside_ns`) outside its increments: locks, a cycle's end, the
 * world's stops, or its CPU taken.  The CPU time tells the last apart: with
 * paravirtual steal accounting (CONFIG_PARAVIRT_TIME_ACCOUNTING) a guest's
 * thread CPU clock leaves out what the hypervisor took.
 */
static inline void
sp_trace_awake (uint64_t start_ns, uint64_t end_ns, uint64_t outside_ns, uint64_t cpu_ns)
{
	if (outside_ns > SP_TRACE_LONG_UNIT_NS)
		sp_trace_run_cpu ("awake", start_ns, end_ns, cpu_ns);
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
	for (gint32 i = 0; i < n; i++) {
		const SpTraceRun *r = &sp_trace [i];
		fprintf (f, "%s,%llu,%llu", r->what, (unsigned long long)r->start_ns, (unsigned long long)r->end_ns);
		if (r->cpu_ns)
			fprintf (f, ",%llu", (unsigned long long)r->cpu_ns);
		fputc ('\n', f);
	}
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
