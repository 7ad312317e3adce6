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
 * the objects the program dropped outgrow --sp-delta-ratio of those it
 * still reaches (a fold keeps every object of the chain, and so does the
 * program, by its LID; a full snapshot lets them go), when or when folds fall behind: the chain's deltas beyond what
 * the fold under way covers add up to SP_FOLD_BEHIND times the ratio.
 *
 * The fold task touches no managed object and never takes sp_lock: it is a
 * plain thread, which the world's stops do not wait for.
 */

#include "../spersist/sp-chain.h"
#include "../spersist/sp-fold.h"
#include "../spersist/sp-thread.h"

#include <pthread.h>
#include <sys/syscall.h>

/* A chain whose deltas pass this many times --sp-delta-ratio gets a full snapshot from the program: folds are not keeping up. */
#define SP_FOLD_BEHIND 4

static struct {
	gboolean on;                 /* the thread runs: folds and retirement are its */
	pthread_mutex_t lock;        /* the fields below, and the wake-up */
	pthread_cond_t wake;
	uint64_t want;               /* fold the chain up to this delta (0: nothing asked) */
	uint64_t want_chain;         /* the chain's base, as its deltas name it (sp_delta.base_seq) */
	uint64_t want_delta_bytes;   /* the chain's delta bytes up to `want` */
	uint64_t folding_from;       /* while folding: the sequence the chain's files start at (retained) */
	gboolean retire_due;
	/* A fold finished (done != 0), for SendPData to take: */
	uint64_t done;
	uint64_t done_chain, done_delta_bytes, done_bytes, done_ns;
	uint32_t done_objects, done_unreached;
	gboolean done_failed;        /* it failed: why says why */
	char why [SP_ERROR_MAX];
	pthread_mutex_t store_lock;  /* the store's commit and retirement state */
	pthread_cond_t idle;         /* a fold ended (tests: sp_fold_sync) */
	gboolean sync;               /* tests (SPMONO_TEST_FOLD_SYNC): SendPData waits for a fold under way */
	gboolean stall;              /* tests (SPMONO_TEST_FOLD_STALL): the task takes folds but never does one (folds fall behind) */
	gboolean blocked;            /* under sp_lock: a fold of this chain failed; none until a full snapshot starts a new one */
} sp_fold;

/* What the store's replace asks for: the chain, folded (sp_fold_write), and what the fold found. */
typedef struct SpFoldJob {
	const SpChain *chain;
	SpFoldResult *result;
} SpFoldJob;

static int
sp_fold_produce (void *ctx, SpWriteFn write, void *write_ctx, SpError *err)
{
	SpFoldJob *job = ctx;
	return sp_fold_write (job->chain, write, write_ctx, job->result, err);
}

/* Fold the chain up to delta seq into seq's place; *res: the folded snapshot's size and objects. */
static int
sp_fold_chain (uint64_t seq, SpFoldResult *res, SpError *err)
{
	SpChain chain;
	if (sp_chain_load (sp_store, seq, &chain, err) < 0)
		return -1;
	SpFoldJob job = { .chain = &chain, .result = res };
	int rc = sp_store_replace (sp_store, seq, sp_fold_produce, &job, err);
	sp_chain_free (sp_store, &chain);
	return rc;
}

/* Old snapshots removed, a slice at a time, each under store_lock. */
static void
sp_fold_retire (void)
{
	int more = 1;
	while (more) {
		pthread_mutex_lock (&sp_fold.store_lock);
		more = sp_store_retire (sp_store, SP_WRITER_RETIRE_BYTES);
		pthread_mutex_unlock (&sp_fold.store_lock);
	}
}

static void *
sp_fold_main (void *arg)
{
	(void)arg;
	pthread_setname_np (pthread_self (), "sp-fold");
	/* The lowest priority of the default policy (sp_fold_start made it SCHED_OTHER), on Linux per thread. */
	setpriority (PRIO_PROCESS, (id_t)syscall (SYS_gettid), 19);
	pthread_mutex_lock (&sp_fold.lock);
	for (;;) {
		while ((!sp_fold.want || sp_fold.stall) && !sp_fold.retire_due)
			pthread_cond_wait (&sp_fold.wake, &sp_fold.lock);
		uint64_t seq = sp_fold.stall ? 0 : sp_fold.want;
		gboolean retire = sp_fold.retire_due;
		sp_fold.retire_due = FALSE;
		pthread_mutex_unlock (&sp_fold.lock);
		if (retire)
			sp_fold_retire ();
		if (seq) {
			SpError err = { 0 };
			SpFoldResult res = { 0 };
			uint64_t t0 = sp_mono_monotonic_ns ();
			int rc = sp_fold_chain (seq, &res, &err);
			pthread_mutex_lock (&sp_fold.lock);
			sp_fold.done = seq;
			sp_fold.done_chain = sp_fold.want_chain;
			sp_fold.done_delta_bytes = sp_fold.want_delta_bytes;
			sp_fold.done_bytes = res.bytes;
			sp_fold.done_objects = res.objects;
			sp_fold.done_unreached = res.unreached;
			sp_fold.done_ns = sp_mono_monotonic_ns () - t0;
			sp_fold.done_failed = rc < 0;
			if (rc < 0)
				g_strlcpy (sp_fold.why, err.msg, sizeof sp_fold.why);
			sp_fold.want = 0;
			__atomic_store_n (&sp_fold.folding_from, 0, __ATOMIC_RELEASE);
			pthread_cond_broadcast (&sp_fold.idle);
		} else {
			pthread_mutex_lock (&sp_fold.lock);
		}
	}
	return NULL;
}

/*
 * The fold task's locks inherit the priority of who waits for them: the
 * task runs at the lowest priority, and SendPData (on a control loop's
 * SCHED_FIFO thread, say) waits for it to finish a slice of retirement.  A
 * plain mutex let any other task of the machine preempt the holder: on two
 * CPUs, SendPData waited up to 17 ms for store_lock (a slice is ~40 us), 182
 * of 5,000 periods of a 1 kHz loop missed.
 */
static int
sp_fold_mutex_init (pthread_mutex_t *m)
{
	pthread_mutexattr_t attr;
	int rc = pthread_mutexattr_init (&attr);
	if (rc == 0)
		rc = pthread_mutexattr_setprotocol (&attr, PTHREAD_PRIO_INHERIT);
	if (rc == 0)
		rc = pthread_mutex_init (m, &attr);
	pthread_mutexattr_destroy (&attr);
	return rc;
}

/* At the start (the store open): folding is on when deltas are and the store can replace a snapshot.  TRUE: it is. */
static gboolean
sp_fold_start (void)
{
	if (!sp_options.delta || sp_fold.on || !sp_store_can_replace (sp_store))
		return FALSE;
	if (sp_fold_mutex_init (&sp_fold.lock) != 0 || sp_fold_mutex_init (&sp_fold.store_lock) != 0 ||
	    pthread_cond_init (&sp_fold.wake, NULL) != 0 || pthread_cond_init (&sp_fold.idle, NULL) != 0) {
		fprintf (stderr, "spmono: warning: no fold task (its locks cannot be made): a chain's new base will be written by SendPData\n");
		return FALSE;
	}
	/*
	 * The default policy, whatever the creating thread's: a thread inherits
	 * its creator's, and the program's may be SCHED_FIFO (a control loop
	 * under chrt).  A fold at the loop's own FIFO priority ran to its end
	 * before the loop's next period on one CPU: 1,052 of 3,000 periods of a
	 * 1 kHz loop missed, by up to 164 ms.
	 */
	pthread_attr_t attr;
	sp_thread_attr_normal (&attr);
	pthread_t thread;
	int rc = pthread_create (&thread, &attr, sp_fold_main, NULL);
	pthread_attr_destroy (&attr);
	if (rc != 0) {
		fprintf (stderr, "spmono: warning: no fold task (%s): a chain's new base will be written by SendPData\n",
			 strerror (rc));
		return FALSE;
	}
	pthread_detach (thread);
	sp_fold.on = TRUE;
	sp_fold.sync = g_getenv ("SPMONO_TEST_FOLD_SYNC") != NULL;
	sp_fold.stall = g_getenv ("SPMONO_TEST_FOLD_STALL") != NULL;
	return TRUE;
}

/*
 * Tests only (SPMONO_TEST_FOLD_SYNC): SendPData first waits for a fold under
 * way to end, so that whether a chain is folded does not depend on how much
 * CPU the machine left the fold task (a loaded machine starves it, and the
 * program then writes full snapshots: the behaviour the benchmarks measure).
 */
static void
sp_fold_sync (void)
{
	if (!sp_fold.on || !sp_fold.sync || sp_fold.stall)
		return;         /* (a stalled task would never end the fold under way) */
	pthread_mutex_lock (&sp_fold.lock);
	while (sp_fold.want)
		pthread_cond_wait (&sp_fold.idle, &sp_fold.lock);
	pthread_mutex_unlock (&sp_fold.lock);
}

/* SendPData's store work (its stream, commit and retention) holds the store against retirement. */
static void
sp_fold_store_lock (void)
{
	if (sp_fold.on)
		pthread_mutex_lock (&sp_fold.store_lock);
}

static void
sp_fold_store_unlock (void)
{
	if (sp_fold.on)
		pthread_mutex_unlock (&sp_fold.store_lock);
}

/*
 * After a commit: old snapshots go in the background when the fold task
 * runs; FALSE: the caller retires them.  With chains, a snapshot becomes
 * retirable only when the retention moves (a new base, a fold taken): only
 * then is the task woken, not at every period's commit.
 */
static gboolean
sp_fold_retire_later (void)
{
	static uint64_t signalled_from;
	if (!sp_fold.on)
		return FALSE;
	if (sp_store->retain_from && sp_store->retain_from == signalled_from)
		return TRUE;
	signalled_from = sp_store->retain_from;
	pthread_mutex_lock (&sp_fold.lock);
	sp_fold.retire_due = TRUE;
	pthread_cond_signal (&sp_fold.wake);
	pthread_mutex_unlock (&sp_fold.lock);
	return TRUE;
}

/* Does the fold task retire old snapshots (rather than the writer, or SendPData)? */
static gboolean
sp_fold_retires (void)
{
	return sp_fold.on;
}

/* Can the chain's growth be folded away, rather than ended by a full snapshot? */
static gboolean
sp_fold_usable (void)
{
	return sp_fold.on && !sp_fold.blocked;
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
	pthread_mutex_lock (&sp_fold.lock);
	if (!sp_fold.want && !sp_fold.done) {
		__atomic_store_n (&sp_fold.folding_from, first, __ATOMIC_RELEASE);
		sp_fold.want = seq;
		sp_fold.want_chain = chain;
		sp_fold.want_delta_bytes = delta_bytes;
		pthread_cond_signal (&sp_fold.wake);
	}
	pthread_mutex_unlock (&sp_fold.lock);
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
	pthread_mutex_lock (&sp_fold.lock);
	uint64_t covered = 0;
	if (sp_fold.want && sp_fold.want_chain == chain)
		covered = sp_fold.want_delta_bytes;
	else if (sp_fold.done && !sp_fold.done_failed && sp_fold.done_chain == chain)
		covered = sp_fold.done_delta_bytes;
	pthread_mutex_unlock (&sp_fold.lock);
	return covered;
}

/* A finished fold, for sp-delta.c to take (done 0: none). */
typedef struct SpFoldDone {
	uint64_t done, chain, delta_bytes, bytes, ns;
	uint32_t objects, unreached;      /* of the folded state: all, and those its roots no longer reach */
	gboolean failed;
	char why [SP_ERROR_MAX];
} SpFoldDone;

static void
sp_fold_take (SpFoldDone *out)
{
	out->done = 0;
	if (!sp_fold.on)
		return;
	pthread_mutex_lock (&sp_fold.lock);
	if (sp_fold.done) {
		*out = (SpFoldDone){ .done = sp_fold.done, .chain = sp_fold.done_chain, .delta_bytes = sp_fold.done_delta_bytes,
				     .bytes = sp_fold.done_bytes, .ns = sp_fold.done_ns, .failed = sp_fold.done_failed,
				     .objects = sp_fold.done_objects, .unreached = sp_fold.done_unreached };
		g_strlcpy (out->why, sp_fold.why, sizeof out->why);
		sp_fold.done = 0;
	}
	pthread_mutex_unlock (&sp_fold.lock);
}
