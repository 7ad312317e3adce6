/*
 * sp-store-pmem.c: the persistent-memory store, one file mapped with libpmem
 * ("pmem:/path/file": a file on a DAX file system, a regular file, /dev/shm).
 *
 * Layout (little-endian):
 *
 *   0      superblock, 4 KiB: magic "SPMPMEM1" (8), version u32 (1), 52 bytes 0,
 *          record[0] at 64, record[1] at 128
 *   4096   data: the snapshots the records point to, anywhere after here
 *
 *   record (64 bytes, one cache line): sequence u64, offset u64, size u64,
 *          data_crc u32 (CRC-32C of the snapshot's bytes but its last four),
 *          28 bytes 0, record_crc u32 (CRC-32C of the 60 bytes before it)
 *
 * Why not the last four bytes: a snapshot ends with its own CRC-32C of the
 * rest, and a CRC over a message followed by its CRC is the same constant
 * for every message (the CRC residue; seeding or extending does not help, a
 * CRC being affine), so such a check could not tell one snapshot's bytes from
 * another's.  Those four bytes are checked with the snapshot itself.
 *
 * A record is valid when its CRC verifies, its region lies inside the file
 * past the superblock, and its data's CRC verifies (checked by list and
 * read).  The store holds the two newest snapshots, one a record.
 *
 * Commit (snapshot S, sequence q): the record R that does not hold the newest
 * valid snapshot N is the one rewritten.  S's bytes go where they overlap
 * nothing of N (at 4096 when S's likely size, the hint given at begin, fits
 * before N, else right after N, the file growing when needed), chunk by chunk
 * as they are appended, each persisted, and only then is R written (q, where,
 * size, CRCs) and persisted.  When S outgrows the room before N, what was
 * appended so far is moved after N first (a copy, once; the hint is the
 * previous snapshot's size and some, so it is rare).  A crash before R is persisted leaves N valid and
 * newest: R either is unchanged (its old snapshot's bytes may have been
 * overwritten: its data CRC then fails, and it is ignored) or is torn (its
 * record CRC fails).  A crash after: S is valid and newest.  So the newest
 * committed snapshot survives any crash, and a snapshot is never half there.
 *
 * Persisting: pmem_persist when the mapping is persistent memory (DAX),
 * pmem_msync otherwise (PMEM_IS_PMEM_FORCE=1 makes libpmem treat any mapping
 * as pmem, for tests).  One process at a time: the file is flock'ed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sp-store.h"

#include "sp-buf.h"
#include "sp-crc32c.h"
#include "sp-snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef SPMONO_HAVE_PMEM
#include <libpmem.h>

#define SP_PMEM_MAGIC        "SPMPMEM1"
#define SP_PMEM_VERSION      1
#define SP_PMEM_SUPER_SIZE   4096u
#define SP_PMEM_RECORD_AT(i) (64u + 64u * (unsigned)(i))
#define SP_PMEM_RECORD_SIZE  64u
#define SP_PMEM_INITIAL_SIZE (4u << 20)

typedef struct SpPmemRecord {
	uint64_t sequence;     /* 0: empty */
	uint64_t offset;
	uint64_t size;
	uint32_t data_crc;
	bool valid;            /* record CRC and bounds (the data CRC is checked when read) */
} SpPmemRecord;

typedef struct SpPmemStore {
	SpStore base;
	char *path;
	uint8_t *map;
	size_t map_len;
	int is_pmem;
	int lock_fd;
	bool readonly;
	SpPmemRecord records [2];
	/* The snapshot in progress (begin..finish): where it starts, the end it must not pass, its data CRC so far. */
	uint64_t w_at;
	uint64_t w_limit;
	uint32_t w_crc;
	uint8_t w_tail [4];      /* its last bytes so far, which the data CRC leaves out until more follow */
	unsigned w_tail_len;
} SpPmemStore;

/*
 * Tests: a commit stops, as a crash of the process would, before its n-th
 * step (counted from 1: write the data, persist it, write the record, persist
 * it); 0: never.  What was written before stays in the file, as it would.
 */
unsigned sp_store_pmem_crash_before_step;

static int
sp_pmem_step (SpError *err)
{
	if (sp_store_pmem_crash_before_step && --sp_store_pmem_crash_before_step == 0)
		return sp_error_set (err, "simulated crash");
	return 0;
}

static int
sp_pmem_persist (SpPmemStore *ps, const void *addr, size_t len, SpError *err)
{
	if (sp_pmem_step (err) < 0)
		return -1;
	if (ps->is_pmem) {
		pmem_persist (addr, len);
		return 0;
	}
	if (pmem_msync (addr, len) < 0)
		return sp_error_set_errno (err, errno, "msync of %s", ps->path);
	return 0;
}

/* The data check of a record (see the layout above for the last four bytes). */
static uint32_t
sp_pmem_data_crc (const uint8_t *data, size_t size)
{
	return sp_crc32c (0, data, size >= 4 ? size - 4 : size);
}

static void
sp_pmem_record_read (SpPmemStore *ps, int i)
{
	const uint8_t *r = ps->map + SP_PMEM_RECORD_AT (i);
	SpPmemRecord *rec = &ps->records [i];
	rec->sequence = sp_get_le (r, 8);
	rec->offset = sp_get_le (r + 8, 8);
	rec->size = sp_get_le (r + 16, 8);
	rec->data_crc = (uint32_t)sp_get_le (r + 24, 4);
	uint32_t stored = (uint32_t)sp_get_le (r + 60, 4);
	rec->valid = rec->sequence != 0 && stored == sp_crc32c (0, r, 60) &&
		rec->offset >= SP_PMEM_SUPER_SIZE && rec->offset <= ps->map_len && rec->size <= ps->map_len - rec->offset;
}

/* The index of the valid record with the highest sequence, -1 when none. */
static int
sp_pmem_newest (const SpPmemStore *ps)
{
	int best = -1;
	for (int i = 0; i < 2; i++)
		if (ps->records [i].valid && (best < 0 || ps->records [i].sequence > ps->records [best].sequence))
			best = i;
	return best;
}

static int
sp_pmem_map (SpPmemStore *ps, size_t len, int flags, SpError *err)
{
	size_t mapped;
	int is_pmem;
	void *map = pmem_map_file (ps->path, len, flags, 0644, &mapped, &is_pmem);
	if (!map)
		return sp_error_set_errno (err, errno, "cannot map %s", ps->path);
	ps->map = map;
	ps->map_len = mapped;
	ps->is_pmem = is_pmem;
	return 0;
}

/* ---- reading ----------------------------------------------------------------- */

static int
sp_pmem_find (SpPmemStore *ps, uint64_t seq, SpError *err)
{
	for (int i = 0; i < 2; i++)
		if (ps->records [i].valid && ps->records [i].sequence == seq)
			return i;
	return sp_error_set (err, "no snapshot %" PRIu64 " in %s", seq, ps->path);
}

static int
sp_pmem_read (SpStore *s, uint64_t seq, uint8_t **data, size_t *size, SpError *err)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	*data = NULL;
	int i = sp_pmem_find (ps, seq, err);
	if (i < 0)
		return -1;
	const SpPmemRecord *rec = &ps->records [i];
	/* The bytes in place: no copy (they stay until this process commits over them). */
	*data = ps->map + rec->offset;
	*size = (size_t)rec->size;
	if (sp_pmem_data_crc (*data, *size) != rec->data_crc) {
		*data = NULL;
		return sp_error_set (err, "snapshot %" PRIu64 " in %s: its bytes do not match its record "
				     "(overwritten by a commit that did not finish)", seq, ps->path);
	}
	return 0;
}

static void
sp_pmem_release (SpStore *s, uint8_t *data, size_t size)
{
	(void)s;
	(void)data;
	(void)size;
}

static int
sp_pmem_sequences (SpStore *s, uint64_t **seqs, size_t *n, SpError *err)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	uint64_t *out = calloc (2, sizeof *out);
	if (!out)
		return sp_error_set (err, "out of memory");
	size_t count = 0;
	int newest = sp_pmem_newest (ps);
	if (newest >= 0) {
		out [count++] = ps->records [newest].sequence;
		if (ps->records [1 - newest].valid)
			out [count++] = ps->records [1 - newest].sequence;
	}
	*seqs = out;
	*n = count;
	return 0;
}

static int
sp_pmem_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	uint64_t *seqs;
	size_t count;
	if (sp_pmem_sequences (s, &seqs, &count, err) < 0)
		return -1;
	SpSnapInfo *out = calloc (2, sizeof *out);
	if (!out) {
		free (seqs);
		return sp_error_set (err, "out of memory");
	}
	for (size_t k = 0; k < count; k++) {
		SpSnapInfo *info = &out [k];
		int i = sp_pmem_find (ps, seqs [k], err);
		info->sequence = seqs [k];
		info->size = ps->records [i].size;
		snprintf (info->path, sizeof info->path, "%s (record %d)", ps->path, i);
		uint8_t *data;
		size_t size;
		SpError why = { 0 };
		SpSnapHeader h;
		if (sp_pmem_read (s, seqs [k], &data, &size, &why) == 0 && sp_snapshot_check (data, size, &h, NULL, &why) == 0) {
			info->valid = true;
			info->time_ns = h.time_ns;
		} else {
			snprintf (info->why, sizeof info->why, "%s", why.msg);
		}
	}
	free (seqs);
	*infos = out;
	*n = count;
	return 0;
}

/* ---- committing --------------------------------------------------------------- */

/* Where a snapshot of `size` bytes goes: overlapping nothing of the newest valid one. */
static uint64_t
sp_pmem_place (const SpPmemStore *ps, uint64_t size)
{
	int newest = sp_pmem_newest (ps);
	if (newest < 0)
		return SP_PMEM_SUPER_SIZE;
	const SpPmemRecord *keep = &ps->records [newest];
	if (SP_PMEM_SUPER_SIZE + size <= keep->offset)
		return SP_PMEM_SUPER_SIZE;
	return (keep->offset + keep->size + 4095) & ~(uint64_t)4095;
}

/* Room up to `end`: the file grows (doubling), remapped. */
static int
sp_pmem_grow (SpPmemStore *ps, uint64_t end, SpError *err)
{
	if (end <= ps->map_len)
		return 0;
	size_t len = ps->map_len;
	while (len < end)
		len *= 2;
	pmem_unmap (ps->map, ps->map_len);
	ps->map = NULL;
	int fd = open (ps->path, O_RDWR | O_CLOEXEC);
	int rc = fd < 0 ? -1 : ftruncate (fd, (off_t)len);
	int saved = errno;
	if (fd >= 0)
		close (fd);
	if (rc < 0) {
		sp_error_set_errno (err, saved, "cannot grow %s to %zu bytes", ps->path, len);
		sp_pmem_map (ps, 0, 0, err);     /* back to the old size, to go on reading */
		return -1;
	}
	return sp_pmem_map (ps, 0, 0, err);
}

/* The data CRC of the snapshot in progress, fed its bytes in order (the last four held back). */
static void
sp_pmem_crc_feed (SpPmemStore *ps, const uint8_t *data, size_t size)
{
	if (size >= 4) {
		ps->w_crc = sp_crc32c (ps->w_crc, ps->w_tail, ps->w_tail_len);
		ps->w_crc = sp_crc32c (ps->w_crc, data, size - 4);
		memcpy (ps->w_tail, data + size - 4, 4);
		ps->w_tail_len = 4;
		return;
	}
	for (size_t i = 0; i < size; i++) {
		if (ps->w_tail_len == 4) {
			ps->w_crc = sp_crc32c (ps->w_crc, ps->w_tail, 1);
			memmove (ps->w_tail, ps->w_tail + 1, 3);
			ps->w_tail_len = 3;
		}
		ps->w_tail [ps->w_tail_len++] = data [i];
	}
}

static int
sp_pmem_begin (SpStore *s, uint64_t seq, uint64_t size_hint, SpError *err)
{
	(void)seq;
	(void)err;
	SpPmemStore *ps = (SpPmemStore *)s;
	ps->w_at = sp_pmem_place (ps, size_hint);
	int newest = sp_pmem_newest (ps);
	ps->w_limit = newest >= 0 && ps->w_at < ps->records [newest].offset ? ps->records [newest].offset : UINT64_MAX;
	ps->w_crc = 0;
	ps->w_tail_len = 0;
	return 0;
}

/* The snapshot in progress no longer fits before the newest: move what it has after it. */
static int
sp_pmem_relocate (SpPmemStore *ps, uint64_t need, SpError *err)
{
	uint64_t at = sp_pmem_place (ps, UINT64_MAX / 2);
	if (sp_pmem_grow (ps, at + need, err) < 0)
		return -1;
	memmove (ps->map + at, ps->map + ps->w_at, ps->base.written);
	if (sp_pmem_persist (ps, ps->map + at, ps->base.written, err) < 0)
		return -1;
	ps->w_at = at;
	ps->w_limit = UINT64_MAX;
	return 0;
}

static int
sp_pmem_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	uint64_t need = s->written + size;
	if ((ps->w_at + need > ps->w_limit && sp_pmem_relocate (ps, need, err) < 0) ||
	    sp_pmem_grow (ps, ps->w_at + need, err) < 0)
		return sp_error_prefix (err, "committing snapshot %" PRIu64, s->writing);
	if (sp_pmem_step (err) < 0)
		return -1;
	uint8_t *dst = ps->map + ps->w_at + s->written;
	memcpy (dst, data, size);
	sp_pmem_crc_feed (ps, data, size);
	if (sp_pmem_persist (ps, dst, size, err) < 0)
		return sp_error_prefix (err, "committing snapshot %" PRIu64 " to %s", s->writing, ps->path);
	return 0;
}

static int
sp_pmem_finish (SpStore *s, SpError *err)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	int newest = sp_pmem_newest (ps);
	int target = newest < 0 ? 0 : 1 - newest;
	/* A snapshot shorter than four bytes (only tests write such): its CRC covers all of it, as sp_pmem_data_crc does. */
	uint32_t data_crc = s->written < 4 ? sp_crc32c (ps->w_crc, ps->w_tail, ps->w_tail_len) : ps->w_crc;
	uint8_t rec [SP_PMEM_RECORD_SIZE] = { 0 };
	sp_put_le (rec, s->writing, 8);
	sp_put_le (rec + 8, ps->w_at, 8);
	sp_put_le (rec + 16, s->written, 8);
	sp_put_le (rec + 24, data_crc, 4);
	sp_put_le (rec + 60, sp_crc32c (0, rec, 60), 4);
	uint8_t *slot = ps->map + SP_PMEM_RECORD_AT (target);
	if (sp_pmem_step (err) < 0)
		return -1;
	memcpy (slot, rec, sizeof rec);
	if (sp_pmem_persist (ps, slot, sizeof rec, err) < 0)
		return sp_error_prefix (err, "committing snapshot %" PRIu64 " to %s", s->writing, ps->path);
	ps->records [target] = (SpPmemRecord){ .sequence = s->writing, .offset = ps->w_at, .size = s->written,
					       .data_crc = data_crc, .valid = true };
	return 0;
}

/* Nothing to undo: no record names the bytes written. */
static void
sp_pmem_abort (SpStore *s)
{
	(void)s;
}

static void
sp_pmem_close (SpStore *s)
{
	SpPmemStore *ps = (SpPmemStore *)s;
	if (ps->map)
		pmem_unmap (ps->map, ps->map_len);
	if (ps->lock_fd >= 0)
		close (ps->lock_fd);
	free (ps->path);
	free (s->location);
	free (ps);
}

static const SpStoreOps sp_pmem_store_ops = {
	.name = "pmem",
	.list = sp_pmem_list,
	.sequences = sp_pmem_sequences,
	.read = sp_pmem_read,
	.release = sp_pmem_release,
	.begin = sp_pmem_begin,
	.append = sp_pmem_append,
	.finish = sp_pmem_finish,
	.abort = sp_pmem_abort,
	.retire = sp_store_retire_nothing,
	.close = sp_pmem_close,
};

/* ---- opening ------------------------------------------------------------------ */

static int
sp_pmem_lock (SpPmemStore *ps, SpError *err)
{
	ps->lock_fd = open (ps->path, O_RDWR | O_CLOEXEC);
	if (ps->lock_fd < 0)
		return sp_error_set_errno (err, errno, "cannot open %s", ps->path);
	if (flock (ps->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return sp_error_set (err, "in use by another process; one process at a time may use a store");
		return sp_error_set_errno (err, errno, "cannot lock %s", ps->path);
	}
	return 0;
}

/* A new (all-zero) file gets its superblock; any other content must be a pmem store's. */
static int
sp_pmem_check_super (SpPmemStore *ps, SpError *err)
{
	if (ps->map_len < SP_PMEM_SUPER_SIZE)
		return sp_error_set (err, "%s is %zu bytes: too small to be a pmem store", ps->path, ps->map_len);
	uint8_t zero [SP_PMEM_SUPER_SIZE] = { 0 };
	if (memcmp (ps->map, zero, sizeof zero) == 0) {
		if (ps->readonly)
			return sp_error_set (err, "%s holds no store yet", ps->path);
		memcpy (ps->map, SP_PMEM_MAGIC, 8);
		sp_put_le (ps->map + 8, SP_PMEM_VERSION, 4);
		return sp_pmem_persist (ps, ps->map, SP_PMEM_SUPER_SIZE, err);
	}
	if (memcmp (ps->map, SP_PMEM_MAGIC, 8) != 0)
		return sp_error_set (err, "%s is not a spmono pmem store (wrong magic); it is left untouched", ps->path);
	uint32_t version = (uint32_t)sp_get_le (ps->map + 8, 4);
	if (version != SP_PMEM_VERSION)
		return sp_error_set (err, "%s is a pmem store of version %u; this spmono reads version %u", ps->path,
				     version, SP_PMEM_VERSION);
	return 0;
}

int
sp_store_pmem_open (const char *path, bool readonly, SpStore **out, SpError *err)
{
	SpPmemStore *ps = calloc (1, sizeof *ps);
	if (!ps || !(ps->path = strdup (path)) || !(ps->base.location = strdup (path))) {
		if (ps)
			free (ps->path);
		free (ps);
		return sp_error_set (err, "out of memory");
	}
	ps->base.ops = &sp_pmem_store_ops;
	ps->base.keep = 2;
	ps->lock_fd = -1;
	ps->readonly = readonly;
	struct stat st;
	bool exists = stat (path, &st) == 0;
	int rc;
	if (!exists && readonly)
		rc = sp_error_set_errno (err, ENOENT, "cannot open %s", path);
	else if (!exists)
		rc = sp_pmem_map (ps, SP_PMEM_INITIAL_SIZE, PMEM_FILE_CREATE, err);
	else
		rc = sp_pmem_map (ps, 0, 0, err);
	if (rc == 0 && !readonly)
		rc = sp_pmem_lock (ps, err);
	if (rc == 0)
		rc = sp_pmem_check_super (ps, err);
	if (rc < 0) {
		sp_pmem_close (&ps->base);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		sp_pmem_record_read (ps, i);
	int newest = sp_pmem_newest (ps);
	ps->base.last_sequence = newest < 0 ? 0 : ps->records [newest].sequence;
	*out = &ps->base;
	return 0;
}

#else

int
sp_store_pmem_open (const char *path, bool readonly, SpStore **out, SpError *err)
{
	(void)readonly;
	*out = NULL;
	return sp_error_set (err, "%s: this build has no libpmem (install libpmem-dev and rebuild)", path);
}

#endif
