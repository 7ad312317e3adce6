/*
 * test_store_nats.c: the replicated store (sp-store-nats.c) on a 3-node
 * JetStream cluster started on loopback (tools/nats-cluster.sh): commits
 * read back whole, across chunks and a reconnect; retention; fencing (a
 * process whose store another one committed to since cannot commit over it);
 * a commit while a node (maybe the stream's leader) is down; the location's
 * parameters (replicas reach the engine, wait bounds an unreachable
 * engine's open); bad locations and parameters, each with a clear error.
 */
#include "unit.h"

#include "sp-store.h"

/*
 * The store's own source, for its static functions (a catalog's publication
 * whose answer was lost is replayed below); its one public function renamed
 * so as not to meet the library's.
 */
#define sp_store_nats_open sp_store_nats_open_under_test
#include "../../mono/spersist/sp-store-nats.c"
#undef sp_store_nats_open

#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SPMONO_SOURCE_DIR
#define SPMONO_SOURCE_DIR "."
#endif

static char cluster [256];
static char location [512];

static int
cluster_run (const char *what, const char *arg)
{
	char cmd [1024];
	snprintf (cmd, sizeof cmd, "%s/tools/nats-cluster.sh %s %s %s > /dev/null 2>&1", SPMONO_SOURCE_DIR, what, cluster, arg ? arg : "");
	return system (cmd);
}

static int
cluster_up (void **state)
{
	(void)state;
	snprintf (cluster, sizeof cluster, "/tmp/spnats-test.%d", (int)getpid ());
	/* A port of our own per run: parallel test runs do not meet. */
	char port [16];
	snprintf (port, sizeof port, "%d", 20000 + (int)(getpid () % 20000));
	if (cluster_run ("start", port) != 0) {
		fprintf (stderr, "test_store_nats: the NATS cluster did not start (tools/nats-cluster.sh)\n");
		return -1;
	}
	int p = atoi (port);
	snprintf (location, sizeof location, "nats://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/unit", p, p + 1, p + 2);
	return 0;
}

static int
cluster_down (void **state)
{
	(void)state;
	cluster_run ("stop", NULL);
	char cmd [512];
	snprintf (cmd, sizeof cmd, "rm -rf %s", cluster);
	return system (cmd) == 0 ? 0 : -1;
}

/* The store NAME (and parameters) on the test's cluster. */
static void
store_named (char *out, size_t size, const char *name)
{
	snprintf (out, size, "%.*s/%s", (int)(strrchr (location, '/') - location), location, name);
}

/* The URL of the cluster's first node, for a client of the engine's own. */
static void
first_server (char *out, size_t size)
{
	snprintf (out, size, "%.*s", (int)(strchr (location + strlen ("nats://"), ',') - location), location);
}

/* n bytes that depend on seq, so that one snapshot's bytes are never another's. */
static uint8_t *
bytes_of (uint64_t seq, size_t n)
{
	uint8_t *b = malloc (n);
	for (size_t i = 0; i < n; i++)
		b [i] = (uint8_t)(i * 31 + seq * 7 + (i >> 13));
	return b;
}

static void
assert_holds (SpStore *s, uint64_t seq, size_t n)
{
	uint8_t *data;
	size_t size;
	SpError err = { 0 };
	assert_ok (s->ops->read (s, seq, &data, &size, &err), &err);
	assert_int_equal (size, n);
	uint8_t *want = bytes_of (seq, n);
	assert_memory_equal (data, want, n);
	free (want);
	sp_store_release (s, data, size);
}

static void
commit (SpStore *s, uint64_t seq, size_t n)
{
	uint8_t *b = bytes_of (seq, n);
	SpError err = { 0 };
	assert_ok (sp_store_commit (s, b, n, seq, &err), &err);
	free (b);
}

static void
test_commits_read_back (void **state)
{
	(void)state;
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (location, 2, &s, &err), &err);
	uint64_t first = sp_store_next_sequence (s);
	commit (s, first, 100);
	commit (s, first + 1, (5u << 20) / 2 + 17);       /* five chunks, the last short */
	commit (s, first + 2, 1);
	assert_holds (s, first + 1, (5u << 20) / 2 + 17);
	assert_holds (s, first + 2, 1);
	/* Kept: the newest two. */
	uint64_t *seqs;
	size_t n;
	assert_ok (s->ops->sequences (s, &seqs, &n, &err), &err);
	assert_int_equal (n, 2);
	assert_true (seqs [0] == first + 2 && seqs [1] == first + 1);
	free (seqs);
	assert_int_equal (s->ops->read (s, first, (uint8_t **)&seqs, &n, &err), -1);
	assert_contains (err.msg, "is not in store");
	sp_store_close (s);
	/* Another connection sees the same. */
	assert_ok (sp_store_open_readonly (location, &s, &err), &err);
	assert_true (sp_store_next_sequence (s) == first + 3);
	assert_holds (s, first + 1, (5u << 20) / 2 + 17);
	sp_store_close (s);
}

/*
 * Chunk boundaries: a snapshot of exactly one chunk (published while
 * appending, none left at the finish), of two, and of one byte more than
 * one; appended in pieces that do not divide a chunk.  Each read back
 * whole, from another connection too.
 */
static void
test_chunk_boundaries (void **state)
{
	(void)state;
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (location, 4, &s, &err), &err);
	const size_t sizes [] = { SP_NATS_CHUNK, 2 * SP_NATS_CHUNK, SP_NATS_CHUNK + 1 };
	uint64_t first = sp_store_next_sequence (s);
	for (size_t i = 0; i < 3; i++) {
		uint8_t *b = bytes_of (first + i, sizes [i]);
		assert_ok (sp_store_begin (s, first + i, sizes [i], &err), &err);
		for (size_t at = 0; at < sizes [i]; at += 100003)
			assert_ok (sp_store_append (s, b + at, sizes [i] - at < 100003 ? sizes [i] - at : 100003, &err), &err);
		assert_ok (sp_store_finish (s, &err), &err);
		free (b);
		assert_holds (s, first + i, sizes [i]);
	}
	sp_store_close (s);
	assert_ok (sp_store_open_readonly (location, &s, &err), &err);
	for (size_t i = 0; i < 3; i++)
		assert_holds (s, first + i, sizes [i]);
	sp_store_close (s);
}

/*
 * A standby takes over (opens the store, commits); the old primary, which
 * did not see that commit, is fenced: its commit fails saying so, and the
 * standby's snapshot stays the newest.
 */
static void
test_stale_primary_is_fenced (void **state)
{
	(void)state;
	SpStore *primary, *standby;
	SpError err = { 0 };
	assert_ok (sp_store_open (location, 2, &primary, &err), &err);
	uint64_t next = sp_store_next_sequence (primary);
	commit (primary, next, 1000);
	assert_ok (sp_store_open (location, 2, &standby, &err), &err);
	assert_true (sp_store_next_sequence (standby) == next + 1);
	commit (standby, next + 1, 2000);
	uint8_t *b = bytes_of (999, 3000);
	assert_int_equal (sp_store_commit (primary, b, 3000, next + 1, &err), -1);
	assert_contains (err.msg, "no longer the primary");
	free (b);
	assert_holds (standby, next + 1, 2000);
	sp_store_close (primary);
	assert_ok (sp_store_open_readonly (location, &primary, &err), &err);
	assert_holds (primary, next + 1, 2000);
	sp_store_close (primary);
	sp_store_close (standby);
}

/* Two processes open a new store: the first commit wins, the other is fenced (there was no catalog to expect). */
static void
test_first_commits_race (void **state)
{
	(void)state;
	char fresh [600];
	store_named (fresh, sizeof fresh, "race");
	SpStore *a, *b;
	SpError err = { 0 };
	assert_ok (sp_store_open (fresh, 1, &a, &err), &err);
	assert_ok (sp_store_open (fresh, 1, &b, &err), &err);
	assert_true (sp_store_next_sequence (a) == 1 && sp_store_next_sequence (b) == 1);
	commit (a, 1, 50);
	uint8_t *bytes = bytes_of (77, 60);
	assert_int_equal (sp_store_commit (b, bytes, 60, 1, &err), -1);
	assert_contains (err.msg, "no longer the primary");
	free (bytes);
	sp_store_close (b);
	assert_ok (sp_store_open_readonly (fresh, &b, &err), &err);
	assert_holds (b, 1, 50);
	sp_store_close (b);
	sp_store_close (a);
}

/* One node down (the stream's leader, if it was n1): commits go on, on the majority left. */
static void
test_commit_with_a_node_down (void **state)
{
	(void)state;
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (location, 2, &s, &err), &err);
	assert_int_equal (cluster_run ("kill", "1"), 0);
	uint64_t next = sp_store_next_sequence (s);
	commit (s, next, 700000);
	assert_holds (s, next, 700000);
	assert_int_equal (cluster_run ("restart", "1"), 0);
	commit (s, next + 1, 10);
	sp_store_close (s);
}

static void
test_bad_locations (void **state)
{
	(void)state;
	SpStore *s;
	SpError err = { 0 };
	assert_int_equal (sp_store_open ("nats://", 1, &s, &err), -1);
	assert_contains (err.msg, "nats://HOST:PORT");
	assert_int_equal (sp_store_open ("nats://127.0.0.1:4222/", 1, &s, &err), -1);
	assert_int_equal (sp_store_open ("nats://127.0.0.1:4222/a b", 1, &s, &err), -1);
	assert_contains (err.msg, "letters, digits");
	assert_int_equal (sp_store_open ("nats://,127.0.0.1:4222/x", 1, &s, &err), -1);
	assert_contains (err.msg, "empty server");
	static const struct { const char *params, *says; } bad [] = {
		{ "?replicas=0", "replicas takes a count of nodes from 1 to 5, not '0'" },
		{ "?replicas=6", "not '6'" },
		{ "?replicas=three", "not 'three'" },
		{ "?replicas", "not ''" },
		{ "?wait=0", "wait takes seconds from 1 to 3600, not '0'" },
		{ "?wait=-5", "not '-5'" },
		{ "?wait=10s", "not '10s'" },
		{ "?replicas=1&&wait=2", "an empty parameter" },
		{ "?colour=red", "unknown parameter 'colour'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
		char loc [64];
		snprintf (loc, sizeof loc, "nats://127.0.0.1:1/x%s", bad [i].params);
		assert_int_equal (sp_store_open (loc, 1, &s, &err), -1);
		assert_contains (err.msg, bad [i].says);
	}
	/* Nobody listens there: tried for the store's wait, then said in the store's words. */
	struct timespec t0, t1;
	clock_gettime (CLOCK_MONOTONIC, &t0);
	assert_int_equal (sp_store_open ("nats://127.0.0.1:1/x?wait=2", 1, &s, &err), -1);
	clock_gettime (CLOCK_MONOTONIC, &t1);
	assert_contains (err.msg, "connecting to the NATS servers");
	assert_true (t1.tv_sec - t0.tv_sec >= 2);
	/* Read-only: a store that does not exist is not made. */
	char missing [600];
	store_named (missing, sizeof missing, "nosuchstore");
	assert_int_equal (sp_store_open_readonly (missing, &s, &err), -1);
	assert_contains (err.msg, "does not exist");
}

/*
 * A catalog's publication that landed although its answer was lost (a try
 * timed out, the engine was busy or its leader changing) is tried again with
 * the fence it had: the stream refuses that for the fence, and the commit is
 * nonetheless done, not fenced (once seen after the whole engine came back:
 * a program fenced by its own commit).  A real fence still fences.
 */
static void
test_catalog_answer_lost (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "lostanswer");
	SpStore *s, *other;
	SpError err = { 0 };
	assert_ok (sp_store_open (loc, 4, &s, &err), &err);
	commit (s, sp_store_next_sequence (s), 100);
	SpNatsStore *ns = (SpNatsStore *)s;
	uint64_t fence = ns->fence;
	SpNatsEntry next [2] = { ns->catalog [0], { .sequence = ns->catalog [0].sequence + 1, .writer = ns->writer } };
	assert_ok (sp_nats_catalog_publish (ns, next, 2, &err), &err);
	uint64_t landed = ns->fence;
	assert_true (landed > fence);
	ns->fence = fence;               /* its answer lost: the same publication tried again */
	assert_ok (sp_nats_catalog_publish (ns, next, 2, &err), &err);
	assert_int_equal (ns->fence, landed);
	assert_false (s->fenced);
	/* Another process commits: the same replay is now fenced. */
	assert_ok (sp_store_open (loc, 4, &other, &err), &err);
	commit (other, sp_store_next_sequence (other), 10);
	ns->fence = landed;
	next [1].sequence++;
	assert_int_equal (sp_nats_catalog_publish (ns, next, 2, &err), -1);
	assert_contains (err.msg, "no longer the primary");
	assert_true (s->fenced);
	sp_store_close (other);
	sp_store_close (s);
}

/* What the engine loses when it drops acknowledged messages: every catalog of store ns. */
static void
engine_drops_catalogs (SpNatsStore *ns)
{
	char filter [256];
	sp_nats_subject_catalog (filter, sizeof filter, ns);
	jsOptions o;
	jsOptions_Init (&o);
	o.Stream.Purge.Subject = filter;
	jsErrCode jerr = 0;
	assert_int_equal (js_PurgeStream (ns->js, ns->stream, &o, &jerr), NATS_OK);
}

/*
 * The engine loses catalogs this process committed (nats-server before
 * 2.10.11 does, after a node restarts; seen in CI): the next commit fails,
 * saying so (not "fenced": no other process committed), whether it finds
 * out from a refused fence or from settling an unanswered catalog; the
 * commit after it succeeds on what the store holds, and a standby reads it.
 * A refusal for a fence this process's own newer catalog moved is tried
 * again and commits.
 */
static void
test_engine_lost_commits (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "enginelost");
	SpStore *s, *standby;
	SpError err = { 0 };
	assert_ok (sp_store_open (loc, 4, &s, &err), &err);
	SpNatsStore *ns = (SpNatsStore *)s;
	commit (s, sp_store_next_sequence (s), 100);
	commit (s, sp_store_next_sequence (s), 100);
	engine_drops_catalogs (ns);
	uint8_t *b = bytes_of (3, 100);
	assert_int_equal (sp_store_commit (s, b, 100, sp_store_next_sequence (s), &err), -1);
	assert_contains (err.msg, "lost snapshots this process committed");
	assert_false (s->fenced);
	uint64_t seq = sp_store_next_sequence (s);
	commit (s, seq, 200);
	assert_int_equal (ns->ncatalog, 1);
	/* The same, found out when settling a catalog whose answer was lost. */
	engine_drops_catalogs (ns);
	ns->unsure = true;
	assert_int_equal (sp_store_commit (s, b, 100, sp_store_next_sequence (s), &err), -1);
	assert_contains (err.msg, "lost snapshots this process committed");
	assert_false (s->fenced || ns->unsure);
	uint64_t before = sp_store_next_sequence (s);
	commit (s, before, 300);
	/* A refusal for a fence behind this process's own newest catalog: tried again, committed. */
	ns->fence--;
	seq = sp_store_next_sequence (s);
	commit (s, seq, 400);
	assert_false (s->fenced);
	assert_ok (sp_store_open (loc, 4, &standby, &err), &err);
	assert_int_equal (standby->last_sequence, seq);
	assert_holds (standby, seq, 400);
	assert_holds (standby, before, 300);
	sp_store_close (standby);
	sp_store_close (s);
	free (b);
}

/* The messages stream `name` holds, and its limit of messages per subject. */
static void
stream_state (SpNatsStore *ns, uint64_t *msgs, int64_t *per_subject)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	assert_int_equal (js_GetStreamInfo (&si, ns->js, ns->stream, NULL, &jerr), NATS_OK);
	*msgs = si->State.Msgs;
	*per_subject = si->Config->MaxMsgsPerSubject;
	jsStreamInfo_Destroy (si);
}

/*
 * The stream has no limit of messages per subject (nats-server 2.9.10 then
 * removed a catalog just published, sp_nats_unlimited): a stream an earlier
 * spmono made with 4 is updated at open, and retire deletes the catalogs a
 * newer one replaced and the syncs, so that the stream holds the kept
 * snapshots' chunks and one catalog.
 */
static void
test_no_limit_per_subject (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "perlimit");
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (loc, 2, &s, &err), &err);
	SpNatsStore *ns = (SpNatsStore *)s;
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	assert_int_equal (js_GetStreamInfo (&si, ns->js, ns->stream, NULL, &jerr), NATS_OK);
	si->Config->MaxMsgsPerSubject = 4;               /* as an earlier spmono made it */
	jsStreamInfo *old = NULL;
	assert_int_equal (js_UpdateStream (&old, ns->js, si->Config, NULL, &jerr), NATS_OK);
	jsStreamInfo_Destroy (old);
	jsStreamInfo_Destroy (si);
	sp_store_close (s);
	assert_ok (sp_store_open (loc, 2, &s, &err), &err);
	ns = (SpNatsStore *)s;
	uint64_t msgs;
	int64_t per_subject;
	stream_state (ns, &msgs, &per_subject);
	assert_true (per_subject <= 0);
	for (int i = 0; i < 6; i++)
		commit (s, sp_store_next_sequence (s), 100);     /* sp_store_commit retires after each */
	stream_state (ns, &msgs, &per_subject);
	assert_int_equal (msgs, 2 + 1);                   /* 2 snapshots of one chunk each, one catalog */
	sp_store_close (s);
}

/*
 * A catalog that does not match its chunks (a damaged or hostile store) is
 * refused with what is wrong, never read past: sizes that no commit writes,
 * a last chunk shorter than said, chunks that are not there.
 */
static void
test_catalog_chunks_disagree (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "disagree");
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (loc, 4, &s, &err), &err);
	uint64_t seq = sp_store_next_sequence (s);
	commit (s, seq, SP_NATS_CHUNK + 10);
	SpNatsStore *ns = (SpNatsStore *)s;
	SpNatsEntry *e = &ns->catalog [ns->ncatalog - 1], good = *e;
	uint8_t *data;
	size_t size;
	e->bytes = 3 * (uint64_t)SP_NATS_CHUNK;        /* three chunks' bytes in two */
	assert_int_equal (s->ops->read (s, seq, &data, &size, &err), -1);
	assert_contains (err.msg, "its catalog says");
	e->chunks = 0;
	assert_int_equal (s->ops->read (s, seq, &data, &size, &err), -1);
	assert_contains (err.msg, "its catalog says");
	*e = good;
	e->bytes += 10;                                 /* the last chunk holds 10 bytes, not 20 */
	assert_int_equal (s->ops->read (s, seq, &data, &size, &err), -1);
	assert_contains (err.msg, "chunk 1 holds 10 bytes");
	*e = good;
	e->writer ^= 1;                                 /* another writer's chunks: none */
	assert_int_equal (s->ops->read (s, seq, &data, &size, &err), -1);
	assert_contains (err.msg, "reading a chunk of a snapshot");
	*e = good;
	assert_holds (s, seq, SP_NATS_CHUNK + 10);
	sp_store_close (s);
}

/*
 * A catalog that is not one (another program's message on its subject, a
 * damaged store) is refused with a clear error: cut, wrong magic, a count
 * its size does not hold, a bad checksum, sequences out of order, a chunk
 * count its bytes do not need.  A store whose newest catalog is such does
 * not open.
 */
static void
test_hostile_catalogs (void **state)
{
	(void)state;
	SpNatsEntry good [2] = { { .sequence = 3, .writer = 7, .bytes = 10, .chunks = 1 },
				 { .sequence = 4, .writer = 7, .bytes = SP_NATS_CHUNK + 1, .chunks = 2 } };
	size_t size;
	uint8_t *bytes = sp_nats_catalog_encode (good, 2, &size);
	SpNatsEntry *e;
	size_t n;
	SpError err = { 0 };
	assert_ok (sp_nats_catalog_decode (bytes, size, &e, &n, &err), &err);
	assert_int_equal (n, 2);
	assert_true (e [1].sequence == 4 && e [1].chunks == 2);
	free (e);
	static const struct { size_t at; uint8_t flip; size_t keep; const char *says; } bad [] = {
		{ 0, 0, 6, "is not one" },                     /* cut in its count */
		{ 0, 0x01, 0, "is not one" },                  /* magic */
		{ 4, 0x10, 0, "names 18 snapshots" },          /* count */
		{ 12, 0x01, 0, "fails its checksum" },         /* an entry's byte */
		{ 0, 0, 63, "names 2 snapshots in 63 bytes" }, /* cut by one byte */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
		uint8_t *copy = malloc (size);
		memcpy (copy, bytes, size);
		copy [bad [i].at] ^= bad [i].flip;
		assert_int_equal (sp_nats_catalog_decode (copy, bad [i].keep ? bad [i].keep : size, &e, &n, &err), -1);
		assert_contains (err.msg, bad [i].says);
		free (copy);
	}
	free (bytes);
	SpNatsEntry disorder [2] = { good [1], good [0] };
	bytes = sp_nats_catalog_encode (disorder, 2, &size);
	assert_int_equal (sp_nats_catalog_decode (bytes, size, &e, &n, &err), -1);
	assert_contains (err.msg, "inconsistent at entry 1");
	free (bytes);
	SpNatsEntry chunks = good [1];
	chunks.chunks = 3;
	bytes = sp_nats_catalog_encode (&chunks, 1, &size);
	assert_int_equal (sp_nats_catalog_decode (bytes, size, &e, &n, &err), -1);
	assert_contains (err.msg, "inconsistent at entry 0");
	free (bytes);
	/* Published on a store's catalog subject: the store does not open, and says why. */
	char loc [600], url [600];
	store_named (loc, sizeof loc, "hostile");
	SpStore *s;
	assert_ok (sp_store_open (loc, 2, &s, &err), &err);
	commit (s, sp_store_next_sequence (s), 100);
	sp_store_close (s);
	first_server (url, sizeof url);
	natsConnection *nc = NULL;
	assert_int_equal (natsConnection_ConnectTo (&nc, url), NATS_OK);
	jsCtx *js = NULL;
	assert_int_equal (natsConnection_JetStream (&js, nc, NULL), NATS_OK);
	assert_int_equal (js_Publish (NULL, js, "sp.hostile.catalog", "not a catalog", 13, NULL, NULL), NATS_OK);
	jsCtx_Destroy (js);
	natsConnection_Destroy (nc);
	assert_int_equal (sp_store_open (loc, 2, &s, &err), -1);
	assert_contains (err.msg, "the store's catalog is not one");
}

/*
 * Which failures a request rides out within the store's wait: the engine or a node going away
 * (an I/O error on the connection included: a leader killed mid-publish gave EPIPE), never a
 * refusal; and none once the wait is over.
 */
static void
test_passing_faults (void **state)
{
	(void)state;
	SpNatsStore ns = { .wait_ns = 5000000000u };
	uint64_t now = sp_nats_now_ns ();
	const natsStatus passing [] = { NATS_TIMEOUT, NATS_NO_RESPONDERS, NATS_CONNECTION_DISCONNECTED, NATS_NO_SERVER,
					NATS_IO_ERROR, NATS_STALE_CONNECTION };
	for (size_t i = 0; i < sizeof passing / sizeof passing [0]; i++) {
		assert_true (sp_nats_again (&ns, passing [i], 0, 0, now));
		assert_false (sp_nats_again (&ns, passing [i], 0, 0, now - 6000000000u));   /* the wait is over */
	}
	assert_true (sp_nats_again (&ns, NATS_ERR, JSClusterNotAvailErr, 0, now));
	assert_false (sp_nats_again (&ns, NATS_ERR, JSStreamWrongLastSequenceErr, 0, now));   /* the fence */
	assert_false (sp_nats_again (&ns, NATS_INVALID_ARG, 0, 0, now));
	assert_false (sp_nats_again (&ns, NATS_CONNECTION_CLOSED, 0, 0, now));
}

/* replicas=N reaches the engine: the store's stream is made with N replicas. */
static void
test_replicas_parameter (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "single?replicas=1&wait=20");
	SpStore *s;
	SpError err = { 0 };
	assert_ok (sp_store_open (loc, 1, &s, &err), &err);
	commit (s, sp_store_next_sequence (s), 1000);
	sp_store_close (s);
	char url [600];
	first_server (url, sizeof url);
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	jsStreamInfo *si = NULL;
	assert_int_equal (natsConnection_ConnectTo (&nc, url), NATS_OK);
	assert_int_equal (natsConnection_JetStream (&js, nc, NULL), NATS_OK);
	assert_int_equal (js_GetStreamInfo (&si, js, "SP_single", NULL, NULL), NATS_OK);
	assert_int_equal (si->Config->Replicas, 1);
	jsStreamInfo_Destroy (si);
	jsCtx_Destroy (js);
	natsConnection_Destroy (nc);
}

/* More replicas than the cluster has nodes: refused after the wait, saying so and what to do. */
static void
test_more_replicas_than_nodes (void **state)
{
	(void)state;
	char loc [600];
	store_named (loc, sizeof loc, "toowide?replicas=5&wait=1");
	SpStore *s;
	SpError err = { 0 };
	assert_int_equal (sp_store_open (loc, 1, &s, &err), -1);
	assert_contains (err.msg, "the engine has not 5 nodes with JetStream up");
	assert_contains (err.msg, "?replicas=N");
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_commits_read_back),
		cmocka_unit_test (test_chunk_boundaries),
		cmocka_unit_test (test_stale_primary_is_fenced),
		cmocka_unit_test (test_first_commits_race),
		cmocka_unit_test (test_bad_locations),
		cmocka_unit_test (test_replicas_parameter),
		cmocka_unit_test (test_more_replicas_than_nodes),
		cmocka_unit_test (test_passing_faults),
		cmocka_unit_test (test_catalog_answer_lost),
		cmocka_unit_test (test_engine_lost_commits),
		cmocka_unit_test (test_no_limit_per_subject),
		cmocka_unit_test (test_catalog_chunks_disagree),
		cmocka_unit_test (test_hostile_catalogs),
		/* Last: after a node restarts, the cluster may take seconds more to answer every request. */
		cmocka_unit_test (test_commit_with_a_node_down),
	};
	return cmocka_run_group_tests (tests, cluster_up, cluster_down);
}
