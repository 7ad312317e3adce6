/*
 * sp-fold-task.c: the fold task, a chain's new base written off the
 * program's path (--sp-delta=on with a store that can replace a snapshot:
 * the file store).  Part of the client (sp-mono-state.h), before sp-delta.c,
 * which asks it for folds.
 *
 * Without it, a chain that has grown past --sp-delta-ratio of its base ends
 * with a full snapshot written by SendPData: the program stopped for the
 * whole state (40-55 ms at 1,000,000 objects), once every few hundred
 * periods.  With it, the chain's files are folded into one full snapshot of
 * the same LIDs (sp-fold.h) by a thread of its own, from the files alone,
 * and put in the place of the chain's last delta (SpStoreOps.replace); the
 * program's deltas go on as before, on a chain that now starts there.  The
 * program pays nothing but the CPU the fold takes on another core (it runs
 * at the lowest priority of the default policy: never before a real-time
 * task, nor before the program's own threads).
 *
 * Retirement moves here too: the files a fold makes redundant (or a new
 * chain, when a full snapshot is written after all) are removed a slice at a
 * time by this thread, not by SendPData.  Commits and retirement share the
 * file store's spare and its list of snapshots: they take store_lock, held
 * by SendPData from its stream's start to its retention update, and by this
 * thread for one slice of retirement.  A fold needs no lock: it reads
 * committed files and writes its own (and keeps every file of its chain
 * retained while it runs: sp_delta_retain).
 *
 * Full snapshots are still written by SendPData when a chain cannot go on
 * (its first snapshot, a failure, stores no barrier saw: sp-delta.c), when
 * folding fails, or when folds fall behind: the chain's deltas beyond what
 * the fold under way covers add up to SP_FOLD_BEHIND times the ratio.
 *
 * The fold task touches no managed object and never takes sp_lock: it is a
 * plain thread, which the world's stops do not wait for.
 */

#include "../spersist/sp-chain.h"
#include "../spersist/sp-fold.h"

#include <pthread.h>
#include <sys/syscall.h>

/* A chain whose deltas pass this many times --sp-delta-ratio gets a full snapshot from the program: folds are not keeping up. */
#define SP_FOLD_BEHIND 4

static struct {
	gboolean on;                 /* the thread runs: folds and retirement are its */
	mono_mutex_t lock;           /* the fields below, and the wake-up */
	mono_cond_t wake;
	uint64_t want;               /* fold the chain up to this delta (0: nothing asked) */
	uint64_t want_chain;         /* the chain's base, as its deltas name it (sp_delta.base_seq) */
	uint64_t want_delta_bytes;   /* the chain's delta bytes up to `want` */
	uint64_t folding_from;       /* while folding: the sequence the chain's files start at (retained) */
	gboolean retire_due;
	/* A fold finished (done != 0), for SendPData to take: */
	uint64_t done;
	uint64_t done_chain, done_delta_bytes, done_bytes, done_ns;
	gboolean failed;             /* it failed: why says why; folding stops (full snapshots again) */
	char why [SP_ERROR_MAX];
	mono_mutex_t store_lock;     /* the store's commit and retirement state */
} sp_fold;

static int
sp_fold_produce (void *ctx, SpWriteFn write, void *write_ctx, SpError *err)
{
	SpFoldResult *res = ((void **)ctx) [1];
	return sp_fold_write (((void **)ctx) [0], write, write_ctx, res, err);
}

/* Fold the chain up to delta seq into seq's place; *bytes: the folded snapshot's size. */
static int
sp_fold_chain (uint64_t seq, uint64_t *bytes, SpError *err)
{
	SpChain chain;
	if (sp_chain_load (sp_store, seq, &chain, err) < 0)
		return -1;
	SpFoldResult res = { 0 };
	void *ctx [2] = { &chain, &res };
	int rc = sp_store_replace (sp_store, seq, sp_fold_produce, ctx, err);
	sp_chain_free (sp_store, &chain);
	*bytes = res.bytes;
	return rc;
}

/* Old snapshots removed, a slice at a time, each under store_lock. */
static void
sp_fold_retire (void)
{
	int more = 1;
	while (more) {
		mono_os_mutex_lock (&sp_fold.store_lock);
		more = sp_store_retire (sp_store, SP_WRITER_RETIRE_BYTES);
		mono_os_mutex_unlock (&sp_fold.store_lock);
	}
}

static void *
sp_fold_main (void *arg)
{
	(void)arg;
	pthread_setname_np (pthread_self (), "sp-fold");
	/* The lowest priority of the default policy, on Linux per thread. */
	setpriority (PRIO_PROCESS, (id_t)syscall (SYS_gettid), 19);
	mono_os_mutex_lock (&sp_fold.lock);
	for (;;) {
		while (!sp_fold.want && !sp_fold.retire_due)
			mono_os_cond_wait (&sp_fold.wake, &sp_fold.lock);
		uint64_t seq = sp_fold.want;
		gboolean retire = sp_fold.retire_due;
		sp_fold.retire_due = FALSE;
		mono_os_mutex_unlock (&sp_fold.lock);
		if (retire)
			sp_fold_retire ();
		if (seq) {
			SpError err = { 0 };
			uint64_t t0 = sp_mono_monotonic_ns (), bytes = 0;
			int rc = sp_fold_chain (seq, &bytes, &err);
			mono_os_mutex_lock (&sp_fold.lock);
			sp_fold.done = seq;
			sp_fold.done_chain = sp_fold.want_chain;
			sp_fold.done_delta_bytes = sp_fold.want_delta_bytes;
			sp_fold.done_bytes = bytes;
			sp_fold.done_ns = sp_mono_monotonic_ns () - t0;
			sp_fold.failed = rc < 0;
			if (rc < 0)
				g_strlcpy (sp_fold.why, err.msg, sizeof sp_fold.why);
			sp_fold.want = 0;
			__atomic_store_n (&sp_fold.folding_from, 0, __ATOMIC_RELEASE);
		} else {
			mono_os_mutex_lock (&sp_fold.lock);
		}
	}
	return NULL;
}

/* At the start (the store open): folding is on when deltas are and the store can replace a snapshot.  TRUE: it is. */
static gboolean
sp_fold_start (void)
{
	if (!sp_options.delta || sp_fold.on || !sp_store_can_replace (sp_store))
		return FALSE;
	mono_os_mutex_init (&sp_fold.lock);
	mono_os_cond_init (&sp_fold.wake);
	mono_os_mutex_init (&sp_fold.store_lock);
	pthread_t thread;
	int rc = pthread_create (&thread, NULL, sp_fold_main, NULL);
	if (rc != 0) {
		fprintf (stderr, "spmono: warning: no fold task (%s): a chain's new base will be written by SendPData\n",
			 strerror (rc));
		return FALSE;
	}
	pthread_detach (thread);
	sp_fold.on = TRUE;
	return TRUE;
}

/* SendPData's store work (its stream, commit and retention) holds the store against retirement. */
static void
sp_fold_store_lock (void)
{
	if (sp_fold.on)
		mono_os_mutex_lock (&sp_fold.store_lock);
}

static void
sp_fold_store_unlock (void)
{
	if (sp_fold.on)
		mono_os_mutex_unlock (&sp_fold.store_lock);
}

/* After a commit: old snapshots go in the background when the fold task runs; FALSE: the caller retires them. */
static gboolean
sp_fold_retire_later (void)
{
	if (!sp_fold.on)
		return FALSE;
	mono_os_mutex_lock (&sp_fold.lock);
	sp_fold.retire_due = TRUE;
	mono_os_cond_signal (&sp_fold.wake);
	mono_os_mutex_unlock (&sp_fold.lock);
	return TRUE;
}

/* Can the chain's growth be folded away, rather than ended by a full snapshot? */
static gboolean
sp_fold_usable (void)
{
	return sp_fold.on && !sp_fold.failed;
}

/* The sequence the fold in progress reads from (0: none): retention keeps it and what follows. */
static uint64_t
sp_fold_reading_from (void)
{
	return sp_fold.on ? __atomic_load_n (&sp_fold.folding_from, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Under sp_lock and store_lock, delta seq committed, of the chain whose
 * deltas name base `chain`, whose files start at `first`, and whose deltas
 * add up to delta_bytes: fold it up to seq, unless a fold is under way.
 * The chain's files are retained from now until the fold is done.
 */
static void
sp_fold_request (uint64_t seq, uint64_t chain, uint64_t first, uint64_t delta_bytes)
{
	mono_os_mutex_lock (&sp_fold.lock);
	if (!sp_fold.want && !sp_fold.done && !sp_fold.failed) {
		__atomic_store_n (&sp_fold.folding_from, first, __ATOMIC_RELEASE);
		sp_fold.want = seq;
		sp_fold.want_chain = chain;
		sp_fold.want_delta_bytes = delta_bytes;
		mono_os_cond_signal (&sp_fold.wake);
	}
	mono_os_mutex_unlock (&sp_fold.lock);
}

/*
 * Of chain `chain`'s delta bytes, those a fold under way (or done, not yet
 * taken) will take away: the chain's growth past them is what counts
 * against the ratio, so that a fold still running does not make SendPData
 * write the full snapshot the fold is about to make needless.
 */
static uint64_t
sp_fold_covered (uint64_t chain)
{
	if (!sp_fold.on)
		return 0;
	mono_os_mutex_lock (&sp_fold.lock);
	uint64_t covered = 0;
	if (sp_fold.want && sp_fold.want_chain == chain)
		covered = sp_fold.want_delta_bytes;
	else if (sp_fold.done && !sp_fold.failed && sp_fold.done_chain == chain)
		covered = sp_fold.done_delta_bytes;
	mono_os_mutex_unlock (&sp_fold.lock);
	return covered;
}

/* A finished fold, for sp-delta.c to take (done 0: none). */
typedef struct SpFoldDone {
	uint64_t done, chain, delta_bytes, bytes, ns;
	gboolean failed;
	char why [SP_ERROR_MAX];
} SpFoldDone;

static void
sp_fold_take (SpFoldDone *out)
{
	out->done = 0;
	if (!sp_fold.on)
		return;
	mono_os_mutex_lock (&sp_fold.lock);
	if (sp_fold.done) {
		*out = (SpFoldDone){ .done = sp_fold.done, .chain = sp_fold.done_chain, .delta_bytes = sp_fold.done_delta_bytes,
				     .bytes = sp_fold.done_bytes, .ns = sp_fold.done_ns, .failed = sp_fold.failed };
		g_strlcpy (out->why, sp_fold.why, sizeof out->why);
		sp_fold.done = 0;
	}
	mono_os_mutex_unlock (&sp_fold.lock);
}
