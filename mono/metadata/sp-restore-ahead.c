/*
 * sp-restore-ahead.c: the old generation's memory made ready ahead of a
 * restore, on another thread.
 *
 * A restore of a state larger than the nursery fills whole blocks of the old
 * generation (sp-restore.c), which SGen maps in sections of huge pages and
 * populates first (runtime patch 0015).  Populating is the kernel clearing
 * memory, work that need not wait for the restore: a helper thread maps and
 * populates sections a few ahead of it (runtime patch 0016:
 * sgen_memgov_bulk_load_prepare), and SGen takes a ready one where it would
 * have mapped its own.  The helper is a plain thread that never touches a
 * managed object or SGen's lists: it maps memory and publishes it.  When it
 * cannot keep up, or cannot start, SGen maps sections itself as before.  At
 * the restore's end the helper stops and the sections nothing took are
 * given back.
 */
#include <pthread.h>
#include <time.h>

/* How long the helper sleeps when enough sections are ready: a section lasts the restore about 0.8 ms. */
#define SP_AHEAD_NAP_NS 100000

typedef struct SpAhead {
	pthread_t thread;
	gboolean started;
	volatile gint32 stop;
	guint32 prepared;            /* sections the helper mapped (read after it is joined) */
} SpAhead;

static void *
sp_restore_ahead_main (void *arg)
{
	SpAhead *a = (SpAhead *)arg;
	const struct timespec nap = { 0, SP_AHEAD_NAP_NS };
	while (!mono_atomic_load_i32 (&a->stop)) {
		int rc = sgen_memgov_bulk_load_prepare ();
		if (rc < 0)
			break;               /* no memory: SGen's own mapping says so, if it comes to that */
		if (rc > 0)
			a->prepared++;
		else
			nanosleep (&nap, NULL);
	}
	return NULL;
}

/* Start the helper for a restore into the old generation (nothing when the thread cannot be made). */
static void
sp_restore_ahead_start (SpAhead *a)
{
	memset (a, 0, sizeof *a);
	a->started = pthread_create (&a->thread, NULL, sp_restore_ahead_main, a) == 0;
}

/* Stop the helper and give back what it prepared and nothing took; returns how many sections were taken. */
static guint32
sp_restore_ahead_stop (SpAhead *a)
{
	if (!a->started)
		return 0;
	mono_atomic_store_i32 (&a->stop, 1);
	pthread_join (a->thread, NULL);
	a->started = FALSE;
	guint32 unused = (guint32)sgen_memgov_bulk_load_drain ();
	return a->prepared - MIN (unused, a->prepared);
}
