/*
 * sp-store-nats.c: the replicated store, on a NATS JetStream stream
 * ("nats://HOST:PORT[,HOST:PORT...]/NAME[?replicas=N&wait=SECONDS]";
 * docs/REPLICATION.md says why JetStream, and what the others would have
 * cost).
 *
 * One stream per store, SP_<NAME>, subjects sp.<NAME>.>, replicated on
 * `replicas` nodes (3 by default: written to a majority, RAFT), in files.
 * Two kinds of message:
 *
 *   sp.<NAME>.c.<WRITER>.<SEQ>.<PART>   a chunk of snapshot SEQ (exactly
 *                                       SP_NATS_CHUNK bytes but the last,
 *                                       which holds the rest), published by
 *                                       the process WRITER (a random 64-bit
 *                                       id drawn at open), so that two
 *                                       processes never publish to one subject;
 *   sp.<NAME>.catalog                   the catalog: every snapshot the store
 *                                       holds (its sequence, writer, chunks,
 *                                       bytes), oldest first;
 *   sp.<NAME>.sync                      empty: published before the catalog
 *                                       is read, so that a leader just elected
 *                                       has applied its log (sp_nats_sync).
 *
 * No limit of messages per subject (sp_nats_unlimited says why): retire
 * deletes, by sequence, the catalogs a newer one replaced; a sync is
 * deleted once acknowledged.
 *
 * A commit publishes the snapshot's chunks (asynchronously, a few in
 * flight), waits until each is acknowledged, then publishes a new catalog
 * naming it: the catalog's publication is the one atomic step (a snapshot
 * is in the store once a catalog names it, whole, or not at all).  An
 * acknowledgement means the stream's leader has the message on a majority
 * of the nodes, so a committed snapshot survives the loss of a minority.
 * A read fetches a snapshot's chunks on a few threads at once.
 *
 * Fencing: the catalog is published with Nats-Expected-Last-Subject-Sequence
 * set to the stream sequence of the catalog this process last read or
 * published.  If another process committed since (a standby that took
 * over), the stream refuses, and this process learns it is no longer the
 * primary: its commit fails, saying so, and it never overwrites the newer
 * state.  A refusal is checked against the catalog read again: a leader
 * just elected may refuse for a fence it has not caught up with, and an
 * earlier try may have landed.  Chunks without a catalog naming them are garbage (a commit that
 * failed, or a fenced one): retire purges them.
 */
#include "sp-store.h"

#if SPMONO_HAVE_NATS

#include "sp-crc32c.h"
#include "sp-thread.h"

#include <nats/nats.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A chunk's bytes: well under the server's 1 MiB max_payload. */
#define SP_NATS_CHUNK (512u << 10)
/*
 * A try's time limit (ms).  A request that reached a leader which then died
 * gets no answer: it is tried again, de-duplicated, once this is over.  5 s
 * made a standby that took over while the stream's leader died wait two
 * such limits (10.3 s to serve, 3 of 3 runs); 1 s, 4.8-8.6 s, which is the
 * engine's own election.  A chunk's publication takes 2-10 ms on loopback.
 */
#define SP_NATS_TRY_MS 1000
/*
 * Chunks published and not answered yet, at most (4 MiB): a snapshot's
 * chunks go out back to back instead of one round trip each, and the
 * writer's slices do not wait for the network.  The commit waits for their
 * answers before it publishes the catalog.
 */
#define SP_NATS_INFLIGHT 8
/* A connection's: to a server whose host does not answer at all. */
#define SP_NATS_CONNECT_MS 2000
#define SP_NATS_CATALOG_MAGIC 0x4c43504eu   /* "NPCL" */
#define SP_NATS_MAX_SNAPSHOTS 65536
/*
 * Tries of a request that met a passing fault: a node restarting, or a
 * leader being elected (the stream has none for a second or two: "no
 * responders"), stalls JetStream's API; the client reconnects to another
 * node by itself.  Waits between tries double from 50 ms up to 1 s, and no
 * try starts `wait` seconds after the first (30 by default: a stream's
 * leader killed, its successor was elected in 5-8 s here, and a standby
 * that opened the store while its leader and the metadata leader were both
 * being replaced got no answer for more than 10 s); a try's own time limit
 * is SP_NATS_TRY_MS.  Opening the store rides out the same faults, an engine not
 * reachable yet included.  Publications
 * carry a message id, so a retry of one that did land is dropped by the
 * stream's de-duplication (and acknowledged as the original), never applied
 * twice.
 */
#define SP_NATS_RETRY_US 50000
#define SP_NATS_RETRY_MAX_US 1000000
#define SP_NATS_WAIT_DEFAULT_S 30
#define SP_NATS_WAIT_MAX_S 3600
#define SP_NATS_REPLICAS_MAX 5     /* JetStream's own limit */

/* What a location says after "nats://". */
typedef struct SpNatsLocation {
	char **servers;              /* nats://HOST:PORT each */
	int nservers;
	char *name;
	int replicas;
	int wait_s;
} SpNatsLocation;

typedef struct SpNatsEntry {
	uint64_t sequence;
	uint64_t writer;
	uint64_t bytes;
	uint32_t chunks;
} SpNatsEntry;

typedef struct SpNatsStore {
	SpStore base;
	natsConnection *nc;
	jsCtx *js;
	char *name;                  /* NAME */
	char stream [128];           /* SP_<NAME> */
	uint64_t writer;             /* this process's id in chunk subjects */
	uint64_t wait_ns;            /* how long requests ride out passing faults */
	SpNatsEntry *catalog;        /* the newest catalog read or published, oldest first */
	size_t ncatalog;
	uint64_t fence;              /* its stream sequence (0: none yet) */
	bool unsure;                 /* a catalog's publication failed without an answer: it may have landed */
	SpNatsEntry *garbage;        /* snapshots no catalog names any more, chunks to purge */
	size_t ngarbage;
	uint64_t *old_catalogs;      /* stream sequences of catalogs a newer one replaced, to delete */
	size_t nold_catalogs;
	/* The snapshot being written */
	uint8_t *pending;            /* bytes not published yet (less than a chunk) */
	size_t npending;
	uint32_t parts;              /* chunks published */
	/* Chunks whose asynchronous publication failed, kept by the library's thread; published again at finish */
	pthread_mutex_t lock;
	natsMsg **unanswered;
	size_t nunanswered, unanswered_cap;
	bool lost;                   /* one could not be kept (out of memory): the commit fails */
} SpNatsStore;

static int
sp_nats_fail (SpError *err, const char *what, natsStatus st, jsErrCode jerr)
{
	const char *last = nats_GetLastError (NULL);
	return sp_error_set (err, "%s: %s%s%s (JetStream error %d)", what, natsStatus_GetText (st),
			     last && *last ? ": " : "", last && *last ? last : "", (int)jerr);
}

static void
sp_nats_subject_chunk (char *out, size_t size, const SpNatsStore *ns, uint64_t writer, uint64_t seq, uint32_t part)
{
	snprintf (out, size, "sp.%s.c.%016" PRIx64 ".%" PRIu64 ".%u", ns->name, writer, seq, part);
}

static void
sp_nats_subject_catalog (char *out, size_t size, const SpNatsStore *ns)
{
	snprintf (out, size, "sp.%s.catalog", ns->name);
}

static uint64_t
sp_nats_now_ns (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Should a request that ended so be tried again (try t, from 0; the first began at t0), after a wait? */
static bool
sp_nats_again (const SpNatsStore *ns, natsStatus st, jsErrCode jerr, int t, uint64_t t0)
{
	/* A write on a connection whose node just went away fails with an I/O error (EPIPE) before the
	 * client notices and reconnects to another: passing too (a leader killed during a commit, in CI). */
	bool passing = st == NATS_TIMEOUT || st == NATS_NO_RESPONDERS || st == NATS_CONNECTION_DISCONNECTED
		|| st == NATS_NO_SERVER || st == NATS_IO_ERROR || st == NATS_STALE_CONNECTION
		|| jerr == JSClusterNotAvailErr;   /* "temporarily unavailable" */
	if (!passing || sp_nats_now_ns () - t0 > ns->wait_ns)
		return false;
	uint64_t wait = (uint64_t)SP_NATS_RETRY_US << (t < 10 ? t : 10);
	usleep ((useconds_t)(wait < SP_NATS_RETRY_MAX_US ? wait : SP_NATS_RETRY_MAX_US));
	return true;
}

static natsStatus
sp_nats_get_last (natsMsg **msg, SpNatsStore *ns, const char *subject, jsErrCode *jerr)
{
	natsStatus st;
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0; (st = js_GetLastMsg (msg, ns->js, ns->stream, subject, NULL, jerr)) != NATS_OK && sp_nats_again (ns, st, *jerr, t, t0); t++)
		;
	return st;
}

/* Publish msg (its Nats-Msg-Id set: retries are de-duplicated), acknowledged by a majority. */
static natsStatus
sp_nats_publish (jsPubAck **ack, SpNatsStore *ns, natsMsg *msg, jsErrCode *jerr)
{
	natsStatus st;
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0; (st = js_PublishMsg (ack, ns->js, msg, NULL, jerr)) != NATS_OK && sp_nats_again (ns, st, *jerr, t, t0); t++)
		;
	return st;
}

/* A message on subject with data, and the id the stream de-duplicates its retries by. */
static natsStatus
sp_nats_message (natsMsg **msg, const char *subject, const void *data, size_t size, const char *id)
{
	natsStatus st = natsMsg_Create (msg, subject, NULL, (const char *)data, (int)size);
	if (st == NATS_OK)
		st = natsMsgHeader_Set (*msg, "Nats-Msg-Id", id);
	return st;
}

/* Another process committed since this one last did: this one is no longer the primary, for good. */
static int
sp_nats_fenced (SpNatsStore *ns, SpError *err)
{
	ns->base.fenced = true;
	return sp_error_set (err, "another process committed to store %s since this one last did: this process is no "
			     "longer the primary, and its snapshot is not committed (the newer state is kept)", ns->base.location);
}

/* ---- the catalog ----------------------------------------------------------------- */

/*
 * Its bytes, little-endian: magic u32, count u32, then per snapshot sequence
 * u64, writer u64, bytes u64, chunks u32; then the CRC-32C of all before.
 */
static uint8_t *
sp_nats_catalog_encode (const SpNatsEntry *e, size_t n, size_t *size)
{
	*size = 8 + n * 28 + 4;
	uint8_t *out = malloc (*size), *p = out;
	if (!out)
		return NULL;
	sp_put_le (p, SP_NATS_CATALOG_MAGIC, 4), p += 4;
	sp_put_le (p, n, 4), p += 4;
	for (size_t i = 0; i < n; i++) {
		sp_put_le (p, e [i].sequence, 8), p += 8;
		sp_put_le (p, e [i].writer, 8), p += 8;
		sp_put_le (p, e [i].bytes, 8), p += 8;
		sp_put_le (p, e [i].chunks, 4), p += 4;
	}
	sp_put_le (p, sp_crc32c (0, out, (size_t)(p - out)), 4);
	return out;
}

static int
sp_nats_catalog_decode (const uint8_t *data, size_t size, SpNatsEntry **out, size_t *n, SpError *err)
{
	*out = NULL;
	*n = 0;
	if (size < 12 || sp_get_le (data, 4) != SP_NATS_CATALOG_MAGIC)
		return sp_error_set (err, "the store's catalog is not one (%zu bytes)", size);
	uint64_t count = sp_get_le (data + 4, 4);
	if (count > SP_NATS_MAX_SNAPSHOTS || size != 8 + count * 28 + 4)
		return sp_error_set (err, "the store's catalog names %" PRIu64 " snapshots in %zu bytes", count, size);
	if (sp_get_le (data + size - 4, 4) != sp_crc32c (0, data, size - 4))
		return sp_error_set (err, "the store's catalog fails its checksum");
	SpNatsEntry *e = calloc (count ? count : 1, sizeof *e);
	if (!e)
		return sp_error_set (err, "out of memory");
	const uint8_t *p = data + 8;
	for (uint64_t i = 0; i < count; i++, p += 28) {
		e [i] = (SpNatsEntry){ .sequence = sp_get_le (p, 8), .writer = sp_get_le (p + 8, 8), .bytes = sp_get_le (p + 16, 8),
				       .chunks = (uint32_t)sp_get_le (p + 24, 4) };
		if ((i && e [i].sequence <= e [i - 1].sequence) || e [i].chunks != (e [i].bytes + SP_NATS_CHUNK - 1) / SP_NATS_CHUNK) {
			free (e);
			return sp_error_set (err, "the store's catalog is inconsistent at entry %" PRIu64, i);
		}
	}
	*out = e;
	*n = (size_t)count;
	return 0;
}

/* Delete message `sequence` of the stream (one already gone is no error). */
static int
sp_nats_delete (SpNatsStore *ns, uint64_t sequence, SpError *err)
{
	jsErrCode jerr = 0;
	natsStatus st = js_DeleteMsg (ns->js, ns->stream, sequence, NULL, &jerr);
	if (st == NATS_OK || st == NATS_NOT_FOUND || jerr == JSSequenceNotFoundErr || jerr == JSNoMessageFoundErr)
		return 0;
	return sp_nats_fail (err, "removing a replaced catalog", st, jerr);
}

/* Message `sequence`, a catalog a newer one replaced, is deleted by retire (dropped when out of memory: a few bytes left). */
static void
sp_nats_replaced (SpNatsStore *ns, uint64_t sequence)
{
	uint64_t *grown = sequence ? realloc (ns->old_catalogs, (ns->nold_catalogs + 1) * sizeof *grown) : NULL;
	if (grown) {
		grown [ns->nold_catalogs++] = sequence;
		ns->old_catalogs = grown;
	}
}

/*
 * A leader just elected may answer before it has applied the entries in its
 * log (nats-server before 2.11, Debian 12's 2.9.10 included; fixed by
 * nats-server PR 6485): it then reads, and checks a publication's fence,
 * against a stream older than what a majority acknowledged.  In CI a new
 * leader said the store held no catalog, and refused a commit as fenced.
 * A publication is acknowledged once applied, after every entry before it:
 * so a read after an acknowledged publication to sp.<NAME>.sync sees every
 * entry acknowledged before.  (The subject keeps MaxMsgsPerSubject messages;
 * read-only opens do not publish.)
 */
static int
sp_nats_sync (SpNatsStore *ns, SpError *err)
{
	char subject [256];
	snprintf (subject, sizeof subject, "sp.%s.sync", ns->name);
	natsMsg *msg = NULL;
	jsPubAck *ack = NULL;
	jsErrCode jerr = 0;
	natsStatus st = natsMsg_Create (&msg, subject, NULL, NULL, 0);
	if (st == NATS_OK)
		st = sp_nats_publish (&ack, ns, msg, &jerr);
	natsMsg_Destroy (msg);
	if (st == NATS_OK) {
		SpError ignored;                     /* it served its purpose: a sync left over costs a few bytes */
		sp_nats_delete (ns, ack->Sequence, &ignored);
	}
	jsPubAck_Destroy (ack);
	return st == NATS_OK ? 0 : sp_nats_fail (err, "bringing the store's leader up to date", st, jerr);
}

/* The store's newest catalog as its leader has it, and its stream sequence (none yet: no entries, sequence 0). */
static int
sp_nats_catalog_get (SpNatsStore *ns, SpNatsEntry **entries, size_t *n, uint64_t *sequence, SpError *err)
{
	char subject [256];
	sp_nats_subject_catalog (subject, sizeof subject, ns);
	natsMsg *msg = NULL;
	jsErrCode jerr = 0;
	natsStatus st = sp_nats_get_last (&msg, ns, subject, &jerr);
	*entries = NULL;
	*n = 0;
	*sequence = 0;
	if (st == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
		return 0;
	if (st != NATS_OK)
		return sp_nats_fail (err, "reading the store's catalog", st, jerr);
	int rc = sp_nats_catalog_decode ((const uint8_t *)natsMsg_GetData (msg), (size_t)natsMsg_GetDataLength (msg),
					 entries, n, err);
	if (rc == 0)
		*sequence = natsMsg_GetSequence (msg);
	natsMsg_Destroy (msg);
	return rc;
}

/*
 * Tries of a read after a sync that shows an older catalog than one this
 * process saw acknowledged: the leader may have changed between the sync
 * and the read.  Past them, the engine lost acknowledged messages.
 */
#define SP_NATS_LOST_TRIES 4

/* A catalog as the store holds it: its entries, oldest first, and its stream sequence. */
typedef struct SpNatsCatalog {
	SpNatsEntry *entries;
	size_t n;
	uint64_t fence;
} SpNatsCatalog;

/*
 * The store's newest catalog, read after a sync (sp_nats_sync).  Its stream
 * sequence is at least `known` (a catalog this process saw acknowledged),
 * unless the engine lost acknowledged messages: then *lost is set, and the
 * catalog is what the store holds now.  nats-server before 2.10.11 does
 * (nats-io/nats-server#5054: a node restarted and caught up from a
 * snapshot drops messages it had, and may then lead): seen in CI, 1 in
 * about 15 runs of three leader kills, where the new leader held no
 * catalog at all.
 */
static int
sp_nats_catalog_read (SpNatsStore *ns, uint64_t known, SpNatsCatalog *c, bool *lost, SpError *err)
{
	uint64_t t0 = sp_nats_now_ns ();
	*c = (SpNatsCatalog){ 0 };
	*lost = false;
	for (int t = 0;; t++) {
		if ((!ns->base.readonly && sp_nats_sync (ns, err) < 0) || sp_nats_catalog_get (ns, &c->entries, &c->n, &c->fence, err) < 0)
			return -1;
		if (c->fence >= known)
			return 0;
		if (t + 1 == SP_NATS_LOST_TRIES || !sp_nats_again (ns, NATS_TIMEOUT, 0, t, t0)) {
			*lost = true;
			return 0;
		}
		free (c->entries);
		c->entries = NULL;
	}
}

/* Catalog c is the store's state from now on: the one this process goes on from. */
static void
sp_nats_adopt (SpNatsStore *ns, SpNatsCatalog *c)
{
	free (ns->catalog);
	ns->catalog = c->entries;
	ns->ncatalog = c->n;
	ns->fence = c->fence;
	if (c->n && c->entries [c->n - 1].sequence > ns->base.last_sequence)
		ns->base.last_sequence = c->entries [c->n - 1].sequence;
	c->entries = NULL;
}

static int
sp_nats_catalog_load (SpNatsStore *ns, SpError *err)
{
	SpNatsCatalog c;
	bool lost;
	if (sp_nats_catalog_read (ns, 0, &c, &lost, err) < 0)
		return -1;
	sp_nats_adopt (ns, &c);
	return 0;
}

/*
 * The engine lost catalogs this process committed (sp_nats_catalog_read):
 * the store holds catalog c, older.  Nothing newer than it is anyone's, so
 * this process goes on from it; the snapshot in hand, maybe a delta on a
 * snapshot lost, is not committed, and the core makes the next one full
 * (a failed snapshot's changes are gone: sp_delta_failed), which puts this
 * process's whole state in the store again.
 */
static int
sp_nats_lost (SpNatsStore *ns, SpNatsCatalog *c, SpError *err)
{
	uint64_t had = ns->fence;
	sp_nats_adopt (ns, c);
	ns->unsure = false;
	return sp_error_set (err, "store %s lost snapshots this process committed: its newest catalog (stream sequence %" PRIu64
			     ") is older than the one acknowledged (%" PRIu64 "), so the engine lost acknowledged messages "
			     "(nats-server before 2.10.11 can, after a node restarts: nats-io/nats-server#5054); this snapshot "
			     "is not committed, and the next one commits this process's whole state again",
			     ns->base.location, ns->fence, had);
}

/* What a catalog's publication refused for its fence means. */
typedef enum { SP_NATS_LANDED, SP_NATS_AGAIN, SP_NATS_FENCED, SP_NATS_FAILED } SpNatsRefusal;

/*
 * The store's newest catalog read again, after a publication of one naming
 * snapshot `sequence` was refused for its fence.  This process's naming it:
 * an earlier try that got no answer landed (the stream checks the fence
 * before it de-duplicates), and the commit is done.  The one this process
 * last saw: the leader that refused was behind (sp_nats_sync), try again.
 * Another process's, newer: that one took over.  Older: sp_nats_lost.
 */
static SpNatsRefusal
sp_nats_refused (SpNatsStore *ns, uint64_t sequence, SpError *err)
{
	SpNatsCatalog c;
	bool lost;
	if (sp_nats_catalog_read (ns, ns->fence, &c, &lost, err) < 0)
		return SP_NATS_FAILED;
	if (lost) {
		sp_nats_lost (ns, &c, err);
		return SP_NATS_FAILED;
	}
	bool ours = c.n && c.entries [c.n - 1].writer == ns->writer;
	SpNatsRefusal r = ours && c.entries [c.n - 1].sequence == sequence ? SP_NATS_LANDED
		: c.fence > ns->fence && !ours ? SP_NATS_FENCED : SP_NATS_AGAIN;
	if (r != SP_NATS_FENCED)
		ns->fence = c.fence;     /* also one of this process's catalogs thought lost that landed since */
	free (c.entries);
	return r;
}

/*
 * Publish catalog message msg (naming snapshot `sequence` last) with the
 * fence; refused by a leader that was behind, again with the fence, for the
 * store's wait at most.
 */
static int
sp_nats_catalog_send (SpNatsStore *ns, natsMsg *msg, uint64_t sequence, SpError *err)
{
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0;; t++) {
		char fence [32];
		snprintf (fence, sizeof fence, "%" PRIu64, ns->fence);
		jsPubAck *ack = NULL;
		jsErrCode jerr = 0;
		natsStatus st = natsMsgHeader_Set (msg, "Nats-Expected-Last-Subject-Sequence", fence);
		if (st == NATS_OK)
			st = sp_nats_publish (&ack, ns, msg, &jerr);
		if (st == NATS_OK) {
			sp_nats_replaced (ns, ns->fence);
			ns->fence = ack->Sequence;
			jsPubAck_Destroy (ack);
			return 0;
		}
		if (jerr != JSStreamWrongLastSequenceErr) {
			ns->unsure = true;
			return sp_nats_fail (err, "committing the store's catalog", st, jerr);
		}
		switch (sp_nats_refused (ns, sequence, err)) {
		case SP_NATS_LANDED:
			return 0;
		case SP_NATS_FENCED:
			return sp_nats_fenced (ns, err);
		case SP_NATS_FAILED:
			return -1;
		case SP_NATS_AGAIN:
			if (sp_nats_again (ns, NATS_TIMEOUT, 0, t, t0))
				break;
			ns->unsure = true;
			return sp_error_set (err, "committing the store's catalog: refused for a fence no other process moved, "
					     "for %d s", (int)(ns->wait_ns / 1000000000u));
		}
	}
}

/*
 * Publish catalog e[0..n) if the store's newest catalog is still the one
 * this process last saw (the fence); it is then the newest.
 */
static int
sp_nats_catalog_publish (SpNatsStore *ns, const SpNatsEntry *e, size_t n, SpError *err)
{
	size_t size;
	uint8_t *bytes = sp_nats_catalog_encode (e, n, &size);
	if (!bytes)
		return sp_error_set (err, "out of memory");
	char subject [256], id [64];
	sp_nats_subject_catalog (subject, sizeof subject, ns);
	snprintf (id, sizeof id, "%016" PRIx64 "-catalog-%" PRIu64, ns->writer, e [n - 1].sequence);
	natsMsg *msg = NULL;
	natsStatus st = sp_nats_message (&msg, subject, bytes, size, id);
	int rc = st == NATS_OK ? sp_nats_catalog_send (ns, msg, e [n - 1].sequence, err)
		: sp_nats_fail (err, "committing the store's catalog", st, 0);
	natsMsg_Destroy (msg);
	free (bytes);
	return rc;
}

static const SpNatsEntry *
sp_nats_find (const SpNatsStore *ns, uint64_t sequence)
{
	for (size_t i = 0; i < ns->ncatalog; i++)
		if (ns->catalog [i].sequence == sequence)
			return &ns->catalog [i];
	return NULL;
}

/* ---- reading ---------------------------------------------------------------------- */

static int
sp_nats_sequences (SpStore *s, uint64_t **seqs, size_t *n, SpError *err)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	*seqs = malloc ((ns->ncatalog ? ns->ncatalog : 1) * sizeof **seqs);
	if (!*seqs)
		return sp_error_set (err, "out of memory");
	for (size_t i = 0; i < ns->ncatalog; i++)
		(*seqs) [i] = ns->catalog [ns->ncatalog - 1 - i].sequence;     /* newest first */
	*n = ns->ncatalog;
	return 0;
}

/*
 * Reading a snapshot: its chunks fetched by SP_NATS_READERS threads at once
 * (one request each; a standby at 1,000,000 objects read its 45 chunks one
 * after the other in 0.3 s more than from a file).  Every chunk but the
 * last holds SP_NATS_CHUNK bytes (a commit publishes a chunk once it is
 * full), so each lands at its own offset.
 */
#define SP_NATS_READERS 4

typedef struct SpNatsReading {
	SpNatsStore *ns;
	const SpNatsEntry *e;
	uint8_t *out;
	uint32_t next_part;          /* the next chunk to fetch (atomic) */
	pthread_mutex_t lock;
	bool failed;                 /* the first failure is in err */
	SpError err;
} SpNatsReading;

/* Chunk `part` into its place; its length checked against the catalog. */
static int
sp_nats_read_chunk (SpNatsReading *r, uint32_t part, SpError *err)
{
	char subject [256];
	sp_nats_subject_chunk (subject, sizeof subject, r->ns, r->e->writer, r->e->sequence, part);
	natsMsg *msg = NULL;
	jsErrCode jerr = 0;
	natsStatus st = sp_nats_get_last (&msg, r->ns, subject, &jerr);
	if (st != NATS_OK)
		return sp_nats_fail (err, "reading a chunk of a snapshot", st, jerr);
	uint64_t at = (uint64_t)part * SP_NATS_CHUNK, len = (uint64_t)natsMsg_GetDataLength (msg);
	bool last = part + 1 == r->e->chunks;
	int rc = 0;
	if (at > r->e->bytes || len != (last ? r->e->bytes - at : SP_NATS_CHUNK))
		rc = sp_error_set (err, "snapshot %" PRIu64 ": chunk %u holds %" PRIu64 " bytes, not what its catalog says "
				   "(%" PRIu64 " bytes in %u chunks)", r->e->sequence, part, len, r->e->bytes, r->e->chunks);
	else
		memcpy (r->out + at, natsMsg_GetData (msg), len);
	natsMsg_Destroy (msg);
	return rc;
}

static void *
sp_nats_reader (void *arg)
{
	SpNatsReading *r = arg;
	for (;;) {
		uint32_t part = __atomic_fetch_add (&r->next_part, 1, __ATOMIC_RELAXED);
		if (part >= r->e->chunks || __atomic_load_n (&r->failed, __ATOMIC_RELAXED))
			return NULL;
		SpError err = { 0 };
		if (sp_nats_read_chunk (r, part, &err) < 0) {
			pthread_mutex_lock (&r->lock);
			if (!r->failed)
				r->err = err;
			__atomic_store_n (&r->failed, true, __ATOMIC_RELAXED);
			pthread_mutex_unlock (&r->lock);
		}
	}
}

static int
sp_nats_read (SpStore *s, uint64_t sequence, uint8_t **data, size_t *size, SpError *err)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	*data = NULL;
	*size = 0;
	const SpNatsEntry *e = sp_nats_find (ns, sequence);
	if (!e)
		return sp_error_set (err, "snapshot %" PRIu64 " is not in store %s", sequence, s->location);
	if (e->chunks == 0 || (uint64_t)(e->chunks - 1) * SP_NATS_CHUNK > e->bytes || e->bytes - (uint64_t)(e->chunks - 1) * SP_NATS_CHUNK > SP_NATS_CHUNK)
		return sp_error_set (err, "snapshot %" PRIu64 ": its catalog says %" PRIu64 " bytes in %u chunks of at most %u",
				     sequence, e->bytes, e->chunks, SP_NATS_CHUNK);
	SpNatsReading r = { .ns = ns, .e = e, .out = malloc (e->bytes ? e->bytes : 1) };
	if (!r.out)
		return sp_error_set (err, "snapshot %" PRIu64 ": out of memory for %" PRIu64 " bytes", sequence, e->bytes);
	pthread_mutex_init (&r.lock, NULL);
	pthread_t readers [SP_NATS_READERS];
	int started = 0;
	while (started < SP_NATS_READERS && (uint32_t)started < e->chunks - 1 &&
	       pthread_create (&readers [started], NULL, sp_nats_reader, &r) == 0)
		started++;
	sp_nats_reader (&r);                 /* this thread reads too (alone, for one chunk or without threads) */
	for (int i = 0; i < started; i++)
		pthread_join (readers [i], NULL);
	pthread_mutex_destroy (&r.lock);
	if (r.failed) {
		free (r.out);
		*err = r.err;
		return -1;
	}
	*data = r.out;
	*size = e->bytes;
	return 0;
}

static void
sp_nats_release (SpStore *s, uint8_t *data, size_t size)
{
	(void)s;
	(void)size;
	free (data);
}

static int
sp_nats_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	SpSnapInfo *out = calloc (ns->ncatalog ? ns->ncatalog : 1, sizeof *out);
	if (!out)
		return sp_error_set (err, "out of memory");
	for (size_t k = 0; k < ns->ncatalog; k++) {
		const SpNatsEntry *e = &ns->catalog [ns->ncatalog - 1 - k];
		SpSnapInfo *info = &out [k];
		info->sequence = e->sequence;
		info->size = e->bytes;
		snprintf (info->path, sizeof info->path, "%s, stream %s, writer %016" PRIx64 ", %u chunks", s->location, ns->stream,
			  e->writer, e->chunks);
		uint8_t *data;
		size_t size;
		SpError why = { 0 };
		SpSnapHeader h;
		if (sp_nats_read (s, e->sequence, &data, &size, &why) == 0 && sp_snapshot_check (data, size, &h, NULL, &why) == 0) {
			info->valid = true;
			info->time_ns = h.time_ns;
		} else {
			snprintf (info->why, sizeof info->why, "%s", why.msg);
		}
		free (data);
	}
	*infos = out;
	*n = ns->ncatalog;
	return 0;
}

/* ---- writing ---------------------------------------------------------------------- */

static int
sp_nats_begin (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err)
{
	(void)sequence;
	(void)size_hint;
	SpNatsStore *ns = (SpNatsStore *)s;
	ns->npending = 0;
	ns->parts = 0;
	if (!ns->pending && !(ns->pending = malloc (SP_NATS_CHUNK)))
		return sp_error_set (err, "out of memory");
	return 0;
}

/* Publish the pending bytes as the next chunk (acknowledged by a majority). */
/*
 * Publish the chunk in hand: asynchronously, or, when it is a snapshot's
 * only one (a delta's, most often), with its answer awaited here (an
 * asynchronous one and the wait for it took 2.0 ms against 1.1-1.3 ms, R3).
 */
static int
sp_nats_publish_chunk (SpNatsStore *ns, bool only, SpError *err)
{
	char subject [256];
	sp_nats_subject_chunk (subject, sizeof subject, ns, ns->writer, ns->base.writing, ns->parts);
	jsPubAck *ack = NULL;
	jsErrCode jerr = 0;
	natsMsg *msg = NULL;
	natsStatus st = sp_nats_message (&msg, subject, ns->pending, ns->npending, subject);    /* a chunk's subject is unique */
	jsPubOptions po;
	jsPubOptions_Init (&po);
	po.MaxWait = SP_NATS_TRY_MS;
	/* The library takes the message (and clears msg); when it has SP_NATS_INFLIGHT unanswered for long, this one waits for its answer. */
	if (st == NATS_OK && (only || js_PublishMsgAsync (ns->js, &msg, &po) != NATS_OK)) {
		st = sp_nats_publish (&ack, ns, msg, &jerr);
		jsPubAck_Destroy (ack);
	}
	natsMsg_Destroy (msg);
	if (st != NATS_OK)
		return sp_nats_fail (err, "publishing a chunk of a snapshot", st, jerr);
	ns->parts++;
	ns->npending = 0;
	return 0;
}

static int
sp_nats_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	while (size) {
		size_t n = SP_NATS_CHUNK - ns->npending < size ? SP_NATS_CHUNK - ns->npending : size;
		memcpy (ns->pending + ns->npending, data, n);
		ns->npending += n;
		data += n;
		size -= n;
		if (ns->npending == SP_NATS_CHUNK && sp_nats_publish_chunk (ns, false, err) < 0)
			return -1;
	}
	return 0;
}

/* The catalog after committing `e`: the snapshots the store keeps (sp_store_retirable), then it. */
static SpNatsEntry *
sp_nats_next_catalog (SpNatsStore *ns, const SpNatsEntry *e, size_t *n, size_t *dropped)
{
	SpNatsEntry *next = malloc ((ns->ncatalog + 1) * sizeof *next);
	if (!next)
		return NULL;
	size_t first = 0;
	while (first < ns->ncatalog && sp_store_retirable (&ns->base, ns->catalog [first].sequence, ns->ncatalog + 1 - first))
		first++;
	if (ns->ncatalog > first)
		memcpy (next, ns->catalog + first, (ns->ncatalog - first) * sizeof *next);
	next [ns->ncatalog - first] = *e;
	*n = ns->ncatalog - first + 1;
	*dropped = first;
	return next;
}

/*
 * A catalog this process published may have landed though no answer came
 * (the engine went down meanwhile): read the newest one again.  Ours (its
 * newest snapshot written by this process): it is the one to go on from.
 * Another process's, newer than the one this process last saw: that one
 * took over, and this one is fenced.  Older: sp_nats_lost.
 */
static int
sp_nats_settle (SpNatsStore *ns, SpError *err)
{
	SpNatsCatalog c;
	bool lost;
	if (sp_nats_catalog_read (ns, ns->fence, &c, &lost, err) < 0)
		return -1;
	if (lost)
		return sp_nats_lost (ns, &c, err);
	bool moved = c.fence != ns->fence, ours = c.n && c.entries [c.n - 1].writer == ns->writer;
	if (moved && ours)
		sp_nats_replaced (ns, ns->fence);
	sp_nats_adopt (ns, &c);
	ns->unsure = false;
	return moved && !ours ? sp_nats_fenced (ns, err) : 0;
}

/* The library's thread: a chunk's publication failed or got no answer in time; kept to publish again. */
static void
sp_nats_chunk_unanswered (jsCtx *js, jsPubAckErr *pae, void *closure)
{
	(void)js;
	SpNatsStore *ns = closure;
	pthread_mutex_lock (&ns->lock);
	if (ns->nunanswered == ns->unanswered_cap) {
		size_t cap = ns->unanswered_cap ? 2 * ns->unanswered_cap : 16;
		natsMsg **grown = realloc (ns->unanswered, cap * sizeof *grown);
		if (grown) {
			ns->unanswered = grown;
			ns->unanswered_cap = cap;
		}
	}
	if (ns->nunanswered < ns->unanswered_cap) {
		ns->unanswered [ns->nunanswered++] = pae->Msg;
		pae->Msg = NULL;                 /* ours now: the library does not destroy it */
	} else {
		ns->lost = true;
	}
	pthread_mutex_unlock (&ns->lock);
}

/*
 * Every chunk of the snapshot answered: wait for those in flight, then
 * publish again, one at a time with the usual retries, those that failed or
 * got no answer (a retry of one that had landed is de-duplicated); or, for
 * a snapshot given up (!republish), drop them.
 */
static int
sp_nats_chunks_answered (SpNatsStore *ns, bool republish, SpError *err)
{
	jsPubOptions po;
	jsPubOptions_Init (&po);
	po.MaxWait = (int64_t)(ns->wait_ns / 1000000u) + SP_NATS_TRY_MS;
	natsMsgList late = { 0 };
	if (js_PublishAsyncComplete (ns->js, &po) != NATS_OK && js_PublishAsyncGetPendingList (&late, ns->js) != NATS_OK)
		late.Count = 0;
	pthread_mutex_lock (&ns->lock);
	natsMsg **again = ns->unanswered;
	size_t nagain = ns->nunanswered;
	bool lost = ns->lost;
	ns->unanswered = NULL;
	ns->nunanswered = ns->unanswered_cap = 0;
	ns->lost = false;
	pthread_mutex_unlock (&ns->lock);
	natsStatus st = republish ? NATS_OK : NATS_ILLEGAL_STATE;
	jsErrCode jerr = 0;
	for (size_t i = 0; i < nagain + (size_t)late.Count; i++) {
		natsMsg **m = i < nagain ? &again [i] : &late.Msgs [i - nagain];
		jsPubAck *ack = NULL;
		if (st == NATS_OK)
			st = sp_nats_publish (&ack, ns, *m, &jerr);
		jsPubAck_Destroy (ack);
		natsMsg_Destroy (*m);
		*m = NULL;
	}
	free (again);
	natsMsgList_Destroy (&late);
	if (st != NATS_OK)
		return republish ? sp_nats_fail (err, "publishing a chunk of a snapshot", st, jerr) : -1;
	return lost ? sp_error_set (err, "publishing a chunk of a snapshot: out of memory keeping one to publish again") : 0;
}

static int
sp_nats_finish (SpStore *s, SpError *err)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	if (ns->unsure && sp_nats_settle (ns, err) < 0)
		return -1;
	bool only = ns->parts == 0;      /* the chunk in hand is the snapshot's only one */
	if ((ns->npending || only) && sp_nats_publish_chunk (ns, only, err) < 0)
		return -1;
	if (!only && sp_nats_chunks_answered (ns, true, err) < 0)
		return -1;
	SpNatsEntry e = { .sequence = s->writing, .writer = ns->writer, .bytes = s->written, .chunks = ns->parts };
	size_t n, dropped;
	SpNatsEntry *next = sp_nats_next_catalog (ns, &e, &n, &dropped);
	if (!next)
		return sp_error_set (err, "out of memory");
	if (sp_nats_catalog_publish (ns, next, n, err) < 0) {
		free (next);
		return -1;
	}
	/* Committed: the snapshots the catalog no longer names are garbage, purged by retire. */
	SpNatsEntry *grown = realloc (ns->garbage, (ns->ngarbage + dropped + 1) * sizeof *grown);
	if (grown) {
		if (dropped)
			memcpy (grown + ns->ngarbage, ns->catalog, dropped * sizeof *grown);
		ns->garbage = grown;
		ns->ngarbage += dropped;
	}
	free (ns->catalog);
	ns->catalog = next;
	ns->ncatalog = n;
	return 0;
}

/* Purge snapshot e's chunks (all of them: one subject filter). */
static int
sp_nats_purge (SpNatsStore *ns, const SpNatsEntry *e, SpError *err)
{
	char filter [256];
	snprintf (filter, sizeof filter, "sp.%s.c.%016" PRIx64 ".%" PRIu64 ".*", ns->name, e->writer, e->sequence);
	jsOptions o;
	jsOptions_Init (&o);
	o.Stream.Purge.Subject = filter;
	jsErrCode jerr = 0;
	natsStatus st = js_PurgeStream (ns->js, ns->stream, &o, &jerr);
	return st == NATS_OK ? 0 : sp_nats_fail (err, "removing an old snapshot", st, jerr);
}

static void
sp_nats_abort (SpStore *s)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	SpNatsEntry e = { .sequence = s->writing, .writer = ns->writer };
	SpError ignored = { 0 };
	if (ns->parts) {
		(void)sp_nats_chunks_answered (ns, false, &ignored);   /* none lands after the purge, none sent again */
		(void)sp_nats_purge (ns, &e, &ignored);    /* best effort: chunks no catalog names are never read */
	}
	ns->npending = 0;
	ns->parts = 0;
}

static int
sp_nats_retire (SpStore *s, uint64_t max_bytes, SpError *err)
{
	(void)max_bytes;           /* a purge is one request, however large */
	SpNatsStore *ns = (SpNatsStore *)s;
	if (ns->nold_catalogs) {
		if (sp_nats_delete (ns, ns->old_catalogs [ns->nold_catalogs - 1], err) < 0)
			return -1;
		ns->nold_catalogs--;
		return ns->nold_catalogs > 0 || ns->ngarbage > 0;
	}
	if (!ns->ngarbage)
		return 0;
	if (sp_nats_purge (ns, &ns->garbage [ns->ngarbage - 1], err) < 0)
		return -1;
	ns->ngarbage--;
	return ns->ngarbage > 0;
}

static void
sp_nats_close (SpStore *s)
{
	SpNatsStore *ns = (SpNatsStore *)s;
	jsCtx_Destroy (ns->js);
	natsConnection_Destroy (ns->nc);
	for (size_t i = 0; i < ns->nunanswered; i++)
		natsMsg_Destroy (ns->unanswered [i]);
	free (ns->unanswered);
	pthread_mutex_destroy (&ns->lock);
	free (ns->catalog);
	free (ns->garbage);
	free (ns->old_catalogs);
	free (ns->pending);
	free (ns->name);
	free (s->location);
	free (ns);
}

static const SpStoreOps sp_nats_store_ops = {
	.name = "nats",
	.list = sp_nats_list,
	.sequences = sp_nats_sequences,
	.read = sp_nats_read,
	.release = sp_nats_release,
	.begin = sp_nats_begin,
	.append = sp_nats_append,
	.finish = sp_nats_finish,
	.abort = sp_nats_abort,
	.retire = sp_nats_retire,
	.close = sp_nats_close,
};

/* ---- opening ---------------------------------------------------------------------- */

/* "HOST:PORT,HOST:PORT/NAME" into servers ("nats://HOST:PORT" each) and NAME (letters, digits, '-', '_'). */
/* A parameter after '?': replicas=N (1-5) or wait=SECONDS (1-3600). */
static int
sp_nats_parameter (const char *location, const char *param, size_t len, SpNatsLocation *loc, SpError *err)
{
	const struct { const char *name, *takes; long max; int *value; } known [] = {
		{ "replicas", "a count of nodes", SP_NATS_REPLICAS_MAX, &loc->replicas },
		{ "wait", "seconds", SP_NATS_WAIT_MAX_S, &loc->wait_s },
	};
	const char *eq = memchr (param, '=', len);
	size_t key = eq ? (size_t)(eq - param) : len, vlen = eq ? len - key - 1 : 0;
	char value [16] = "";
	if (vlen < sizeof value)
		memcpy (value, param + len - vlen, vlen);
	char *end = NULL;
	long n = *value >= '0' && *value <= '9' ? strtol (value, &end, 10) : -1;
	for (size_t i = 0; i < sizeof known / sizeof known [0]; i++) {
		if (strlen (known [i].name) != key || strncmp (param, known [i].name, key))
			continue;
		if (!end || *end || n < 1 || n > known [i].max)
			return sp_error_set (err, "store '%s': %s takes %s from 1 to %ld, not '%.*s'",
					     location, known [i].name, known [i].takes, known [i].max, (int)vlen, param + len - vlen);
		*known [i].value = (int)n;
		return 0;
	}
	return sp_error_set (err, "store '%s': unknown parameter '%.*s' (a NATS store takes replicas=N and wait=SECONDS)",
			     location, (int)key, param);
}

/* The parameters after '?', separated by '&'. */
static int
sp_nats_parameters (const char *location, const char *params, SpNatsLocation *loc, SpError *err)
{
	for (const char *p = params; *p; ) {
		size_t len = strcspn (p, "&");
		if (len == 0 || sp_nats_parameter (location, p, len, loc, err) < 0)
			return len == 0 ? sp_error_set (err, "store '%s': an empty parameter after '?'", location) : -1;
		p += len + (p [len] == '&');
	}
	return 0;
}

static int
sp_nats_parse (const char *location, SpNatsLocation *loc, SpError *err)
{
	loc->replicas = 3;
	loc->wait_s = SP_NATS_WAIT_DEFAULT_S;
	const char *rest = location + strlen ("nats://"), *slash = strchr (rest, '/');
	if (!slash || slash == rest || !slash [1] || slash [1] == '?')
		return sp_error_set (err, "store '%s': a NATS store is nats://HOST:PORT[,HOST:PORT...]/NAME[?replicas=N&wait=SECONDS]", location);
	size_t namelen = strcspn (slash + 1, "?");
	for (const char *c = slash + 1; c < slash + 1 + namelen; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return sp_error_set (err, "store '%s': the name after '/' may hold letters, digits, '-' and '_' only", location);
	if (namelen > 64)
		return sp_error_set (err, "store '%s': the name is longer than 64 characters", location);
	if (slash [1 + namelen] == '?' && sp_nats_parameters (location, slash + 2 + namelen, loc, err) < 0)
		return -1;
	loc->name = strndup (slash + 1, namelen);
	loc->nservers = 1;
	for (const char *c = rest; c < slash; c++)
		loc->nservers += *c == ',';
	loc->servers = calloc ((size_t)loc->nservers, sizeof *loc->servers);
	if (!loc->name || !loc->servers)
		return sp_error_set (err, "out of memory");
	const char *p = rest;
	for (int i = 0; i < loc->nservers; i++) {
		size_t len = strcspn (p, ",/");
		if (!len)
			return sp_error_set (err, "store '%s': an empty server in the list", location);
		if (!(loc->servers [i] = malloc (len + 8)))
			return sp_error_set (err, "out of memory");
		snprintf (loc->servers [i], len + 8, "nats://%.*s", (int)len, p);
		p += len + 1;
	}
	return 0;
}

/*
 * A stream of an earlier spmono kept 4 messages per subject: the engine
 * then removed the oldest of the subject at each publication, and
 * nats-server 2.9.10, once its count for the catalog's subject was wrong
 * (a node restarted and caught up from a snapshot, nats-io/nats-server#5054),
 * removed the catalog just published instead: every other commit was lost
 * in CI.  Per-subject limits are left unused (retire deletes replaced
 * catalogs by sequence), and such a stream is updated.
 */
static int
sp_nats_unlimited (SpNatsStore *ns, jsStreamInfo *si, SpError *err)
{
	if (!si->Config || si->Config->MaxMsgsPerSubject <= 0)
		return 0;
	si->Config->MaxMsgsPerSubject = -1;
	jsStreamInfo *updated = NULL;
	jsErrCode jerr = 0;
	natsStatus st;
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0; (st = js_UpdateStream (&updated, ns->js, si->Config, NULL, &jerr)) != NATS_OK && sp_nats_again (ns, st, jerr, t, t0); t++)
		;
	jsStreamInfo_Destroy (updated);
	return st == NATS_OK ? 0 : sp_nats_fail (err, "updating the store's stream (no limit of messages per subject)", st, jerr);
}

/* The store's stream, made (replicated on `replicas` nodes) when it does not exist and the store is writable. */
static int
sp_nats_stream (SpNatsStore *ns, bool readonly, int replicas, SpError *err)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus st;
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0; (st = js_GetStreamInfo (&si, ns->js, ns->stream, NULL, &jerr)) != NATS_OK && sp_nats_again (ns, st, jerr, t, t0); t++)
		;
	if (st == NATS_OK) {
		int rc = readonly ? 0 : sp_nats_unlimited (ns, si, err);
		jsStreamInfo_Destroy (si);
		return rc;
	}
	if (jerr != JSStreamNotFoundErr && st != NATS_NOT_FOUND)
		return sp_nats_fail (err, "looking up the store's stream", st, jerr);
	if (readonly)
		return sp_error_set (err, "store %s does not exist (no stream %s)", ns->base.location, ns->stream);
	char subjects [128];
	snprintf (subjects, sizeof subjects, "sp.%s.>", ns->name);
	const char *list [1] = { subjects };
	jsStreamConfig cfg;
	jsStreamConfig_Init (&cfg);
	cfg.Name = ns->stream;
	cfg.Subjects = list;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Replicas = replicas;
	cfg.MaxMsgsPerSubject = -1;      /* unlimited: see sp_nats_unlimited; retire deletes old catalogs */
	/* A cluster just started may have elected its meta leader before every node joined:
	 * "no suitable peers" then passes within the wait, like an engine not up yet. */
	t0 = sp_nats_now_ns ();
	for (int t = 0; (st = js_AddStream (&si, ns->js, &cfg, NULL, &jerr)) != NATS_OK
		     && sp_nats_again (ns, st, jerr == JSClusterNoPeersErr ? JSClusterNotAvailErr : jerr, t, t0); t++)
		;
	if (st != NATS_OK && jerr == JSClusterNoPeersErr)
		return sp_error_set (err, "store %s: the engine has not %d nodes with JetStream up for a stream of %d "
				     "replicas (waited %" PRIu64 " s; fewer replicas with ?replicas=N)", ns->base.location,
				     replicas, replicas, ns->wait_ns / 1000000000u);
	if (st != NATS_OK)
		return sp_nats_fail (err, "creating the store's stream", st, jerr);
	jsStreamInfo_Destroy (si);
	return 0;
}

static uint64_t
sp_nats_writer_id (void)
{
	uint64_t id = 0;
	FILE *f = fopen ("/dev/urandom", "rb");
	if (!f || fread (&id, sizeof id, 1, f) != 1) {
		struct timespec ts;
		clock_gettime (CLOCK_REALTIME, &ts);
		id = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid () << 16);
	}
	if (f)
		fclose (f);
	return id;
}

/* Connected to one of the servers, which may take the store's wait (an engine not up yet). */
static int
sp_nats_connect (SpNatsStore *ns, const SpNatsLocation *loc, SpError *err)
{
	natsOptions *opts = NULL;
	natsStatus st = natsOptions_Create (&opts);
	if (st == NATS_OK)
		st = natsOptions_SetServers (opts, (const char **)loc->servers, loc->nservers);
	if (st == NATS_OK)
		st = natsOptions_SetTimeout (opts, SP_NATS_CONNECT_MS);
	if (st == NATS_OK)
		st = natsOptions_SetMaxReconnect (opts, -1);     /* keep trying: a node or the network comes back */
	if (st == NATS_OK)
		st = natsOptions_SetReconnectWait (opts, 100);   /* to another node at once (the default waits 2 s) */
	uint64_t t0 = sp_nats_now_ns ();
	for (int t = 0; st == NATS_OK && (st = natsConnection_Connect (&ns->nc, opts)) != NATS_OK && sp_nats_again (ns, st, 0, t, t0); t++)
		st = NATS_OK;
	natsOptions_Destroy (opts);
	if (st != NATS_OK)
		return sp_nats_fail (err, "connecting to the NATS servers", st, 0);
	jsOptions jo;
	jsOptions_Init (&jo);
	jo.Wait = SP_NATS_TRY_MS;
	jo.PublishAsync.MaxPending = SP_NATS_INFLIGHT;
	jo.PublishAsync.ErrHandler = sp_nats_chunk_unanswered;
	jo.PublishAsync.ErrHandlerClosure = ns;
	st = natsConnection_JetStream (&ns->js, ns->nc, &jo);
	return st == NATS_OK ? 0 : sp_nats_fail (err, "opening JetStream", st, 0);
}

static void
sp_nats_location_free (SpNatsLocation *loc)
{
	for (int i = 0; loc->servers && i < loc->nservers; i++)
		free (loc->servers [i]);
	free (loc->servers);
}

typedef struct SpNatsOpening {
	const char *location;
	bool readonly;
	SpStore *store;
	SpError err;
	int rc;
} SpNatsOpening;

static int sp_nats_open (const char *location, bool readonly, SpStore **out, SpError *err);

static void *
sp_nats_open_main (void *arg)
{
	SpNatsOpening *o = arg;
	o->rc = sp_nats_open (o->location, o->readonly, &o->store, &o->err);
	return NULL;
}

/*
 * Opened on a thread of the normal policy (sp-thread.h): the NATS client
 * starts its own threads (timers, a connection's reader and flusher) there,
 * and they inherit its policy.  Opened from a SCHED_FIFO program's thread,
 * they ran at the control loop's priority and made it miss deadlines.
 */
int
sp_store_nats_open (const char *location, bool readonly, SpStore **out, SpError *err)
{
	SpNatsOpening o = { .location = location, .readonly = readonly };
	pthread_attr_t attr;
	pthread_t thread;
	sp_thread_attr_normal (&attr);
	int rc = pthread_create (&thread, &attr, sp_nats_open_main, &o);
	pthread_attr_destroy (&attr);
	if (rc != 0)
		return sp_nats_open (location, readonly, out, err);
	pthread_join (thread, NULL);
	*out = o.store;
	if (o.rc < 0)
		*err = o.err;
	return o.rc;
}

static int
sp_nats_open (const char *location, bool readonly, SpStore **out, SpError *err)
{
	*out = NULL;
	SpNatsStore *ns = calloc (1, sizeof *ns);
	if (!ns || !(ns->base.location = strdup (location))) {
		free (ns);
		return sp_error_set (err, "out of memory");
	}
	ns->base.ops = &sp_nats_store_ops;
	pthread_mutex_init (&ns->lock, NULL);
	ns->base.readonly = readonly;
	ns->writer = sp_nats_writer_id ();
	SpNatsLocation loc = { 0 };
	int rc = sp_nats_parse (location, &loc, err);
	ns->name = loc.name;
	if (rc == 0) {
		snprintf (ns->stream, sizeof ns->stream, "SP_%s", ns->name);
		ns->wait_ns = (uint64_t)loc.wait_s * 1000000000u;
		rc = sp_nats_connect (ns, &loc, err);
		if (rc == 0)
			rc = sp_nats_stream (ns, readonly, loc.replicas, err);
		if (rc == 0)
			rc = sp_nats_catalog_load (ns, err);
	}
	sp_nats_location_free (&loc);
	if (rc < 0) {
		sp_nats_close (&ns->base);
		return sp_error_prefix (err, "store '%s'", location);
	}
	*out = &ns->base;
	return 0;
}

#else

int
sp_store_nats_open (const char *location, bool readonly, SpStore **out, SpError *err)
{
	(void)readonly;
	*out = NULL;
	return sp_error_set (err, "store '%s': this spmono was built without the NATS store (libnats-dev)", location);
}

#endif
