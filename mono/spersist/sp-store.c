/* sp-store.c: store-independent parts; see sp-store.h. */
#include "sp-store.h"

#include "sp-snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open the store a location names ("DIR", "file:DIR", "pmem:FILE", "null:"). */
static int
sp_store_open_location (const char *location, bool readonly, SpStore **out, SpError *err)
{
	*out = NULL;
	if (!location || !*location)
		return sp_error_set (err, "empty store location");
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
sp_store_commit (SpStore *s, const uint8_t *data, size_t size, uint64_t sequence, SpError *err)
{
	if (sp_store_begin (s, sequence, size, err) < 0 || sp_store_append (s, data, size, err) < 0 ||
	    sp_store_finish (s, err) < 0)
		return -1;
	while (sp_store_retire (s, UINT64_MAX))
		;
	return 0;
}

static int
sp_store_accept_checksum (void *ctx, const uint8_t *data, size_t size, SpError *err)
{
	(void)ctx;
	return sp_snapshot_check (data, size, NULL, NULL, err);
}

int
sp_store_load_newest (SpStore *s, SpAcceptFn accept, void *accept_ctx, SpWarnFn warn, void *warn_ctx,
		      uint8_t **data, size_t *size, uint64_t *sequence, SpError *err)
{
	*data = NULL;
	*size = 0;
	*sequence = 0;
	if (!accept)
		accept = sp_store_accept_checksum;
	uint64_t *seqs;
	size_t n;
	if (s->ops->sequences (s, &seqs, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		SpError why = { 0 };
		uint8_t *bytes = NULL;
		size_t len = 0;
		int verdict = s->ops->read (s, seqs [i], &bytes, &len, &why) == 0 ? accept (accept_ctx, bytes, len, &why) : SP_ACCEPT_SKIP;
		if (verdict == 0) {
			*data = bytes;
			*size = len;
			*sequence = seqs [i];
			break;
		}
		if (bytes)
			s->ops->release (s, bytes, len);
		if (verdict == SP_ACCEPT_FATAL) {
			unsigned long long seq = (unsigned long long)seqs [i];
			*err = why;
			free (seqs);
			return sp_error_prefix (err, "snapshot %llu in %s", seq, s->location);
		}
		if (warn) {
			char msg [SP_ERROR_MAX + 128];
			snprintf (msg, sizeof msg, "skipping damaged snapshot %llu in %s: %s",
				  (unsigned long long)seqs [i], s->location, why.msg);
			warn (warn_ctx, msg);
		}
	}
	free (seqs);
	return 0;
}

void
sp_store_release (SpStore *s, uint8_t *data, size_t size)
{
	if (data)
		s->ops->release (s, data, size);
}
