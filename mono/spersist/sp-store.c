/* sp-store.c: store-independent parts; see sp-store.h. */
#include "sp-store.h"

#include "sp-snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open the store a location names ("DIR", "file:DIR", "pmem:FILE", "null:", "nats://SERVERS/NAME"). */
static int
sp_store_open_location (const char *location, bool readonly, SpStore **out, SpError *err)
{
	*out = NULL;
	if (!location || !*location)
		return sp_error_set (err, "empty store location");
	if (strncmp (location, "nats://", 7) == 0)
		return sp_store_nats_open (location, readonly, out, err);
	if (strncmp (location, "null:", 5) == 0)
		return location [5] ? sp_error_set (err, "store '%s': the null store names nothing (null:)", location) : sp_store_null_open (out, err);
	bool pmem = strncmp (location, "pmem:", 5) == 0;
	const char *path = location;
	if (pmem || strncmp (location, "file:", 5) == 0)
		path = location + 5;
	if (!*path)
		return sp_error_set (err, "store '%s': no %s named", location, pmem ? "file" : "directory");
	int rc = pmem ? sp_store_pmem_open (path, readonly, out, err) : sp_store_file_open (path, readonly, out, err);
	return rc < 0 ? sp_error_prefix (err, "store '%s'", location) : 0;
}

int
sp_store_open (const char *location, unsigned keep, SpStore **out, SpError *err)
{
	*out = NULL;
	if (keep < 1)
		return sp_error_set (err, "a store must keep at least 1 snapshot (asked for %u)", keep);
	if (sp_store_open_location (location, false, out, err) < 0)
		return -1;
	if (keep > (*out)->keep && strcmp ((*out)->ops->name, "pmem") == 0) {
		sp_error_set (err, "store '%s': the pmem store keeps the 2 newest snapshots, not %u (--sp-keep)", location, keep);
		sp_store_close (*out);
		*out = NULL;
		return -1;
	}
	(*out)->keep = keep;
	return 0;
}

int
sp_store_open_readonly (const char *location, SpStore **out, SpError *err)
{
	if (sp_store_open_location (location, true, out, err) < 0)
		return -1;
	(*out)->readonly = true;
	return 0;
}

void
sp_store_close (SpStore *s)
{
	if (!s)
		return;
	sp_store_abort (s);
	s->ops->close (s);
}

int
sp_store_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err)
{
	return s->ops->list (s, infos, n, err);
}

int
sp_store_begin (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err)
{
	if (s->readonly)
		return sp_error_set (err, "store '%s' was opened read-only", s->location);
	if (s->writing)
		return sp_error_set (err, "internal error: snapshot %llu is still being written to store '%s'",
				     (unsigned long long)s->writing, s->location);
	if (sequence <= s->last_sequence)
		return sp_error_set (err, "internal error: sequence %llu is not after %llu",
				     (unsigned long long)sequence, (unsigned long long)s->last_sequence);
	if (s->ops->begin (s, sequence, size_hint, err) < 0)
		return -1;
	s->writing = sequence;
	s->written = 0;
	return 0;
}

int
sp_store_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	if (!s->writing)
		return sp_error_set (err, "internal error: no snapshot is being written to store '%s'", s->location);
	if (size && s->ops->append (s, data, size, err) < 0) {
		sp_store_abort (s);
		return -1;
	}
	s->written += size;
	return 0;
}

bool
sp_store_writes_back (const SpStore *s)
{
	return s->ops->writeback != NULL;
}

void
sp_store_writeback (SpStore *s)
{
	if (s->writing && s->ops->writeback)
		s->ops->writeback (s);
}

int
sp_store_finish (SpStore *s, SpError *err)
{
	if (!s->writing)
		return sp_error_set (err, "internal error: no snapshot is being written to store '%s'", s->location);
	if (s->ops->finish (s, err) < 0) {
		sp_store_abort (s);
		return -1;
	}
	s->last_sequence = s->writing;
	s->writing = 0;
	return 0;
}

void
sp_store_abort (SpStore *s)
{
	if (!s->writing)
		return;
	s->ops->abort (s);
	s->writing = 0;
}

uint64_t
sp_store_retirable (const SpStore *s, uint64_t oldest, size_t count)
{
	if (count < 2)
		return 0;                       /* never the newest */
	if (s->retain_from)
		return oldest < s->retain_from ? oldest : 0;
	return count > s->keep ? oldest : 0;
}

int
sp_store_retire_nothing (SpStore *s, uint64_t max_bytes, SpError *err)
{
	(void)s;
	(void)max_bytes;
	(void)err;
	return 0;
}

int
sp_store_retire (SpStore *s, uint64_t max_bytes)
{
	if (s->readonly)
		return 0;
	return s->ops->retire (s, max_bytes, NULL) > 0 ? 1 : 0;
}

int
sp_store_replace (SpStore *s, uint64_t sequence, SpProduceFn produce, void *ctx, SpError *err)
{
	if (!sp_store_can_replace (s))
		return sp_error_set (err, "store '%s' cannot replace a snapshot (%s)", s->location,
				     s->readonly ? "it was opened read-only" : "its kind cannot");
	if (sequence == 0 || sequence > s->last_sequence)
		return sp_error_set (err, "internal error: store '%s' has no snapshot %llu to replace", s->location,
				     (unsigned long long)sequence);
	return s->ops->replace (s, sequence, produce, ctx, err);
}

int
sp_store_commit (SpStore *s, const uint8_t *data, size_t size, uint64_t sequence, SpError *err)
{
	if (sp_store_begin (s, sequence, size, err) < 0 || sp_store_append (s, data, size, err) < 0 ||
	    sp_store_finish (s, err) < 0)
		return -1;
	while (sp_store_retire (s, UINT64_MAX))
		;
	return 0;
}

/* ---- loading the newest snapshot, with its chain ------------------------------ */

enum { SP_SNAP_UNKNOWN, SP_SNAP_INTACT, SP_SNAP_DAMAGED };

/* What is known of each snapshot of the store while loading (seqs newest first). */
typedef struct SpLoad {
	SpStore *s;
	uint64_t *seqs;
	size_t n;
	uint8_t *state;
	SpSnapHeader *headers;
	SpSnapTrailer *trailers;
	SpWarnFn warn;
	void *warn_ctx;
} SpLoad;

/* Where sequence `seq` is in seqs (newest first), or n. */
static size_t
sp_load_find (const SpLoad *l, uint64_t seq)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->seqs [mid] == seq)
			return mid;
		if (l->seqs [mid] > seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return l->n;
}

static void
sp_load_damaged (SpLoad *l, size_t i, const char *why)
{
	if (l->state [i] == SP_SNAP_DAMAGED)
		return;
	l->state [i] = SP_SNAP_DAMAGED;
	if (l->warn) {
		char msg [SP_ERROR_MAX + 128];
		snprintf (msg, sizeof msg, "skipping damaged snapshot %llu in %s: %s",
			  (unsigned long long)l->seqs [i], l->s->location, why);
		l->warn (l->warn_ctx, msg);
	}
}

/* Snapshot i's bytes, checked alone (checksum, header) the first time; -1 when it is damaged. */
static int
sp_load_read (SpLoad *l, size_t i, SpChainPart *part)
{
	SpError why = { 0 };
	uint8_t *bytes = NULL;
	size_t len = 0;
	if (l->state [i] == SP_SNAP_DAMAGED)
		return -1;
	/* Read again for a shorter chain, it is not checked again here: the decoder checks those bytes. */
	bool check = l->state [i] != SP_SNAP_INTACT;
	if (l->s->ops->read (l->s, l->seqs [i], &bytes, &len, &why) == 0 &&
	    (!check || sp_snapshot_check (bytes, len, &l->headers [i], &l->trailers [i], &why) == 0)) {
		l->state [i] = SP_SNAP_INTACT;
		*part = (SpChainPart){ bytes, len, check };
		return 0;
	}
	if (bytes)
		l->s->ops->release (l->s, bytes, len);
	sp_load_damaged (l, i, why.msg);
	return -1;
}

static void
sp_load_release_parts (SpStore *s, SpChainPart *parts, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (parts [k].data)
			s->ops->release (s, (uint8_t *)parts [k].data, parts [k].size);
}

/*
 * Snapshot i's chain, its full snapshot first, into parts/at (room for
 * l->n): every part read and checked, every link holding; else -1, with i
 * (and the part at fault) marked damaged and nothing held.
 */
static int
sp_load_chain (SpLoad *l, size_t i, SpChainPart *parts, size_t *at, size_t *n)
{
	size_t k = 0, idx = i;
	char why [SP_ERROR_MAX + 64];
	for (;;) {
		if (sp_load_read (l, idx, &parts [k]) < 0) {
			snprintf (why, sizeof why, "it needs snapshot %llu, which is damaged", (unsigned long long)l->seqs [idx]);
			goto broken;
		}
		at [k++] = idx;
		if (!sp_header_is_delta (&l->headers [idx]))
			break;
		uint64_t prev = l->headers [idx].prev_sequence;   /* below idx's own: the walk ends */
		idx = sp_load_find (l, prev);
		if (idx == l->n) {
			snprintf (why, sizeof why, "it needs snapshot %llu, which the store lacks", (unsigned long long)prev);
			goto broken;
		}
	}
	/* Oldest first, then each link. */
	for (size_t a = 0, b = k - 1; a < b; a++, b--) {
		SpChainPart tp = parts [a];
		parts [a] = parts [b];
		parts [b] = tp;
		size_t ti = at [a];
		at [a] = at [b];
		at [b] = ti;
	}
	for (size_t p = 1; p < k; p++) {
		SpError link = { 0 };
		if (sp_chain_link_check (&l->headers [at [0]], &l->headers [at [p - 1]], &l->trailers [at [p - 1]],
					 &l->headers [at [p]], &link) < 0) {
			sp_load_damaged (l, at [p], link.msg);
			snprintf (why, sizeof why, "its chain breaks at snapshot %llu", (unsigned long long)l->seqs [at [p]]);
			goto broken;
		}
	}
	*n = k;
	return 0;
broken:
	sp_load_release_parts (l->s, parts, k);
	if (idx != i || l->state [i] != SP_SNAP_DAMAGED)
		sp_load_damaged (l, i, why);
	return -1;
}

static int
sp_load_setup (SpLoad *l, SpStore *s, SpError *err)
{
	if (s->ops->sequences (s, &l->seqs, &l->n, err) < 0)
		return -1;
	l->state = calloc (l->n + 1, 1);
	l->headers = calloc (l->n + 1, sizeof *l->headers);
	l->trailers = calloc (l->n + 1, sizeof *l->trailers);
	if (!l->state || !l->headers || !l->trailers)
		return sp_error_set (err, "out of memory listing the snapshots of %s", s->location);
	return 0;
}

static void
sp_load_free (SpLoad *l)
{
	free (l->seqs);
	free (l->state);
	free (l->headers);
	free (l->trailers);
}

/* The chain the accept took becomes `loaded`'s (parts move over). */
static int
sp_load_take (SpLoad *l, SpChainPart *parts, const size_t *at, size_t n, SpLoaded *loaded, SpError *err)
{
	loaded->parts = malloc (n * sizeof *loaded->parts);
	loaded->sequences = malloc (n * sizeof *loaded->sequences);
	if (!loaded->parts || !loaded->sequences) {
		free (loaded->parts);
		free (loaded->sequences);
		*loaded = (SpLoaded){ 0 };
		sp_load_release_parts (l->s, parts, n);
		return sp_error_set (err, "out of memory loading from %s", l->s->location);
	}
	loaded->n = n;
	for (size_t k = 0; k < n; k++) {
		loaded->parts [k] = parts [k];
		loaded->sequences [k] = l->seqs [at [k]];
		loaded->bytes += parts [k].size;
	}
	loaded->sequence = loaded->sequences [n - 1];
	return 0;
}

int
sp_store_load_newest (SpStore *s, SpAcceptFn accept, void *accept_ctx, SpWarnFn warn, void *warn_ctx,
		      SpLoaded *loaded, SpError *err)
{
	*loaded = (SpLoaded){ 0 };
	SpLoad l = { .s = s, .warn = warn, .warn_ctx = warn_ctx };
	SpChainPart *parts = NULL;
	size_t *at = NULL;
	int rc = sp_load_setup (&l, s, err);
	if (rc == 0 && l.n) {
		parts = calloc (l.n, sizeof *parts);
		at = calloc (l.n, sizeof *at);
		if (!parts || !at)
			rc = sp_error_set (err, "out of memory listing the snapshots of %s", s->location);
	}
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		size_t n, failed = 0;
		SpError why = { 0 };
		if (l.state [i] == SP_SNAP_DAMAGED || sp_load_chain (&l, i, parts, at, &n) < 0)
			continue;
		int verdict = accept ? accept (accept_ctx, parts, n, &failed, &why) : 0;
		if (verdict == 0) {
			rc = sp_load_take (&l, parts, at, n, loaded, err);
			break;
		}
		sp_load_release_parts (s, parts, n);
		if (verdict == SP_ACCEPT_FATAL) {
			*err = why;
			rc = sp_error_prefix (err, "snapshot %llu in %s", (unsigned long long)l.seqs [at [failed < n ? failed : n - 1]], s->location);
			break;
		}
		sp_load_damaged (&l, at [failed < n ? failed : n - 1], why.msg);
		if (l.state [i] != SP_SNAP_DAMAGED) {
			char msg [SP_ERROR_MAX];
			snprintf (msg, sizeof msg, "its chain's snapshot %llu is damaged", (unsigned long long)l.seqs [at [failed < n ? failed : n - 1]]);
			sp_load_damaged (&l, i, msg);
		}
	}
	free (parts);
	free (at);
	sp_load_free (&l);
	return rc;
}

void
sp_store_release_loaded (SpStore *s, SpLoaded *loaded)
{
	if (loaded->parts)
		sp_load_release_parts (s, loaded->parts, loaded->n);
	free (loaded->parts);
	free (loaded->sequences);
	*loaded = (SpLoaded){ 0 };
}

void
sp_store_release (SpStore *s, uint8_t *data, size_t size)
{
	if (data)
		s->ops->release (s, data, size);
}
