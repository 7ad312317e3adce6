/*
 * sp-store-file.c: the file store, a directory of snapshot files.
 *
 *   DIR/LOCK                     flock'ed by the process using the store; holds its pid
 *   DIR/snap-<seq, 20 digits>.spm  one committed snapshot each
 *   DIR/snap-<seq>.spm.tmp       a commit in progress (removed at open: never loaded)
 *   DIR/snap-<seq>.spm.old       a snapshot beyond the newest `keep`, being removed (removed at open)
 *   DIR/snap-<seq>.spm.fold      a folded snapshot being written to replace snap-<seq>.spm (removed at open)
 *
 * Commit: write the .tmp file, fsync it, rename it over its final name, fsync the
 * directory.  rename is atomic, so after a crash the final name holds either
 * nothing or the complete fsynced bytes.  Older snapshots are removed only after
 * the new one is durable (retire): renamed to .old, then shortened a few MiB at
 * a time and unlinked, because unlinking a large file on tmpfs frees all its
 * pages at once, milliseconds of CPU that a real-time program would lose.
 *
 * The first .old file is kept as a spare instead: the next commit renames it
 * to its .tmp name and writes over it, so its writes land in pages (tmpfs) or
 * blocks (a disk) already allocated.  On tmpfs that makes a 64 KiB write 2.4x
 * cheaper (12 against 29 us, median) and its longest much shorter (p99.9 60
 * against 140 us; a bare C program, 8 x 32 MB), which is the writer's CPU out
 * of the program's budget; and nothing is freed or allocated per commit.  A
 * spare more than an eighth (and 1 MiB) larger than the snapshot expected is
 * not reused (shortening it at the commit would free too much at once): it
 * is removed as any .old file.  An .old file part-way through its removal
 * serves as the spare when there is none; with neither, a committed snapshot
 * the retention rule lets go becomes the spare at the next commit's begin
 * (commits back to back leave the writer no time to retire between them).
 * Storage: the newest `keep` snapshots and one more, the spare or the commit
 * in progress, never both (and an .old file too large to be a spare, being
 * removed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sp-store.h"

#include "sp-snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct SpFileStore {
	SpStore base;
	int dir_fd;
	int lock_fd;
	int tmp_fd;              /* the snapshot in progress (begin..finish), -1 = none */
	char tmp [64];           /* its name */
	off_t flushed;           /* bytes handed to writeback already (sp_file_writeback) */
	off_t tmp_size;          /* the spare's size when the snapshot in progress writes over it, else 0 */
	int old_fd;              /* the snapshot being retired, -1 = none */
	char old [64];           /* its name (.old) */
	off_t old_size;          /* what is left of it */
	int spare_fd;            /* a retired snapshot kept for the next commit to write over, -1 = none */
	char spare [64];         /* its name (.old) */
	off_t spare_size;
	/*
	 * The committed snapshots' sequences, oldest first, as listed at open and
	 * kept since (commits append, retirement takes the oldest): retiring after
	 * each commit then costs nothing in proportion to the files.  Listing the
	 * directory each time did: a delta chain at 1 kHz holds thousands of files,
	 * and the listing's sort grew to tens of ms a commit.
	 */
	uint64_t *committed;
	size_t ncommitted, committed_cap;
} SpFileStore;

#define SP_SNAP_PREFIX "snap-"
#define SP_SNAP_SUFFIX ".spm"

static const SpStoreOps sp_file_store_ops;

/* mkdir -p */
static int
sp_file_mkdirs (const char *dir, SpError *err)
{
	char path [4096];
	if (snprintf (path, sizeof path, "%s", dir) >= (int)sizeof path)
		return sp_error_set (err, "path too long");
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir (path, 0777) < 0 && errno != EEXIST)
			return sp_error_set_errno (err, errno, "cannot create directory %s", path);
		*p = saved;
		if (!saved)
			return 0;
	}
}

/* Parse "snap-<digits>.spm" followed by `extra` ("", ".tmp" or ".old"). */
static bool
sp_file_parse_name (const char *name, const char *extra, uint64_t *seq)
{
	size_t plen = strlen (SP_SNAP_PREFIX);
	if (strncmp (name, SP_SNAP_PREFIX, plen) != 0)
		return false;
	/* Exactly the 20 digits sp_file_name writes: no sign, no blanks, no other spelling. */
	if (strspn (name + plen, "0123456789") != 20)
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull (name + plen, &end, 10);
	if (errno || end != name + plen + 20 || v == 0)
		return false;
	if (strncmp (end, SP_SNAP_SUFFIX, strlen (SP_SNAP_SUFFIX)) != 0 || strcmp (end + strlen (SP_SNAP_SUFFIX), extra) != 0)
		return false;
	*seq = v;
	return true;
}

static void
sp_file_name (char *buf, size_t cap, uint64_t seq, const char *extra)
{
	snprintf (buf, cap, SP_SNAP_PREFIX "%020" PRIu64 SP_SNAP_SUFFIX "%s", seq, extra);
}

static int
sp_file_newest_first (const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x > y ? -1 : x < y;
}

/* Sequences of the committed snapshots, newest first. */
static int
sp_file_sequences (SpFileStore *fs, uint64_t **seqs, size_t *n, bool remove_tmp, SpError *err)
{
	int fd = dup (fs->dir_fd);
	DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close (fd);
		return sp_error_set_errno (err, errno, "cannot read directory %s", fs->base.location);
	}
	rewinddir (d);
	size_t cap = 16, count = 0;
	uint64_t *v = malloc (cap * sizeof *v);
	struct dirent *de;
	while (v && (de = readdir (d))) {
		uint64_t seq;
		if (remove_tmp && (sp_file_parse_name (de->d_name, ".tmp", &seq) || sp_file_parse_name (de->d_name, ".old", &seq) ||
				   sp_file_parse_name (de->d_name, ".fold", &seq))) {
			unlinkat (fs->dir_fd, de->d_name, 0);
			continue;
		}
		if (!sp_file_parse_name (de->d_name, "", &seq))
			continue;
		if (count == cap) {
			uint64_t *bigger = realloc (v, 2 * cap * sizeof *v);
			if (!bigger) {
				free (v);
				v = NULL;
				break;
			}
			v = bigger;
			cap *= 2;
		}
		v [count++] = seq;
	}
	closedir (d);
	if (!v)
		return sp_error_set (err, "out of memory listing %s", fs->base.location);
	/* Newest first (a delta chain holds thousands of files: not an insertion sort). */
	qsort (v, count, sizeof *v, sp_file_newest_first);
	*seqs = v;
	*n = count;
	return 0;
}

/* What an empty snapshot file reads as (it is not valid, but it is not an error to read it). */
static const uint8_t sp_file_empty [1];

static int
sp_file_read (SpStore *s, uint64_t seq, uint8_t **data, size_t *size, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	char name [64];
	sp_file_name (name, sizeof name, seq, "");
	*data = NULL;
	int fd = openat (fs->dir_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sp_error_set_errno (err, errno, "cannot open %s", name);
	struct stat st;
	if (fstat (fd, &st) < 0) {
		close (fd);
		return sp_error_set_errno (err, errno, "cannot stat %s", name);
	}
	if (st.st_size == 0) {
		close (fd);
		*data = (uint8_t *)sp_file_empty;
		*size = 0;
		return 0;
	}
	/*
	 * Mapped, not read: a warm restart then touches the page cache's pages
	 * instead of faulting in and filling a fresh buffer of the same size.
	 * Snapshot files are never modified after their commit and the store is
	 * locked, so the mapping cannot shrink under the reader (a fold puts a
	 * new file in a snapshot's place by renaming it over the old one, whose
	 * inode a mapping keeps).
	 */
	void *map = mmap (NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	int saved = errno;
	close (fd);
	if (map == MAP_FAILED)
		return sp_error_set_errno (err, saved, "cannot map %s (%lld bytes)", name, (long long)st.st_size);
	uint8_t *buf = map;
	size_t got = (size_t)st.st_size;
	*data = buf;
	*size = got;
	return 0;
}

static void
sp_file_release (SpStore *s, uint8_t *data, size_t size)
{
	(void)s;
	if (data && size)
		munmap (data, size);
}

static int
sp_file_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	uint64_t *seqs;
	size_t count;
	if (sp_file_sequences (fs, &seqs, &count, false, err) < 0)
		return -1;
	SpSnapInfo *out = calloc (count ? count : 1, sizeof *out);
	if (!out) {
		free (seqs);
		return sp_error_set (err, "out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		SpSnapInfo *info = &out [i];
		char name [64];
		sp_file_name (name, sizeof name, seqs [i], "");
		info->sequence = seqs [i];
		snprintf (info->path, sizeof info->path, "%s/%s", s->location, name);
		uint8_t *data;
		size_t size;
		SpError why = { 0 };
		SpSnapHeader h;
		if (sp_file_read (s, seqs [i], &data, &size, &why) == 0) {
			info->size = size;
			info->valid = sp_snapshot_check (data, size, &h, NULL, &why) == 0;
			info->time_ns = info->valid ? h.time_ns : 0;
			sp_file_release (s, data, size);
		}
		if (!info->valid)
			snprintf (info->why, sizeof info->why, "%s", why.msg);
	}
	free (seqs);
	*infos = out;
	*n = count;
	return 0;
}

static int
sp_file_write_all (int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;
	while (done < size) {
		ssize_t w = write (fd, data + done, size - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)w;
	}
	return 0;
}

/* The .old file just opened becomes the spare (sp_file_begin writes over it). */
static void
sp_file_keep_spare (SpFileStore *fs)
{
	fs->spare_fd = fs->old_fd;
	fs->spare_size = fs->old_size;
	memcpy (fs->spare, fs->old, sizeof fs->spare);
	fs->old_fd = -1;
}

/*
 * Remove snapshots beyond the newest `keep`, about max_bytes of them a call: 1
 * when a call may find more, 0 when none is left.  Failures are harmless (a
 * file left over is removed by the next retire or open), so they end it.
 */
static int
sp_file_retire (SpStore *s, uint64_t max_bytes, SpError *err)
{
	(void)err;
	SpFileStore *fs = (SpFileStore *)s;
	if (fs->old_fd < 0) {
		uint64_t oldest = fs->ncommitted ? sp_store_retirable (s, fs->committed [0], fs->ncommitted) : 0;
		if (!oldest)
			return 0;
		char name [64];
		struct stat st;
		sp_file_name (name, sizeof name, oldest, "");
		sp_file_name (fs->old, sizeof fs->old, oldest, ".old");
		int renamed = renameat (fs->dir_fd, name, fs->dir_fd, fs->old), why = errno;
		if (renamed == 0 || why == ENOENT)
			memmove (fs->committed, fs->committed + 1, --fs->ncommitted * sizeof *fs->committed);
		if (renamed < 0)
			return why == ENOENT ? 1 : 0;       /* gone already (removed by hand): the next one */
		fs->old_fd = openat (fs->dir_fd, fs->old, O_WRONLY | O_CLOEXEC);
		if (fs->old_fd < 0 || fstat (fs->old_fd, &st) < 0) {
			if (fs->old_fd >= 0)
				close (fs->old_fd);
			fs->old_fd = -1;
			unlinkat (fs->dir_fd, fs->old, 0);
			return 1;
		}
		fs->old_size = st.st_size;
		if (fs->spare_fd < 0) {
			sp_file_keep_spare (fs);
			return 1;
		}
	}
	if ((uint64_t)fs->old_size > max_bytes) {
		fs->old_size -= (off_t)max_bytes;
		if (ftruncate (fs->old_fd, fs->old_size) == 0)
			return 1;
	}
	close (fs->old_fd);
	fs->old_fd = -1;
	unlinkat (fs->dir_fd, fs->old, 0);
	return 1;
}

/*
 * Tests: a commit stops, as a crash of the process would, before its n-th
 * step (counted from 1: create the temporary file, write it (each append is
 * a step), fsync it, rename it, fsync the directory); 0: never.  Nothing is
 * cleaned up, as after a crash.
 */
unsigned sp_store_file_crash_before_step;

static int
sp_file_crash_now (SpError *err)
{
	if (sp_store_file_crash_before_step && --sp_store_file_crash_before_step == 0) {
		sp_error_set (err, "simulated crash");
		return 1;
	}
	return 0;
}

/* A simulated crash leaves everything where it is: forget the file without removing it. */
static int
sp_file_crashed (SpFileStore *fs)
{
	if (fs->tmp_fd >= 0)
		close (fs->tmp_fd);
	fs->tmp_fd = -1;
	fs->tmp [0] = '\0';
	return -1;
}

/*
 * The spare becomes the snapshot in progress (fs->tmp named already) when it
 * is not much larger than the snapshot expected; else it is retired as any
 * .old file.  true: fs->tmp_fd is open on it.
 */
static bool
sp_file_take_spare (SpFileStore *fs, uint64_t size_hint)
{
	/*
	 * No spare, but a snapshot part-way through its removal: it serves as
	 * one.  Commits back to back retire two snapshots at once (the writer
	 * never idles between cycles); the second was shortened a slice at a
	 * time while the next snapshot allocated its pages anew, and every other
	 * cycle of an int[10,000,000] on tmpfs took 300 ms instead of 185.
	 */
	if (fs->spare_fd < 0 && fs->old_fd >= 0)
		sp_file_keep_spare (fs);
	/*
	 * No spare and nothing being removed, but a snapshot beyond the newest
	 * `keep` (retention says it may go): it becomes the spare now, as the
	 * retire's first step would make it.  The writer retires only between
	 * snapshots, and while commits run back to back there is no between: a
	 * file store on tmpfs kept 4-5 snapshots where 2 were asked for, and
	 * three commits in four wrote new files, their 64 KiB writes 30 us at the
	 * median and 128 us at p99 where writes over a spare take 12 and 60.
	 */
	if (fs->spare_fd < 0 && fs->old_fd < 0)
		sp_file_retire (&fs->base, 0, NULL);
	if (fs->spare_fd < 0)
		return false;
	int fd = fs->spare_fd;
	fs->spare_fd = -1;
	bool fits = (uint64_t)fs->spare_size <= size_hint + size_hint / 8 + (1u << 20);
	if (fits && lseek (fd, 0, SEEK_SET) == 0 && renameat (fs->dir_fd, fs->spare, fs->dir_fd, fs->tmp) == 0) {
		fs->tmp_fd = fd;
		fs->tmp_size = fs->spare_size;
		return true;
	}
	if (fs->old_fd < 0) {
		fs->old_fd = fd;
		fs->old_size = fs->spare_size;
		memcpy (fs->old, fs->spare, sizeof fs->old);
	} else {
		close (fd);
		unlinkat (fs->dir_fd, fs->spare, 0);
	}
	return false;
}

static int
sp_file_begin (SpStore *s, uint64_t seq, uint64_t size_hint, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	if (sp_file_crash_now (err))
		return -1;
	sp_file_name (fs->tmp, sizeof fs->tmp, seq, ".tmp");
	fs->flushed = 0;
	fs->tmp_size = 0;
	if (sp_file_take_spare (fs, size_hint))
		return 0;
	fs->tmp_fd = openat (fs->dir_fd, fs->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fs->tmp_fd < 0)
		return sp_error_set_errno (err, errno, "cannot create %s/%s", s->location, fs->tmp);
	return 0;
}

/*
 * Start the kernel writing what was appended (sync_file_range, which does not
 * wait), as it is appended (sp-stream.h calls this every 512 KiB): the final
 * fsync then finds little left, so the commit's one step that takes time in
 * proportion to the snapshot shrinks to waiting for the device, not
 * queueing all of it at once.  An error here is not fatal: fsync reports
 * what matters.  Queueing the writeback is CPU work in this thread, in
 * proportion to the bytes (the file system maps the blocks, the block layer
 * builds the requests): 4 MiB at a time took 100-430 us on ext4 here, a
 * stall in one of the writer's slices out of 64 that broke the pause bound
 * once a cycle for every 4 MiB (session 14).  512 KiB take 100-140 us, a
 * step of the writer's own since session 23.  (Every slice's 64 KiB was
 * tried: no better for the longest gap, and many small requests.)
 */
static void
sp_file_writeback (SpStore *s)
{
	SpFileStore *fs = (SpFileStore *)s;
#ifdef SYNC_FILE_RANGE_WRITE
	off_t end = (off_t)s->written;
	if (end > fs->flushed)
		sync_file_range (fs->tmp_fd, fs->flushed, end - fs->flushed, SYNC_FILE_RANGE_WRITE);
	fs->flushed = end;
#else
	(void)fs;
#endif
}

static int
sp_file_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	if (sp_file_crash_now (err))
		return sp_file_crashed (fs);
	if (sp_file_write_all (fs->tmp_fd, data, size) < 0)
		return sp_error_set_errno (err, errno, "committing snapshot %" PRIu64 " to %s failed at write",
					   s->writing, s->location);
	return 0;
}

/* Snapshot seq is committed: the newest (if memory runs out, retirement waits for the next open). */
static void
sp_file_note_committed (SpFileStore *fs, uint64_t seq)
{
	if (fs->ncommitted == fs->committed_cap) {
		size_t cap = fs->committed_cap ? 2 * fs->committed_cap : 16;
		uint64_t *grown = realloc (fs->committed, cap * sizeof *grown);
		if (!grown)
			return;
		fs->committed = grown;
		fs->committed_cap = cap;
	}
	fs->committed [fs->ncommitted++] = seq;
}

static int
sp_file_finish (SpStore *s, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	char final [64];
	sp_file_name (final, sizeof final, s->writing, "");
	if (sp_file_crash_now (err))
		return sp_file_crashed (fs);
	const char *step = "ftruncate";
	int rc = 0, saved = 0;
	/* Written over a larger spare: its tail goes (the snapshot ends at its trailer). */
	if (fs->tmp_size > (off_t)s->written && ftruncate (fs->tmp_fd, (off_t)s->written) < 0) {
		rc = -1;
		saved = errno;
	}
	if (rc == 0) {
		step = "fsync";
		rc = fsync (fs->tmp_fd);
		saved = errno;
	}
	if (close (fs->tmp_fd) < 0 && rc == 0) {
		rc = -1;
		saved = errno;
		step = "close";
	}
	fs->tmp_fd = -1;
	if (rc == 0 && sp_file_crash_now (err))
		return sp_file_crashed (fs);
	if (rc == 0 && (step = "rename", renameat (fs->dir_fd, fs->tmp, fs->dir_fd, final) < 0)) {
		rc = -1;
		saved = errno;
	}
	if (rc < 0)
		return sp_error_set_errno (err, saved, "committing snapshot %" PRIu64 " to %s failed at %s",
					   s->writing, s->location, step);
	fs->tmp [0] = '\0';
	/* The rename is durable only once the directory is. */
	if (sp_file_crash_now (err))
		return -1;
	if (fsync (fs->dir_fd) < 0)
		return sp_error_set_errno (err, errno, "committing snapshot %" PRIu64 " to %s failed at directory fsync",
					   s->writing, s->location);
	sp_file_note_committed (fs, s->writing);
	return 0;
}

/* The temporary file goes (a crash would leave it for the next open to remove). */
static void
sp_file_abort (SpStore *s)
{
	SpFileStore *fs = (SpFileStore *)s;
	if (fs->tmp_fd >= 0)
		close (fs->tmp_fd);
	fs->tmp_fd = -1;
	if (fs->tmp [0])
		unlinkat (fs->dir_fd, fs->tmp, 0);
	fs->tmp [0] = '\0';
}

/* Where a replacement's bytes go: its own file, apart from the commit in progress. */
typedef struct SpFileReplacing {
	SpFileStore *fs;
	int fd;
	const char *name;
	uint64_t written;
	bool crashed;            /* a simulated crash: the file stays, as after a real one */
} SpFileReplacing;

static bool
sp_file_replace_crash (SpFileReplacing *r, SpError *err)
{
	return r->crashed = r->crashed || sp_file_crash_now (err);
}

static int
sp_file_replace_write (void *ctx, const uint8_t *data, size_t size, SpError *err)
{
	SpFileReplacing *r = ctx;
	if (sp_file_replace_crash (r, err))
		return -1;
	if (sp_file_write_all (r->fd, data, size) < 0)
		return sp_error_set_errno (err, errno, "writing %s/%s failed", r->fs->base.location, r->name);
	r->written += size;
	return 0;
}

/*
 * Replace snapshot seq: its new bytes go to snap-<seq>.spm.fold, which is
 * fsynced and renamed over snap-<seq>.spm, then the directory fsynced (as a
 * commit: the name holds the old bytes or the new ones).  The .fold name is
 * removed at open, as .tmp is.  Touches nothing a commit in progress uses.
 * Crash points (sp_store_file_crash_before_step): create, each write, fsync,
 * rename, directory fsync.
 */
/* The replacement's file is written and durable (its error, when not, is err's). */
static int
sp_file_replace_fill (SpFileReplacing *r, SpProduceFn produce, void *ctx, SpError *err)
{
	if (produce (ctx, sp_file_replace_write, r, err) < 0 || sp_file_replace_crash (r, err))
		return -1;
	if (fsync (r->fd) < 0)
		return sp_error_set_errno (err, errno, "replacing a snapshot in %s failed at fsync", r->fs->base.location);
	return 0;
}

static int
sp_file_replace (SpStore *s, uint64_t seq, SpProduceFn produce, void *ctx, SpError *err)
{
	SpFileStore *fs = (SpFileStore *)s;
	char name [64], final [64];
	sp_file_name (name, sizeof name, seq, ".fold");
	sp_file_name (final, sizeof final, seq, "");
	if (sp_file_crash_now (err))
		return -1;
	SpFileReplacing r = { .fs = fs, .name = name };
	r.fd = openat (fs->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r.fd < 0)
		return sp_error_set_errno (err, errno, "cannot create %s/%s", s->location, name);
	int rc = sp_file_replace_fill (&r, produce, ctx, err);
	close (r.fd);
	if (rc == 0 && sp_file_replace_crash (&r, err))
		rc = -1;
	if (rc == 0 && renameat (fs->dir_fd, name, fs->dir_fd, final) < 0)
		rc = sp_error_set_errno (err, errno, "replacing snapshot %" PRIu64 " in %s failed at rename", seq, s->location);
	if (rc < 0) {
		if (!r.crashed)
			unlinkat (fs->dir_fd, name, 0);
		return -1;
	}
	if (sp_file_crash_now (err))
		return -1;
	if (fsync (fs->dir_fd) < 0)
		return sp_error_set_errno (err, errno, "replacing snapshot %" PRIu64 " in %s failed at directory fsync", seq, s->location);
	return 0;
}

static void
sp_file_close (SpStore *s)
{
	SpFileStore *fs = (SpFileStore *)s;
	if (fs->old_fd >= 0)
		close (fs->old_fd);        /* the .old files go at the next open */
	if (fs->spare_fd >= 0)
		close (fs->spare_fd);
	if (fs->lock_fd >= 0)
		close (fs->lock_fd);       /* releases the flock */
	if (fs->dir_fd >= 0)
		close (fs->dir_fd);
	free (fs->committed);
	free (s->location);
	free (fs);
}

static int
sp_file_sequences_op (SpStore *s, uint64_t **seqs, size_t *n, SpError *err)
{
	return sp_file_sequences ((SpFileStore *)s, seqs, n, false, err);
}

static const SpStoreOps sp_file_store_ops = {
	.name = "file",
	.list = sp_file_list,
	.sequences = sp_file_sequences_op,
	.read = sp_file_read,
	.release = sp_file_release,
	.begin = sp_file_begin,
	.append = sp_file_append,
	.writeback = sp_file_writeback,
	.finish = sp_file_finish,
	.abort = sp_file_abort,
	.retire = sp_file_retire,
	.close = sp_file_close,
	.replace = sp_file_replace,
};

/* Exclusive use of the store: flock the LOCK file, record our pid for the next one's message. */
static int
sp_file_lock (SpFileStore *fs, SpError *err)
{
	fs->lock_fd = openat (fs->dir_fd, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fs->lock_fd < 0)
		return sp_error_set_errno (err, errno, "cannot open its LOCK file");
	if (flock (fs->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int saved = errno;
		char pid [32] = "";
		ssize_t r = pread (fs->lock_fd, pid, sizeof pid - 1, 0);
		pid [r > 0 ? r : 0] = '\0';
		pid [strcspn (pid, "\n")] = '\0';
		if (saved == EWOULDBLOCK)
			return sp_error_set (err, "in use by another process (pid %s); one process at a time may use a store",
					     pid [0] ? pid : "unknown");
		return sp_error_set_errno (err, saved, "cannot lock it");
	}
	char pid [32];
	int len = snprintf (pid, sizeof pid, "%ld\n", (long)getpid ());
	if (ftruncate (fs->lock_fd, 0) < 0 || pwrite (fs->lock_fd, pid, (size_t)len, 0) != len)
		return sp_error_set_errno (err, errno, "cannot write its LOCK file");
	return 0;
}

int
sp_store_file_open (const char *dir, bool readonly, SpStore **out, SpError *err)
{
	if (!readonly && sp_file_mkdirs (dir, err) < 0)
		return -1;
	SpFileStore *fs = calloc (1, sizeof *fs);
	if (!fs || !(fs->base.location = strdup (dir))) {
		free (fs);
		return sp_error_set (err, "out of memory");
	}
	fs->base.ops = &sp_file_store_ops;
	fs->base.keep = 2;
	fs->lock_fd = -1;
	fs->tmp_fd = -1;
	fs->old_fd = -1;
	fs->spare_fd = -1;
	fs->dir_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->dir_fd < 0) {
		sp_error_set_errno (err, errno, "cannot open directory");
		sp_file_close (&fs->base);
		return -1;
	}
	uint64_t *seqs;
	size_t n;
	/* Read-only: no lock, and a commit in progress (.tmp) is the owner's to remove. */
	if ((!readonly && sp_file_lock (fs, err) < 0) || sp_file_sequences (fs, &seqs, &n, !readonly, err) < 0) {
		sp_file_close (&fs->base);
		return -1;
	}
	fs->base.last_sequence = n ? seqs [0] : 0;
	for (size_t i = n; i > 0; i--)
		sp_file_note_committed (fs, seqs [i - 1]);
	free (seqs);
	*out = &fs->base;
	return 0;
}
