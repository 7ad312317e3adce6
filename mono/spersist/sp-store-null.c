/*
 * sp-store-null.c: the null store ("null:"), which discards every snapshot.
 *
 * For measuring: a program run with --sp-store=null: pays for serialization
 * (and in incremental mode for the cycle, the barriers, the writer's
 * checksum) but not for storage, so a benchmark can tell the serializer's
 * cost from the file system's or the persistent memory's.  A commit succeeds
 * and is counted (sequences go on increasing within the process); nothing is
 * kept, so there is never a snapshot to restore from: every start is cold.
 */
#include "sp-store.h"

#include <stdlib.h>
#include <string.h>

static int
sp_null_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err)
{
	(void)s;
	(void)err;
	*infos = NULL;
	*n = 0;
	return 0;
}

static int
sp_null_sequences (SpStore *s, uint64_t **seqs, size_t *n, SpError *err)
{
	(void)s;
	(void)err;
	*seqs = NULL;
	*n = 0;
	return 0;
}

static int
sp_null_read (SpStore *s, uint64_t sequence, uint8_t **data, size_t *size, SpError *err)
{
	(void)s;
	*data = NULL;
	*size = 0;
	return sp_error_set (err, "snapshot %llu: the null store keeps nothing", (unsigned long long)sequence);
}

static void
sp_null_release (SpStore *s, uint8_t *data, size_t size)
{
	(void)s;
	(void)data;
	(void)size;
}

static int
sp_null_begin (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err)
{
	(void)s;
	(void)sequence;
	(void)size_hint;
	(void)err;
	return 0;
}

static int
sp_null_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	(void)s;
	(void)data;
	(void)size;
	(void)err;
	return 0;
}

static int
sp_null_finish (SpStore *s, SpError *err)
{
	(void)s;
	(void)err;
	return 0;
}

static void
sp_null_abort (SpStore *s)
{
	(void)s;
}

static void
sp_null_close (SpStore *s)
{
	free (s->location);
	free (s);
}

static const SpStoreOps sp_null_store_ops = {
	.name = "null",
	.list = sp_null_list,
	.sequences = sp_null_sequences,
	.read = sp_null_read,
	.release = sp_null_release,
	.begin = sp_null_begin,
	.append = sp_null_append,
	.finish = sp_null_finish,
	.abort = sp_null_abort,
	.retire = sp_store_retire_nothing,
	.close = sp_null_close,
};

int
sp_store_null_open (SpStore **out, SpError *err)
{
	SpStore *s = calloc (1, sizeof *s);
	if (s)
		s->location = strdup ("null:");
	if (!s || !s->location) {
		free (s);
		return sp_error_set (err, "out of memory");
	}
	s->ops = &sp_null_store_ops;
	s->keep = 1;
	*out = s;
	return 0;
}
