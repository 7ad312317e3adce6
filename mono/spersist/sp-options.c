/* sp-options.c: see sp-options.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strdup */
#endif
#include "sp-options.h"
#include "sp-version.h"

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

static const char *const sp_mode_names [] = { [SP_MODE_STW] = "stw", [SP_MODE_INCREMENTAL] = "incremental" };
static const char *const sp_barrier_names [] = {
	[SP_BARRIER_ANNOTATING] = "annotating", [SP_BARRIER_MARKING] = "marking", [SP_BARRIER_MARKING_V2] = "marking-v2",
};

static const char *const sp_writer_names [] = { [SP_WRITER_BUDGET] = "budget", [SP_WRITER_BACKGROUND] = "background" };

const char *
sp_writer_name (SpWriter w)
{
	return (unsigned)w < sizeof sp_writer_names / sizeof *sp_writer_names ? sp_writer_names [w] : "?";
}

/* A size in bytes, with an optional K, M or G suffix (powers of 1024), within [min, max]. */
static int
sp_parse_size (const char *value, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	if (!value || value [0] == '-')
		return -1;
	unsigned long long v = strtoull (value, &end, 10);
	if (errno || end == value)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' && shift)
		end++;          /* KiB, MiB, GiB */
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (unsigned long long)max >> shift || (v << shift) < min)
		return -1;
	*out = (unsigned)(v << shift);
	return 0;
}

const char *
sp_mode_name (SpMode m)
{
	return (unsigned)m < sizeof sp_mode_names / sizeof *sp_mode_names ? sp_mode_names [m] : "?";
}

const char *
sp_barrier_name (SpBarrier b)
{
	return (unsigned)b < sizeof sp_barrier_names / sizeof *sp_barrier_names ? sp_barrier_names [b] : "?";
}

/* `value` among `names` (n of them): its index, or -1. */
static int
sp_parse_choice (const char *value, const char *const *names, int n)
{
	for (int i = 0; value && i < n; i++)
		if (strcmp (value, names [i]) == 0)
			return i;
	return -1;
}

static int
sp_parse_flag (bool *flag, const char *name, const char *value, SpError *err)
{
	if (value)
		return sp_error_set (err, "%s takes no value", name);
	*flag = true;
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
			return sp_error_set (err, "--sp-store needs a location: --sp-store=DIR, file:DIR, pmem:FILE, nats://HOST:PORT[,...]/NAME[?replicas=N&wait=SECONDS] or null:");
		free (o->store);
		o->store = strdup (value);
		return o->store ? 0 : sp_error_set (err, "out of memory");
	}
	if (SP_IS ("--sp-keep")) {
		if (!value || sp_parse_unsigned (value, 1, 1000000, &o->keep) < 0)
			return sp_error_set (err, "--sp-keep takes a whole number of snapshots from 1 to 1000000, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-verbose"))
		return sp_parse_flag (&o->verbose, "--sp-verbose", value, err);
	if (SP_IS ("--sp-stats"))
		return sp_parse_flag (&o->stats, "--sp-stats", value, err);
	if (SP_IS ("--sp-check"))
		return sp_parse_flag (&o->check, "--sp-check", value, err);
	if (SP_IS ("--sp-mode")) {
		int m = sp_parse_choice (value, sp_mode_names, 2);
		if (m < 0)
			return sp_error_set (err, "--sp-mode takes stw or incremental, not '%s'", value ? value : "");
		o->mode = (SpMode)m;
		return 0;
	}
	if (SP_IS ("--sp-barrier")) {
		int b = sp_parse_choice (value, sp_barrier_names, 3);
		if (b < 0)
			return sp_error_set (err, "--sp-barrier takes annotating, marking or marking-v2, not '%s'", value ? value : "");
		o->barrier = (SpBarrier)b;
		return 0;
	}
	if (SP_IS ("--sp-busy")) {
		static const char *const busy_names [] = { "skip", "wait" };
		int b = sp_parse_choice (value, busy_names, 2);
		if (b < 0)
			return sp_error_set (err, "--sp-busy takes skip or wait, not '%s'", value ? value : "");
		o->busy_wait = b == 1;
		return 0;
	}
	if (SP_IS ("--sp-passes")) {
		static const char *const passes_names [] = { "1", "2" };
		int n = sp_parse_choice (value, passes_names, 2);
		if (n < 0)
			return sp_error_set (err, "--sp-passes takes 1 (write the state as the cycle finds it) or 2 (mark it first, "
					     "then write it), not '%s'", value ? value : "");
		o->mark_first = n == 1;
		return 0;
	}
	if (SP_IS ("--sp-pause")) {
		if (!value || sp_parse_unsigned (value, 10, 1000000, &o->pause_us) < 0)
			return sp_error_set (err, "--sp-pause takes the target pause of an increment in microseconds, 10 to 1000000, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-period")) {
		if (!value || sp_parse_unsigned (value, 100, 10000000, &o->period_us) < 0)
			return sp_error_set (err, "--sp-period takes the SP task's period in microseconds, 100 to 10000000, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-priority")) {
		if (!value || sp_parse_unsigned (value, 0, 99, &o->priority) < 0)
			return sp_error_set (err, "--sp-priority takes a SCHED_FIFO priority from 1 to 99, or 0 for the default policy, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-buffer")) {
		if (sp_parse_size (value, SP_MIN_BUFFER, SP_MAX_BUFFER, &o->buffer) < 0)
			return sp_error_set (err, "--sp-buffer takes the size of a chunk buffer in bytes, 4K to 1G (K, M, G: "
					     "powers of 1024), not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-writer")) {
		int w = sp_parse_choice (value, sp_writer_names, 2);
		if (w < 0)
			return sp_error_set (err, "--sp-writer takes budget or background, not '%s'", value ? value : "");
		o->writer = (SpWriter)w;
		return 0;
	}
	if (SP_IS ("--sp-delta")) {
		static const char *const delta_names [] = { "off", "on" };
		int d = sp_parse_choice (value, delta_names, 2);
		if (d < 0)
			return sp_error_set (err, "--sp-delta takes on or off, not '%s'", value ? value : "");
		o->delta = d == 1;
		return 0;
	}
	if (SP_IS ("--sp-delta-ratio")) {
		if (!value || sp_parse_unsigned (value, 1, 10000, &o->delta_ratio) < 0)
			return sp_error_set (err, "--sp-delta-ratio takes the percent of a full snapshot's size its deltas may reach "
					     "before the next full one, 1 to 10000, not '%s'", value ? value : "");
		return 0;
	}
	if (SP_IS ("--sp-heap")) {
		static const char *const heap_names [] = { "return", "keep", "huge" };
		int h = sp_parse_choice (value, heap_names, 3);
		if (h < 0)
			return sp_error_set (err, "--sp-heap takes keep (the heap's memory stays the process's once populated), "
					     "huge (kept, and the old generation in 2 MB huge pages) or return (given back to the "
					     "system after collections), not '%s'", value ? value : "");
		o->heap_kept = h >= 1;
		o->heap_huge = h == 2;
		return 0;
	}
	if (SP_IS ("--sp-cpu-latency")) {
		unsigned us;
		if (!value || sp_parse_unsigned (value, 0, SP_MAX_CPU_LATENCY_US, &us) < 0)
			return sp_error_set (err, "--sp-cpu-latency takes the longest wake-up latency the CPUs may have, in microseconds, "
					     "0 to %d, not '%s'", SP_MAX_CPU_LATENCY_US, value ? value : "");
		o->cpu_latency_us = (int)us;
		return 0;
	}
#undef SP_IS
	return sp_error_set (err, "unknown persistence option '%.*s' (spmono --help lists them)", (int)name_len, arg);
}

int
sp_options_check (const SpOptions *o, SpError *err)
{
	if (o->pause_us > o->period_us)
		return sp_error_set (err, "--sp-pause=%u is longer than --sp-period=%u: an increment must fit in its period",
				     o->pause_us, o->period_us);
	return 0;
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
		"Persistence (spmono " SPMONO_VERSION "; also accepted in MONO_ENV_OPTIONS):\n"
		"    --sp-store=LOCATION    Where snapshots are kept: a directory (created when\n"
		"                           missing), also spelled file:DIR, or pmem:FILE (one file\n"
		"                           mapped with libpmem, keeping the 2 newest snapshots),\n"
		"                           nats://HOST:PORT[,HOST:PORT...]/NAME (a NATS JetStream\n"
		"                           stream replicated on 3 nodes: a commit is acknowledged\n"
		"                           by a majority; a process another one took over from\n"
		"                           cannot commit any more; ?replicas=N&wait=SECONDS set\n"
		"                           the nodes and how long the store rides out an engine\n"
		"                           that does not answer, default 30), or null: (keeps\n"
		"                           nothing; for measuring serialization).\n"
		"                           Default: $SPMONO_STORE, else PROGRAM.spstore next to\n"
		"                           the program.\n"
		"    --sp-keep=N            Keep the newest N snapshots (default %d).\n"
		"    --sp-mode=MODE         stw: SendPData persists before it returns (default);\n"
		"                           incremental: SendPData starts a cycle that the SP task\n"
		"                           performs in increments while the program runs.\n"
		"    --sp-pause=US          Target pause of one increment, microseconds (default %d).\n"
		"    --sp-period=US         The SP task's period, microseconds (default %d).\n"
		"    --sp-priority=N        SCHED_FIFO priority 1-99 of the SP and writer tasks\n"
		"                           (0, the default: the normal policy).\n"
		"    --sp-busy=WHAT         Incremental: SendPData while a cycle is being written\n"
		"                           skip (default): takes no snapshot and returns at once\n"
		"                           (the running cycle's snapshot is the newest); wait:\n"
		"                           waits for that cycle, then starts its own.\n"
		"    --sp-buffer=SIZE       Incremental: each of the two chunk buffers through which\n"
		"                           a snapshot streams to the store (default 1M; 4K-1G).\n"
		"    --sp-writer=HOW        Incremental: budget (default): the writer task runs at\n"
		"                           the SP task's priority within the same budget a\n"
		"                           period (--sp-pause); background: at the normal policy,\n"
		"                           unbudgeted (when deadlines run on another CPU).\n"
		"    --sp-barrier=KIND      Methods whose stores are guarded during a cycle:\n"
		"                           marking (all, default), marking-v2 (methods of\n"
		"                           [SPersistent] classes), annotating ([SPersistentUpdate]).\n"
		"    --sp-passes=N          Incremental: 1 (default): a cycle writes the state as it\n"
		"                           finds it, and a store into any persistable object not\n"
		"                           written yet writes it first; 2: a cycle marks the state\n"
		"                           first, then writes it, and once marking is done only\n"
		"                           the state's objects are written by stores (1.2-1.3x\n"
		"                           the SP task's work; for programs that store much into\n"
		"                           persistable objects outside the state during cycles).\n"
		"    --sp-delta=on|off      Persist only what changed since the last snapshot, as a\n"
		"                           delta on it (default off), in either mode.\n"
		"    --sp-delta-ratio=PCT   A new base once a chain's deltas add up to PCT percent\n"
		"                           of its first file (default %d): folded from the chain's\n"
		"                           files by a task of its own (file store), off the\n"
		"                           program's path.\n"
		"    --sp-check             Do not run the program: say whether the newest snapshot\n"
		"                           restores into it (a new version of it: every class\n"
		"                           change found, with the rule applied), exit 0 if it\n"
		"                           does (or the store is empty), 1 if not.\n"
		"    --sp-heap=WHAT         keep: memory the heap has populated stays the process's\n"
		"                           after collections, so a later allocation or restore\n"
		"                           does not wait on page faults (resident size stays at\n"
		"                           its peak; for real-time programs); huge: kept, and the\n"
		"                           old generation mapped 2 MB at a time in transparent\n"
		"                           huge pages, so that walking a large state (a snapshot,\n"
		"                           a restore) misses the TLB less; return (default):\n"
		"                           empty heap memory goes back to the system.\n"
		"    --sp-cpu-latency=US    While the program runs, no CPU of the machine enters an\n"
		"                           idle state slower than US microseconds to leave (Linux\n"
		"                           PM QoS, /dev/cpu_dma_latency; 0: none at all, idle CPUs\n"
		"                           poll), as real-time set-ups do: the SP task's\n"
		"                           increments, and the program, then start on a CPU at\n"
		"                           speed (on a VM, a vCPU that does not halt). More power\n"
		"                           drawn by idle CPUs.\n"
		"                           Needs write access to the device (root); default: none.\n"
		"    --sp-stats             One statistics line on stderr per cycle.\n"
		"    --sp-verbose           Report each snapshot on stderr (objects, bytes, time).\n",
		SP_DEFAULT_KEEP, SP_DEFAULT_PAUSE_US, SP_DEFAULT_PERIOD_US, SP_DEFAULT_DELTA_RATIO);
}
