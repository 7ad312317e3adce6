/* test_store.c: the file and pmem stores: commit, keep, list, load with fallback, crashes, locking, leftovers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* mkdtemp, nftw */
#endif
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "craft-chain.h"
#include "sp-chain.h"
#include "sp-fold.h"
#include "fake-objects.h"
#include "sp-serialize.h"
#include "sp-snapshot.h"
#include "sp-store.h"
#include "sp-stream.h"

#include <signal.h>
#include <sys/resource.h>

typedef struct Fixture {
	char dir [256];         /* the mkdtemp directory */
	char store [300];       /* the store inside it (created by open) */
} Fixture;

static int
setup (void **state)
{
	Fixture *f = calloc (1, sizeof *f);
	snprintf (f->dir, sizeof f->dir, "/tmp/sp-store-test-XXXXXX");
	if (!mkdtemp (f->dir))
		return -1;
	snprintf (f->store, sizeof f->store, "%s/nested/app.spstore", f->dir);
	*state = f;
	return 0;
}

static int
rm_entry (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove (path);
}

static int
teardown (void **state)
{
	Fixture *f = *state;
	nftw (f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free (f);
	fake_reset ();
	return 0;
}

/* A valid snapshot of sequence `seq`: one root, a string naming the sequence, `extra` bytes longer. */
static void
make_snapshot_padded (uint64_t seq, size_t extra, SpBuf *out)
{
	char *text = malloc (extra + 64);
	int n = snprintf (text, 64, "snapshot number %llu", (unsigned long long)seq);
	memset (text + n, 'x', extra);
	text [n + extra] = '\0';
	SpSerializer ser;
	SpError err = { 0 };
	sp_buf_init (out);
	assert_int_equal (sp_ser_init (&ser), 0);
	SpSnapHeader h = { .sequence = seq, .time_ns = seq * 1000 + 7 };
	assert_ok (sp_ser_begin (&ser, out, &h, &err), &err);
	assert_ok (sp_ser_root (&ser, 1, fake_new_string_ascii (text), &err), &err);
	while (sp_ser_step (&ser, 16, &err) == 1)
		;
	assert_ok (sp_ser_finish (&ser, &err), &err);
	sp_ser_free (&ser);
	free (text);
}

static void
make_snapshot (uint64_t seq, SpBuf *out)
{
	make_snapshot_padded (seq, 0, out);
}

static void
commit (SpStore *st, uint64_t seq)
{
	SpBuf b;
	SpError err = { 0 };
	make_snapshot (seq, &b);
	assert_ok (sp_store_commit (st, b.data, b.len, seq, &err), &err);
	sp_buf_free (&b);
}

static SpStore *
open_ok (const char *location, unsigned keep)
{
	SpStore *st = NULL;
	SpError err = { 0 };
	assert_ok (sp_store_open (location, keep, &st, &err), &err);
	assert_non_null (st);
	return st;
}

static void
file_path (const Fixture *f, uint64_t seq, const char *suffix, char *out, size_t cap)
{
	snprintf (out, cap, "%s/snap-%020llu.spm%s", f->store, (unsigned long long)seq, suffix);
}

/* Names in the store directory other than LOCK, sorted, joined by spaces. */
static void
dir_listing (const char *dir, char *out, size_t cap)
{
	struct dirent **names;
	int n = scandir (dir, &names, NULL, alphasort);
	assert_true (n >= 0);
	out [0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *name = names [i]->d_name;
		if (strcmp (name, ".") && strcmp (name, "..") && strcmp (name, "LOCK")) {
			size_t len = strlen (out);
			snprintf (out + len, cap - len, "%s%s", len ? " " : "", name);
		}
		free (names [i]);
	}
	free (names);
}

static void
write_file (const char *path, const void *data, size_t size)
{
	FILE *fp = fopen (path, "wb");
	assert_non_null (fp);
	assert_int_equal (fwrite (data, 1, size, fp), size);
	assert_int_equal (fclose (fp), 0);
}

static void
read_whole (const char *path, uint8_t **data, size_t *size)
{
	FILE *fp = fopen (path, "rb");
	assert_non_null (fp);
	fseek (fp, 0, SEEK_END);
	*size = (size_t)ftell (fp);
	fseek (fp, 0, SEEK_SET);
	*data = malloc (*size ? *size : 1);
	assert_int_equal (fread (*data, 1, *size, fp), *size);
	fclose (fp);
}

/* ---- tests ------------------------------------------------------------------ */

static void
test_keep_two_of_three (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);   /* "mkdir -p" of nested/app.spstore */
	assert_true (sp_store_next_sequence (st) == 1);
	for (uint64_t seq = 1; seq <= 3; seq++) {
		commit (st, seq);
		assert_true (sp_store_next_sequence (st) == seq + 1);
	}
	char listing [1024];
	dir_listing (f->store, listing, sizeof listing);
	/* Snapshot 1, beyond the two kept, is the spare the next commit writes over. */
	assert_string_equal (listing, "snap-00000000000000000001.spm.old snap-00000000000000000002.spm snap-00000000000000000003.spm");

	SpSnapInfo *infos;
	size_t n;
	SpError err = { 0 };
	assert_ok (sp_store_list (st, &infos, &n, &err), &err);
	assert_int_equal (n, 2);
	for (size_t i = 0; i < n; i++) {
		uint64_t seq = 3 - i;     /* newest first */
		assert_true (infos [i].sequence == seq);
		assert_true (infos [i].valid);
		assert_true (infos [i].time_ns == seq * 1000 + 7);
		SpBuf b;
		make_snapshot (seq, &b);
		assert_true (infos [i].size == b.len);
		sp_buf_free (&b);
		char path [512];
		file_path (f, seq, "", path, sizeof path);
		assert_string_equal (infos [i].path, path);
	}
	free (infos);
	sp_store_close (st);
}

static void
test_committed_snapshots_are_never_modified (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 3);
	commit (st, 1);
	char path [512];
	file_path (f, 1, "", path, sizeof path);
	uint8_t *before, *after;
	size_t before_size, after_size;
	read_whole (path, &before, &before_size);
	commit (st, 2);
	commit (st, 3);
	read_whole (path, &after, &after_size);
	assert_int_equal (before_size, after_size);
	assert_memory_equal (before, after, before_size);
	/* And it is exactly what was committed. */
	SpBuf b;
	make_snapshot (1, &b);
	assert_int_equal (before_size, b.len);
	assert_memory_equal (before, b.data, b.len);
	sp_buf_free (&b);
	free (before);
	free (after);
	/* A sequence not after the last is refused, and changes nothing. */
	make_snapshot (2, &b);
	SpError err = { 0 };
	assert_fails (sp_store_commit (st, b.data, b.len, 2, &err), &err);
	assert_fails (sp_store_commit (st, b.data, b.len, 3, &err), &err);
	sp_buf_free (&b);
	assert_true (sp_store_next_sequence (st) == 4);
	sp_store_close (st);
}

static void
test_reopen_continues_sequence (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 1);
	commit (st, 2);
	sp_store_close (st);
	st = open_ok (f->store, 2);
	assert_true (sp_store_next_sequence (st) == 3);
	commit (st, 3);
	sp_store_close (st);
	/* With the file prefix, and a gap in the numbering. */
	char loc [400];
	snprintf (loc, sizeof loc, "file:%s", f->store);
	st = open_ok (loc, 2);
	assert_true (sp_store_next_sequence (st) == 4);
	commit (st, 10);
	sp_store_close (st);
	st = open_ok (f->store, 2);
	assert_true (sp_store_next_sequence (st) == 11);
	sp_store_close (st);
}

typedef struct Warnings {
	int count;
	char last [SP_ERROR_MAX + 256];
} Warnings;

static void
collect_warning (void *ctx, const char *message)
{
	Warnings *w = ctx;
	w->count++;
	snprintf (w->last, sizeof w->last, "%s", message);
}

static void
load_expect (SpStore *st, uint64_t want_seq, Warnings *w)
{
	SpLoaded loaded;
	SpError err = { 0 };
	assert_ok (sp_store_load_newest (st, NULL, NULL, collect_warning, w, &loaded, &err), &err);
	assert_true (loaded.sequence == want_seq);
	if (!want_seq) {
		assert_null (loaded.parts);
		return;
	}
	assert_int_equal (loaded.n, 1);
	SpBuf b;
	make_snapshot (want_seq, &b);
	assert_int_equal (loaded.parts [0].size, b.len);
	assert_memory_equal (loaded.parts [0].data, b.data, b.len);
	sp_buf_free (&b);
	sp_store_release_loaded (st, &loaded);
}

static void
test_load_newest (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	Warnings w = { 0 };
	load_expect (st, 0, &w);     /* empty store: nothing, no error */
	assert_int_equal (w.count, 0);
	commit (st, 1001);
	commit (st, 1002);
	commit (st, 1003);
	load_expect (st, 1003, &w);
	assert_int_equal (w.count, 0);
	sp_store_close (st);
}

static void
test_damaged_newest_falls_back (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 1001);
	commit (st, 1002);
	commit (st, 1003);
	char path [512];
	file_path (f, 1003, "", path, sizeof path);
	uint8_t *data;
	size_t size;
	read_whole (path, &data, &size);
	data [size / 2] ^= 0x10;
	write_file (path, data, size);
	free (data);

	SpSnapInfo *infos;
	size_t n;
	SpError err = { 0 };
	assert_ok (sp_store_list (st, &infos, &n, &err), &err);
	assert_int_equal (n, 2);
	assert_true (infos [0].sequence == 1003);
	assert_false (infos [0].valid);
	assert_true (infos [0].why [0] != '\0');
	assert_true (infos [1].valid);
	free (infos);

	Warnings w = { 0 };
	load_expect (st, 1002, &w);
	assert_int_equal (w.count, 1);
	assert_contains (w.last, "1003");

	/* Both damaged: nothing to load, two warnings, no error. */
	file_path (f, 1002, "", path, sizeof path);
	read_whole (path, &data, &size);
	write_file (path, data, size - 1);   /* truncated */
	free (data);
	w = (Warnings){ 0 };
	load_expect (st, 0, &w);
	assert_int_equal (w.count, 2);
	assert_contains (w.last, "1002");
	sp_store_close (st);
}

typedef struct Verdicts {
	uint64_t fatal_seq;     /* the snapshot whose bytes name this sequence is fatal */
	uint64_t skip_seq;
	int calls;
} Verdicts;

static uint64_t
sequence_of (const uint8_t *data, size_t size)
{
	SpSnapHeader h;
	return sp_snapshot_check (data, size, &h, NULL, NULL) == 0 ? h.sequence : 0;
}

static int
judge (void *ctx, const SpChainPart *parts, size_t n, size_t *failed, SpError *err)
{
	Verdicts *v = ctx;
	v->calls++;
	*failed = n - 1;
	uint64_t seq = sequence_of (parts [n - 1].data, parts [n - 1].size);
	if (seq == v->fatal_seq) {
		sp_error_set (err, "class App.Node from assembly App cannot be found");
		return SP_ACCEPT_FATAL;
	}
	if (seq == v->skip_seq) {
		sp_error_set (err, "layout of App.Node changed");
		return SP_ACCEPT_SKIP;
	}
	return 0;
}

static void
test_accept_callback (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 3);
	commit (st, 1001);
	commit (st, 1002);
	commit (st, 1003);
	SpLoaded loaded;
	SpError err = { 0 };
	Warnings w = { 0 };

	/* SKIP: the next older one is taken, the skip is reported with accept's reason. */
	Verdicts v = { .skip_seq = 1003 };
	assert_ok (sp_store_load_newest (st, judge, &v, collect_warning, &w, &loaded, &err), &err);
	assert_true (loaded.sequence == 1002);
	assert_true (sequence_of (loaded.parts [0].data, loaded.parts [0].size) == 1002);
	assert_int_equal (v.calls, 2);
	assert_int_equal (w.count, 1);
	assert_contains (w.last, "1003");
	assert_contains (w.last, "layout of App.Node changed");
	sp_store_release_loaded (st, &loaded);

	/* FATAL: load fails with accept's error, naming the snapshot; nothing older is tried. */
	v = (Verdicts){ .fatal_seq = 1003 };
	w = (Warnings){ 0 };
	assert_int_equal (sp_store_load_newest (st, judge, &v, collect_warning, &w, &loaded, &err), -1);
	assert_null (loaded.parts);
	assert_int_equal (v.calls, 1);
	assert_contains (err.msg, "class App.Node from assembly App cannot be found");
	assert_contains (err.msg, "1003");
	/* FATAL after a skip. */
	v = (Verdicts){ .skip_seq = 1003, .fatal_seq = 1002 };
	assert_int_equal (sp_store_load_newest (st, judge, &v, collect_warning, &w, &loaded, &err), -1);
	assert_int_equal (v.calls, 2);
	assert_contains (err.msg, "1002");
	sp_store_close (st);
}

/* ---- delta chains (the store keeps them; the core links them) ------------------- */

#define CHAIN_PARTS 4

/* Snapshots 1..4: 1 full (Node 1 = { 1 }), each next a delta giving Node 1 again = { its sequence }. */
static void
commit_chain (SpStore *st, Part *parts)
{
	for (size_t i = 0; i < CHAIN_PARTS; i++) {
		Part *p = &parts [i];
		part_begin (p, 1 + i, i ? &parts [0] : NULL, i ? &parts [i - 1] : NULL);
		put_class_node (&p->b, 1);
		put_node (&p->b, 1, 1, (int32_t)(1 + i), 0);
		put_root (&p->b, 1, 1);
		part_finish (p, 1, 1, 1);
		SpError err = { 0 };
		assert_ok (sp_store_commit (st, p->b.data, p->b.len, 1 + i, &err), &err);
	}
}

static void
free_parts (Part *parts)
{
	for (size_t i = 0; i < CHAIN_PARTS; i++)
		sp_buf_free (&parts [i].b);
}

/* The newest loads with its whole chain, oldest first, byte for byte. */
static void
load_chain_expect (SpStore *st, const Part *parts, uint64_t newest, Warnings *w)
{
	SpLoaded loaded;
	SpError err = { 0 };
	assert_ok (sp_store_load_newest (st, NULL, NULL, collect_warning, w, &loaded, &err), &err);
	assert_true (loaded.sequence == newest);
	assert_int_equal (loaded.n, newest);
	for (size_t k = 0; k < loaded.n; k++) {
		assert_true (loaded.sequences [k] == 1 + k);
		assert_int_equal (loaded.parts [k].size, parts [k].b.len);
		assert_memory_equal (loaded.parts [k].data, parts [k].b.data, parts [k].b.len);
	}
	sp_store_release_loaded (st, &loaded);
}

static void
damage_file (const Fixture *f, uint64_t seq)
{
	char path [512];
	uint8_t *data;
	size_t size;
	file_path (f, seq, "", path, sizeof path);
	read_whole (path, &data, &size);
	data [size / 2] ^= 0x10;
	write_file (path, data, size);
	free (data);
}

static void
test_chain_loads_whole (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	st->retain_from = 1;                       /* keep the whole chain, not the 2 newest */
	Part parts [CHAIN_PARTS];
	commit_chain (st, parts);
	Warnings w = { 0 };
	load_chain_expect (st, parts, 4, &w);
	assert_int_equal (w.count, 0);
	free_parts (parts);
	sp_store_close (st);
}

/* A damaged delta ends the chain before it: the newest intact prefix loads, never a mix. */
static void
test_damaged_delta_loads_the_prefix (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	st->retain_from = 1;
	Part parts [CHAIN_PARTS];
	commit_chain (st, parts);
	damage_file (f, 3);
	Warnings w = { 0 };
	load_chain_expect (st, parts, 2, &w);
	assert_int_equal (w.count, 2);             /* 3 (its checksum), then 4 (its chain needs 3) */
	assert_contains (w.last, "snapshot 4");
	assert_contains (w.last, "needs snapshot 3, which is damaged");
	/* A missing delta does the same: 3 repaired, 2 removed, 1 is what loads. */
	char path [512];
	file_path (f, 3, "", path, sizeof path);
	write_file (path, parts [2].b.data, parts [2].b.len);
	file_path (f, 2, "", path, sizeof path);
	assert_int_equal (unlink (path), 0);
	w = (Warnings){ 0 };
	load_chain_expect (st, parts, 1, &w);
	assert_int_equal (w.count, 2);
	assert_contains (w.last, "lacks");
	free_parts (parts);
	sp_store_close (st);
}

typedef struct ChainVerdicts {
	unsigned calls;
	size_t fail_part;          /* of the first chain accept sees */
} ChainVerdicts;

static int
judge_chain (void *ctx, const SpChainPart *parts, size_t n, size_t *failed, SpError *err)
{
	(void)parts;
	ChainVerdicts *v = ctx;
	if (v->calls++ > 0 || v->fail_part >= n)
		return 0;
	*failed = v->fail_part;
	sp_error_set (err, "object 1 is a string, but a delta gives it as a App.Node");
	return SP_ACCEPT_SKIP;
}

/* When the restorer finds part k damaged, every chain through it is skipped without decoding it again. */
static void
test_chain_skipped_at_the_part_accept_names (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	st->retain_from = 1;
	Part parts [CHAIN_PARTS];
	commit_chain (st, parts);
	ChainVerdicts v = { .fail_part = 1 };      /* snapshot 2 */
	Warnings w = { 0 };
	SpLoaded loaded;
	SpError err = { 0 };
	assert_ok (sp_store_load_newest (st, judge_chain, &v, collect_warning, &w, &loaded, &err), &err);
	assert_true (loaded.sequence == 1);
	assert_int_equal (loaded.n, 1);
	assert_int_equal (v.calls, 2);             /* chain 1-4, then 1: not 1-3 nor 1-2 */
	assert_int_equal (w.count, 3);             /* 2 (accept's reason), 4, 3 */
	sp_store_release_loaded (st, &loaded);
	free_parts (parts);
	sp_store_close (st);
}

/* Retention keeps every snapshot from retain_from on, whatever keep says. */
static void
test_retain_from_keeps_the_chain (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 1);
	st->retain_from = 1;
	Part parts [CHAIN_PARTS];
	commit_chain (st, parts);
	char listing [1024];
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000001.spm snap-00000000000000000002.spm "
			     "snap-00000000000000000003.spm snap-00000000000000000004.spm");
	st->retain_from = 3;
	while (sp_store_retire (st, UINT64_MAX))
		;
	dir_listing (f->store, listing, sizeof listing);
	/* 1 is kept as the spare (renamed .old) for the next commit to write over. */
	assert_string_equal (listing, "snap-00000000000000000001.spm.old snap-00000000000000000003.spm "
			     "snap-00000000000000000004.spm");
	free_parts (parts);
	sp_store_close (st);
}

static void
test_leftover_tmp_is_removed_and_never_loaded (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 1);
	sp_store_close (st);
	/* A crash during commit 2 left its temporary file: complete bytes, even. */
	char tmp [512];
	file_path (f, 2, ".tmp", tmp, sizeof tmp);
	SpBuf b;
	make_snapshot (2, &b);
	write_file (tmp, b.data, b.len);
	sp_buf_free (&b);
	assert_int_equal (access (tmp, F_OK), 0);

	st = open_ok (f->store, 2);
	assert_int_equal (access (tmp, F_OK), -1);
	assert_true (sp_store_next_sequence (st) == 2);
	Warnings w = { 0 };
	load_expect (st, 1, &w);
	assert_int_equal (w.count, 0);
	char listing [1024];
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000001.spm");
	/* Sequence 2 can be committed for real. */
	commit (st, 2);
	load_expect (st, 2, &w);
	sp_store_close (st);
}

static void
test_second_open_in_process_fails (void **state)
{
	Fixture *f = *state;
	SpStore *first = open_ok (f->store, 2);
	SpStore *second = (SpStore *)0x1;
	SpError err = { 0 };
	assert_fails (sp_store_open (f->store, 2, &second, &err), &err);
	assert_null (second);
	assert_contains (err.msg, "in use");
	assert_contains (err.msg, f->store);
	/* The failed attempt did not break the holder's lock or its store. */
	commit (first, 1);
	assert_fails (sp_store_open (f->store, 2, &second, &err), &err);
	sp_store_close (first);
	/* Released on close. */
	second = open_ok (f->store, 2);
	sp_store_close (second);
}

static void
test_second_open_in_other_process_fails (void **state)
{
	Fixture *f = *state;
	SpStore *first = open_ok (f->store, 2);
	fflush (NULL);
	pid_t pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		SpStore *st = NULL;
		SpError err = { 0 };
		int rc = sp_store_open (f->store, 2, &st, &err);
		char want [64];
		snprintf (want, sizeof want, "pid %ld", (long)getppid ());
		/* 0: refused, saying in use and by whom. */
		_exit (rc == -1 && strstr (err.msg, "in use") && strstr (err.msg, want) ? 0 : 1);
	}
	int status;
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status));
	assert_int_equal (WEXITSTATUS (status), 0);
	sp_store_close (first);
	/* Once closed, another process may take it. */
	fflush (NULL);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		SpStore *st = NULL;
		int rc = sp_store_open (f->store, 2, &st, NULL);
		if (rc == 0)
			sp_store_close (st);
		_exit (rc == 0 ? 0 : 1);
	}
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status));
	assert_int_equal (WEXITSTATUS (status), 0);
}

static void
test_bad_locations (void **state)
{
	Fixture *f = *state;
	SpStore *st = (SpStore *)0x1;
	SpError err = { 0 };
	/* A regular file where the directory should be. */
	char file [400];
	snprintf (file, sizeof file, "%s/plain-file", f->dir);
	write_file (file, "x", 1);
	assert_fails (sp_store_open (file, 2, &st, &err), &err);
	assert_null (st);
	assert_contains (err.msg, file);
	assert_int_not_equal (err.code, 0);
	/* ... or on the way to it. */
	char below [450];
	snprintf (below, sizeof below, "%s/plain-file/store", f->dir);
	assert_fails (sp_store_open (below, 2, &st, &err), &err);
	assert_contains (err.msg, below);
	/* keep = 0, empty locations, a store type this build lacks. */
	assert_fails (sp_store_open (f->store, 0, &st, &err), &err);
	assert_null (st);
	assert_int_equal (access (f->store, F_OK), -1);   /* refused before creating anything */
	assert_fails (sp_store_open ("", 2, &st, &err), &err);
	assert_fails (sp_store_open ("file:", 2, &st, &err), &err);
	assert_fails (sp_store_open ("pmem:/mnt/pmem0/x", 2, &st, &err), &err);
	assert_contains (err.msg, "pmem");
}

/*
 * Only the store's own names are snapshots: files a person copied in, or
 * names that merely start like one, are neither listed nor counted.
 */
static void
test_foreign_names_are_ignored (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 3);
	sp_store_close (st);
	SpBuf b;
	make_snapshot (9, &b);
	const char *const foreign [] = { "snap--1.spm", "snap-+9.spm", "snap- 9.spm", "snap-9.spm", "snap-00000000000000000009.spm.bak" };
	for (size_t i = 0; i < sizeof foreign / sizeof foreign [0]; i++) {
		char path [512];
		snprintf (path, sizeof path, "%s/%s", f->store, foreign [i]);
		write_file (path, b.data, b.len);
	}
	sp_buf_free (&b);
	st = open_ok (f->store, 2);
	if (sp_store_next_sequence (st) != 4) {
		print_error ("after foreign files, next sequence is %llu (want 4)\n", (unsigned long long)sp_store_next_sequence (st));
		sp_store_close (st);
		fail ();
	}
	SpSnapInfo *infos;
	size_t n;
	SpError err = { 0 };
	assert_ok (sp_store_list (st, &infos, &n, &err), &err);
	assert_int_equal (n, 1);
	assert_true (infos [0].sequence == 3);
	free (infos);
	Warnings w = { 0 };
	load_expect (st, 3, &w);
	assert_int_equal (w.count, 0);
	commit (st, 4);
	sp_store_close (st);
}

/*
 * A crash before each step of a file-store commit in turn (create the
 * temporary file, write it, fsync it, rename it, fsync the directory): the
 * next open removes the leftover and loads the snapshot committed before,
 * until the rename; after it, the new one.  Never a partial snapshot.
 */
static void
test_file_crash_at_every_step (void **state)
{
	Fixture *f = *state;
	for (unsigned k = 1; k <= 6; k++) {
		SpStore *st = open_ok (f->store, 2);
		uint64_t before = sp_store_next_sequence (st) - 1, seq = before + 1;
		if (before == 0) {
			commit (st, 1);
			before = 1;
			seq = 2;
		}
		sp_store_file_crash_before_step = k;
		SpBuf b;
		make_snapshot (seq, &b);
		SpError err = { 0 };
		int rc = sp_store_commit (st, b.data, b.len, seq, &err);
		sp_store_file_crash_before_step = 0;
		sp_buf_free (&b);
		sp_store_close (st);
		assert_int_equal (rc, k <= 5 ? -1 : 0);
		st = open_ok (f->store, 2);
		Warnings w = { 0 };
		load_expect (st, k <= 4 ? before : seq, &w);
		assert_int_equal (w.count, 0);
		char listing [1024];
		dir_listing (f->store, listing, sizeof listing);
		assert_null (strstr (listing, ".tmp"));   /* the leftover of a crash is gone */
		sp_store_close (st);
	}
}

static int
produce_fold (void *ctx, SpWriteFn write, void *write_ctx, SpError *err)
{
	SpFoldResult res;
	return sp_fold_write (ctx, write, write_ctx, &res, err);
}

/* Replace snapshot 4 of the committed chain by its fold; the store's result. */
static int
replace_by_fold (SpStore *st, SpError *err)
{
	SpChain c;
	assert_ok (sp_chain_load (st, 4, &c, err), err);
	assert_int_equal (c.n, 4);
	int rc = sp_store_replace (st, 4, produce_fold, &c, err);
	sp_chain_free (st, &c);
	return rc;
}

/*
 * A chain folded into its last delta's place (SpStoreOps.replace), with a
 * crash before each step in turn (create the .fold file, write it, fsync it,
 * rename it, fsync the directory): the next open removes the leftover, and
 * snapshot 4 is either the delta, loading with its chain, or the folded
 * snapshot, loading alone; a delta committed after it applies to either.
 */
static void
test_file_replace_crash_at_every_step (void **state)
{
	Fixture *f = *state;
	for (unsigned k = 1; k <= 6; k++) {
		SpStore *st = open_ok (f->store, 2);
		st->retain_from = 1;
		Part parts [CHAIN_PARTS + 1];
		commit_chain (st, parts);
		sp_store_file_crash_before_step = k;
		SpError err = { 0 };
		int rc = replace_by_fold (st, &err);
		sp_store_file_crash_before_step = 0;
		sp_store_close (st);
		assert_int_equal (rc, k <= 5 ? -1 : 0);
		st = open_ok (f->store, 2);
		st->retain_from = 1;
		char listing [1024];
		dir_listing (f->store, listing, sizeof listing);
		assert_null (strstr (listing, ".fold"));
		bool folded = k >= 5;                      /* renamed: the directory's fsync only makes it durable */
		SpLoaded loaded;
		assert_ok (sp_store_load_newest (st, NULL, NULL, NULL, NULL, &loaded, &err), &err);
		assert_true (loaded.sequence == 4);
		assert_int_equal (loaded.n, folded ? 1 : 4);
		SpSnapHeader h;
		assert_ok (sp_snapshot_check (loaded.parts [loaded.n - 1].data, loaded.parts [loaded.n - 1].size, &h, NULL, &err), &err);
		assert_int_equal (sp_header_is_folded (&h), folded);
		sp_store_release_loaded (st, &loaded);
		/* Delta 5, on the delta 4 the program knows, applies to what the store holds as 4. */
		Part *p = &parts [CHAIN_PARTS];
		part_begin (p, 5, &parts [0], &parts [3]);
		put_class_node (&p->b, 1);
		put_node (&p->b, 1, 1, 5, 0);
		put_root (&p->b, 1, 1);
		part_finish (p, 1, 1, 1);
		assert_ok (sp_store_commit (st, p->b.data, p->b.len, 5, &err), &err);
		assert_ok (sp_store_load_newest (st, NULL, NULL, NULL, NULL, &loaded, &err), &err);
		assert_true (loaded.sequence == 5);
		assert_int_equal (loaded.n, folded ? 2 : 5);
		sp_store_release_loaded (st, &loaded);
		sp_buf_free (&p->b);
		free_parts (parts);
		sp_store_close (st);
		nftw (f->store, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
}

/*
 * A chain read for folding (sp_chain_load) with a part missing or damaged
 * fails, naming the part: the fold task then folds nothing, and the
 * program's next snapshot is full.
 */
static void
test_chain_load_names_a_missing_or_damaged_part (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	st->retain_from = 1;
	Part parts [CHAIN_PARTS];
	commit_chain (st, parts);
	SpChain c;
	SpError err = { 0 };
	assert_ok (sp_chain_load (st, 4, &c, &err), &err);
	assert_int_equal (c.n, 4);
	assert_true (c.parts [0].seq == 1 && c.parts [3].seq == 4);
	sp_chain_free (st, &c);
	damage_file (f, 3);
	assert_int_equal (sp_chain_load (st, 4, &c, &err), -1);
	assert_contains (err.msg, "needs snapshot 3, which is not valid");
	assert_contains (err.msg, "checksum");
	damage_file (f, 3);                          /* the same bit back: intact again */
	char path [512];
	file_path (f, 2, "", path, sizeof path);
	assert_int_equal (unlink (path), 0);
	assert_int_equal (sp_chain_load (st, 3, &c, &err), -1);
	assert_contains (err.msg, "needs snapshot 2");
	assert_null (c.parts);                       /* nothing held */
	free_parts (parts);
	sp_store_close (st);
}

/* Stores that cannot fold say so; a read-only store refuses. */
static void
test_replace_refused_where_it_cannot (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 1);
	sp_store_close (st);
	SpError err = { 0 };
	assert_ok (sp_store_open_readonly (f->store, &st, &err), &err);
	assert_false (sp_store_can_replace (st));
	assert_int_equal (sp_store_replace (st, 1, produce_fold, NULL, &err), -1);
	assert_contains (err.msg, "read-only");
	sp_store_close (st);
	char loc [400];
	snprintf (loc, sizeof loc, "pmem:%s/app.pmem", f->dir);
	st = open_ok (loc, 2);
	assert_false (sp_store_can_replace (st));
	sp_store_close (st);
}

/* ---- the pmem store (on a regular file; ctest runs these again with PMEM_IS_PMEM_FORCE=1) ---- */

/* The test's pmem store: its location ("pmem:FILE") and its file. */
static void
pmem_paths (const Fixture *f, char loc [400], char path [400])
{
	snprintf (loc, 400, "pmem:%s/app.pmem", f->dir);
	snprintf (path, 400, "%s/app.pmem", f->dir);
}

/* Commit a snapshot of seq `extra` bytes longer (big ones make the file grow); *kept: its bytes. */
static void
commit_sized (SpStore *st, uint64_t seq, size_t extra, SpBuf *kept)
{
	SpError err = { 0 };
	make_snapshot_padded (seq, extra, kept);
	assert_ok (sp_store_commit (st, kept->data, kept->len, seq, &err), &err);
}

/* Commit a snapshot of seq `extra` bytes longer, its bytes not kept. */
static void
commit_padded (SpStore *st, uint64_t seq, size_t extra)
{
	SpBuf b;
	commit_sized (st, seq, extra, &b);
	sp_buf_free (&b);
}

static void
test_pmem_commit_load_reopen (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	SpStore *st = open_ok (loc, 2);
	Warnings w = { 0 };
	load_expect (st, 0, &w);
	for (uint64_t seq = 1; seq <= 5; seq++)
		commit (st, seq);
	load_expect (st, 5, &w);
	uint64_t *seqs;
	size_t n;
	SpError err = { 0 };
	assert_ok (st->ops->sequences (st, &seqs, &n, &err), &err);
	assert_int_equal (n, 2);              /* the two newest, newest first */
	assert_true (seqs [0] == 5 && seqs [1] == 4);
	free (seqs);
	sp_store_close (st);
	st = open_ok (loc, 1);
	assert_true (sp_store_next_sequence (st) == 6);
	load_expect (st, 5, &w);
	commit (st, 6);
	load_expect (st, 6, &w);
	assert_int_equal (w.count, 0);
	sp_store_close (st);
	/* More than two kept is refused, naming the reason. */
	assert_fails (sp_store_open (loc, 3, &st, &err), &err);
	assert_contains (err.msg, "keeps the 2 newest");
}

/*
 * A crash before each step of a commit in turn (write the data, persist it,
 * write the record, persist it), with the new snapshot overwriting the older
 * one's bytes.  What was written stays (a process crash keeps the page
 * cache): until the record is written the snapshot committed before loads,
 * never a mix, and the older record, whose bytes were overwritten, is
 * refused by its data checksum; once the record is written the new snapshot
 * loads, complete.
 */
static void
test_pmem_crash_at_every_persist (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	for (unsigned k = 1; k <= 5; k++) {
		unlink (path);
		SpStore *st = open_ok (loc, 2);
		commit (st, 1);
		commit (st, 2);                     /* 1 at the start of the data, 2 after it */
		sp_store_pmem_crash_before_step = k;
		SpBuf b;
		make_snapshot (3, &b);              /* the size of 1: it goes where 1 is */
		SpError err = { 0 };
		int rc = sp_store_commit (st, b.data, b.len, 3, &err);
		sp_store_pmem_crash_before_step = 0;
		sp_buf_free (&b);
		sp_store_close (st);
		assert_int_equal (rc, k <= 4 ? -1 : 0);
		st = open_ok (loc, 2);
		Warnings w = { 0 };
		load_expect (st, k <= 3 ? 2 : 3, &w);
		uint8_t *data;
		size_t size;
		if (k == 2 || k == 3) {
			/* Record 1 still names snapshot 1, whose bytes now hold 3's: refused, with the reason. */
			assert_fails (st->ops->read (st, 1, &data, &size, &err), &err);
			assert_contains (err.msg, "do not match its record");
		}
		sp_store_close (st);
	}
}

/* A damaged record (a torn write): ignored, the other snapshot loads. */
static void
test_pmem_torn_record (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	SpStore *st = open_ok (loc, 2);
	commit (st, 1);
	commit (st, 2);
	sp_store_close (st);
	/* Record of snapshot 2 is record 1, at byte 128: flip a bit of its size. */
	int fd = open (path, O_RDWR);
	assert_true (fd >= 0);
	uint8_t byte;
	assert_int_equal (pread (fd, &byte, 1, 128 + 16), 1);
	byte ^= 0x01;
	assert_int_equal (pwrite (fd, &byte, 1, 128 + 16), 1);
	close (fd);
	st = open_ok (loc, 2);
	Warnings w = { 0 };
	load_expect (st, 1, &w);
	assert_true (sp_store_next_sequence (st) == 2);
	sp_store_close (st);
}

/* A snapshot larger than the file: it grows, and the older snapshot stays intact. */
static void
test_pmem_grows (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	SpStore *st = open_ok (loc, 2);
	SpBuf small, big;
	commit_sized (st, 1, 1000, &small);
	commit_sized (st, 2, (size_t)9 << 20, &big);
	struct stat sb;
	assert_int_equal (stat (path, &sb), 0);
	assert_true ((size_t)sb.st_size > big.len);
	sp_store_close (st);
	st = open_ok (loc, 2);
	uint8_t *data;
	size_t size;
	SpError err = { 0 };
	assert_ok (st->ops->read (st, 1, &data, &size, &err), &err);
	assert_int_equal (size, small.len);
	assert_memory_equal (data, small.data, small.len);
	assert_ok (st->ops->read (st, 2, &data, &size, &err), &err);
	assert_int_equal (size, big.len);
	assert_memory_equal (data, big.data, big.len);
	sp_store_close (st);
	sp_buf_free (&small);
	sp_buf_free (&big);
}

/* A file that is not a pmem store is refused and left as it was; one process at a time; read-only beside it. */
static void
test_pmem_foreign_file_and_lock (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	char content [8192];
	memset (content, 'q', sizeof content);
	write_file (path, content, sizeof content);
	SpStore *st = NULL;
	SpError err = { 0 };
	assert_fails (sp_store_open (loc, 2, &st, &err), &err);
	assert_contains (err.msg, "not a spmono pmem store");
	uint8_t *after;
	size_t size;
	read_whole (path, &after, &size);
	assert_int_equal (size, sizeof content);
	assert_memory_equal (after, content, sizeof content);
	free (after);
	unlink (path);
	st = open_ok (loc, 2);
	commit (st, 1);
	SpStore *second = NULL;
	assert_fails (sp_store_open (loc, 2, &second, &err), &err);
	assert_contains (err.msg, "in use");
	assert_ok (sp_store_open_readonly (loc, &second, &err), &err);
	Warnings w = { 0 };
	load_expect (second, 1, &w);
	assert_fails (sp_store_commit (second, (const uint8_t *)"x", 1, 2, &err), &err);
	sp_store_close (second);
	sp_store_close (st);
	/* Read-only never creates. */
	char missing [400];
	snprintf (missing, sizeof missing, "pmem:%s/absent.pmem", f->dir);
	assert_fails (sp_store_open_readonly (missing, &second, &err), &err);
	snprintf (missing, sizeof missing, "%s/absent.pmem", f->dir);
	assert_int_equal (access (missing, F_OK), -1);
}

/* "null:": commits succeed and sequences advance, nothing is kept, nothing to load; the working directory untouched. */
static void
test_null_store_keeps_nothing (void **state)
{
	(void)state;
	char before [4096], after [4096];
	dir_listing (".", before, sizeof before);
	SpStore *st = open_ok ("null:", 1);
	assert_string_equal (st->ops->name, "null");
	for (uint64_t seq = 1; seq <= 3; seq++) {
		assert_int_equal (sp_store_next_sequence (st), seq);
		commit (st, seq);
	}
	SpSnapInfo *infos;
	size_t n = 99;
	SpError err = { 0 };
	assert_ok (sp_store_list (st, &infos, &n, &err), &err);
	assert_int_equal (n, 0);
	free (infos);
	SpLoaded loaded;
	assert_ok (sp_store_load_newest (st, NULL, NULL, NULL, NULL, &loaded, &err), &err);
	assert_null (loaded.parts);
	assert_int_equal (loaded.sequence, 0);
	sp_store_close (st);
	/* null:anything is not the null store: it names nothing. */
	assert_fails (sp_store_open ("null:x", 1, &st, &err), &err);
	dir_listing (".", after, sizeof after);
	assert_string_equal (before, after);
}

/* ---- streaming: a snapshot committed in pieces ------------------------------------ */

/*
 * Stream snapshot `seq` (make_snapshot's bytes) in pieces of `piece` bytes,
 * with the checksum left 0 as the serializer leaves it: the stream sets it.
 * The result of the last write or of finish; crash_step: a simulated crash
 * stops it there (then the store is closed by the caller, as after a crash).
 */
static int
stream_snapshot (SpStore *st, uint64_t seq, size_t piece, SpError *err)
{
	SpBuf b;
	make_snapshot (seq, &b);
	memset (b.data + b.len - 4, 0, 4);
	SpStream stream;
	int rc = sp_stream_begin (&stream, st, seq, b.len, err);
	for (size_t at = 0; rc == 0 && at < b.len; at += piece) {
		size_t n = b.len - at < piece ? b.len - at : piece;
		/* The last piece holds at least the checksum field, as the writer task's do. */
		if (b.len - at - n < 4)
			n = b.len - at;
		rc = sp_stream_write (&stream, b.data + at, n, at + n == b.len, err);
		if (at + n == b.len)
			break;
	}
	if (rc == 0)
		rc = sp_stream_finish (&stream, err);
	sp_buf_free (&b);
	return rc;
}

/* A store that records what it is told: when, in appended bytes, it was told to write back. */
typedef struct CountingStore {
	SpStore base;
	size_t appended;
	size_t writebacks_at [8];
	int writebacks;
} CountingStore;

static int
counting_begin (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err)
{
	(void)s, (void)sequence, (void)size_hint, (void)err;
	return 0;
}

static int
counting_append (SpStore *s, const uint8_t *data, size_t size, SpError *err)
{
	(void)data, (void)err;
	((CountingStore *)s)->appended += size;
	return 0;
}

static void
counting_writeback (SpStore *s)
{
	CountingStore *c = (CountingStore *)s;
	if (c->writebacks < 8)
		c->writebacks_at [c->writebacks] = c->appended;
	c->writebacks++;
}

static int
counting_finish (SpStore *s, SpError *err)
{
	(void)s, (void)err;
	return 0;
}

static void
counting_abort (SpStore *s)
{
	(void)s;
}

static const SpStoreOps counting_ops = {
	.name = "counting", .begin = counting_begin, .append = counting_append, .writeback = counting_writeback,
	.finish = counting_finish, .abort = counting_abort,
};

/* Stream 1.75 writeback intervals in 64 KiB pieces, the caller in charge of writeback or not. */
static void
stream_for_writeback (CountingStore *c, SpStream *st, bool caller)
{
	static uint8_t piece [64 << 10];
	SpError err = { 0 };
	*c = (CountingStore){ .base = { .ops = &counting_ops, .location = (char *)"counting" } };
	assert_ok (sp_stream_begin (st, &c->base, 1, 0, &err), &err);
	if (caller)
		sp_stream_caller_writes_back (st);
	size_t pieces = SP_STREAM_WRITEBACK_BYTES / sizeof piece * 7 / 4;
	for (size_t i = 0; i < pieces; i++) {
		assert_ok (sp_stream_write (st, piece, sizeof piece, i + 1 == pieces, &err), &err);
		if (caller && st->writeback_due) {
			assert_int_equal (c->appended, SP_STREAM_WRITEBACK_BYTES);   /* due as the interval is full, not before */
			assert_int_equal (c->writebacks, 0);                         /* not done inside the write */
			sp_stream_writeback (st);
		}
		assert_false (st->writeback_due);
	}
	assert_ok (sp_stream_finish (st, &err), &err);
}

/*
 * Writeback every SP_STREAM_WRITEBACK_BYTES: by the stream itself, or, for a
 * caller in charge (the writer task's step of its own), never inside a write;
 * none after the last piece (finish makes it durable) and none for a store
 * without the step.
 */
static void
test_stream_writeback_schedule (void **state)
{
	(void)state;
	CountingStore c;
	SpStream st;
	stream_for_writeback (&c, &st, false);
	assert_int_equal (c.writebacks, 1);
	assert_int_equal (c.writebacks_at [0], SP_STREAM_WRITEBACK_BYTES);
	stream_for_writeback (&c, &st, true);
	assert_int_equal (c.writebacks, 1);
	assert_int_equal (c.writebacks_at [0], SP_STREAM_WRITEBACK_BYTES);
	SpStoreOps none = counting_ops;
	none.writeback = NULL;
	SpError err = { 0 };
	c = (CountingStore){ .base = { .ops = &none, .location = (char *)"counting" } };
	assert_ok (sp_stream_begin (&st, &c.base, 1, 0, &err), &err);
	sp_stream_caller_writes_back (&st);
	static uint8_t big [SP_STREAM_WRITEBACK_BYTES * 2];
	assert_ok (sp_stream_write (&st, big, sizeof big, false, &err), &err);
	assert_false (st.writeback_due);
	sp_stream_abort (&st);
}

/* Pieces of any size commit the same bytes as a whole commit, in the file and pmem stores. */
static void
test_stream_in_pieces_equals_whole (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	const size_t pieces [] = { 1, 5, 64, 100000 };
	for (int pmem = 0; pmem < 2; pmem++) {
		for (size_t i = 0; i < sizeof pieces / sizeof pieces [0]; i++) {
			SpStore *st = open_ok (pmem ? loc : f->store, 2);
			uint64_t seq = sp_store_next_sequence (st);
			SpError err = { 0 };
			assert_ok (stream_snapshot (st, seq, pieces [i], &err), &err);
			Warnings w = { 0 };
			load_expect (st, seq, &w);          /* the same bytes as make_snapshot's, checksum and all */
			assert_int_equal (w.count, 0);
			sp_store_close (st);
		}
	}
}

/*
 * A crash between any two pieces of a streamed snapshot, or in its commit:
 * the snapshot committed before loads (the file store: until the rename;
 * the pmem store: until the record is written), then the new one; never a
 * part of it, and nothing is left over once the store is opened again.
 */
static void
test_stream_crash_between_pieces (void **state)
{
	Fixture *f = *state;
	char loc [400], path [400];
	pmem_paths (f, loc, path);
	SpBuf probe;
	make_snapshot (2, &probe);
	const size_t piece = 16, appends = (probe.len - 4 + piece - 1) / piece;
	sp_buf_free (&probe);
	for (int pmem = 0; pmem < 2; pmem++) {
		/* file: create, each append, fsync, rename, directory fsync; pmem: each append's write and persist, the record's. */
		unsigned steps = pmem ? 2 * (unsigned)appends + 2 : (unsigned)appends + 4;
		unsigned new_from = pmem ? 2 * (unsigned)appends + 2 : (unsigned)appends + 4;
		for (unsigned k = 1; k <= steps + 1; k++) {
			unlink (path);
			char cmd [600];
			snprintf (cmd, sizeof cmd, "rm -rf '%s'", f->store);
			assert_int_equal (system (cmd), 0);
			SpStore *st = open_ok (pmem ? loc : f->store, 2);
			commit (st, 1);
			*(pmem ? &sp_store_pmem_crash_before_step : &sp_store_file_crash_before_step) = k;
			SpError err = { 0 };
			int rc = stream_snapshot (st, 2, piece, &err);
			sp_store_pmem_crash_before_step = sp_store_file_crash_before_step = 0;
			sp_store_close (st);
			assert_int_equal (rc, k <= steps ? -1 : 0);
			st = open_ok (pmem ? loc : f->store, 2);
			Warnings w = { 0 };
			load_expect (st, k < new_from ? 1 : 2, &w);
			assert_int_equal (w.count, 0);
			if (!pmem) {
				char listing [1024];
				dir_listing (f->store, listing, sizeof listing);
				assert_null (strstr (listing, ".tmp"));
			}
			sp_store_close (st);
		}
	}
}

/*
 * A write that fails in the middle of a stream (the file-size limit stands
 * in for a full disk): the error names the step and the reason, the
 * partial file is gone at once, the snapshot before stays the newest, and
 * the next snapshot streams and commits once the fault is gone.
 */
static void
test_stream_fault_mid_stream (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 2);
	commit (st, 1);
	SpBuf b;
	make_snapshot (2, &b);
	struct rlimit saved, small = { .rlim_cur = b.len / 2, .rlim_max = RLIM_INFINITY };
	sp_buf_free (&b);
	assert_int_equal (getrlimit (RLIMIT_FSIZE, &saved), 0);
	small.rlim_max = saved.rlim_max;
	void (*old_handler) (int) = signal (SIGXFSZ, SIG_IGN);
	assert_int_equal (setrlimit (RLIMIT_FSIZE, &small), 0);
	SpError err = { 0 };
	int rc = stream_snapshot (st, 2, 8, &err);
	assert_int_equal (setrlimit (RLIMIT_FSIZE, &saved), 0);
	signal (SIGXFSZ, old_handler);
	assert_int_equal (rc, -1);
	assert_contains (err.msg, "failed at write");
	assert_contains (err.msg, strerror (EFBIG));
	char listing [1024];
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000001.spm");
	Warnings w = { 0 };
	load_expect (st, 1, &w);
	assert_ok (stream_snapshot (st, 2, 8, &err), &err);
	load_expect (st, 2, &w);
	assert_int_equal (w.count, 0);
	sp_store_close (st);
}

/*
 * Old snapshots go a slice at a time: renamed to .old (never loaded, never
 * listed), shortened by at most the slice, then unlinked; the newest `keep`
 * are never touched; a leftover .old is removed at the next open.  (The
 * first .old is kept as the spare, and goes so when the next snapshot is
 * much smaller than it.)
 */
static void
test_retire_in_slices (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 1);
	commit_padded (st, 1, 3u << 20);
	SpError err = { 0 };
	assert_ok (stream_snapshot (st, 2, 4096, &err), &err);   /* finish alone retires nothing */
	char listing [1024], old [400];
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000001.spm snap-00000000000000000002.spm");
	assert_int_equal (sp_store_retire (st, 1u << 20), 1);     /* 1 becomes the spare, whole */
	assert_int_equal (sp_store_retire (st, 1u << 20), 0);
	file_path (f, 1, ".old", old, sizeof old);
	struct stat spare;
	assert_int_equal (stat (old, &spare), 0);
	assert_true (spare.st_size > (3 << 20));
	/* Snapshot 3 is small: the 3 MiB spare is not written over but removed in slices. */
	assert_ok (stream_snapshot (st, 3, 4096, &err), &err);
	int calls = 0;
	while (sp_store_retire (st, 1u << 20)) {
		calls++;
		struct stat sb;
		if (stat (old, &sb) == 0)
			assert_true (sb.st_size <= (3 << 20) + 4096 - (off_t)calls * (1 << 20) + (1 << 20));
		Warnings w = { 0 };
		load_expect (st, 3, &w);
		assert_int_equal (w.count, 0);
	}
	assert_true (calls >= 3);                 /* 3 MiB and some, 1 MiB a call */
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000002.spm.old snap-00000000000000000003.spm");
	sp_store_close (st);
	write_file (old, "leftover", 8);
	st = open_ok (f->store, 1);
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000003.spm");
	sp_store_close (st);
}

/*
 * The spare is written over: the next snapshot takes its file (its inode),
 * shortened when it was larger, and loads intact; the next spare is the
 * snapshot the commit put beyond `keep`.
 */
static void
test_spare_is_written_over (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 1);
	commit_padded (st, 1, 2u << 20);
	commit_padded (st, 2, 1u << 20);
	SpBuf b;
	char spare [400], newest [400], listing [1024];
	file_path (f, 1, ".old", spare, sizeof spare);
	struct stat before, after;
	assert_int_equal (stat (spare, &before), 0);
	commit_sized (st, 3, 1u << 20, &b);      /* within an eighth and 1 MiB of the 2 MiB spare */
	file_path (f, 3, "", newest, sizeof newest);
	assert_int_equal (stat (newest, &after), 0);
	assert_true (after.st_ino == before.st_ino);
	assert_true (after.st_size == (off_t)b.len);
	assert_true (after.st_size < before.st_size);
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000002.spm.old snap-00000000000000000003.spm");
	uint8_t *data;
	size_t size;
	read_whole (newest, &data, &size);
	assert_int_equal (size, b.len);
	assert_memory_equal (data, b.data, size);
	free (data);
	Warnings w = { 0 };
	SpLoaded loaded;
	SpError err = { 0 };
	assert_ok (sp_store_load_newest (st, NULL, NULL, collect_warning, &w, &loaded, &err), &err);
	assert_true (loaded.sequence == 3);
	assert_int_equal (w.count, 0);
	assert_int_equal (loaded.parts [0].size, b.len);
	assert_memory_equal (loaded.parts [0].data, b.data, b.len);
	sp_store_release_loaded (st, &loaded);
	sp_buf_free (&b);
	sp_store_close (st);
}

/* The inode of snapshot seq's file (with `suffix`). */
static ino_t
file_inode (Fixture *f, uint64_t seq, const char *suffix)
{
	char path [400];
	struct stat st;
	file_path (f, seq, suffix, path, sizeof path);
	assert_int_equal (stat (path, &st), 0);
	return st.st_ino;
}

/*
 * Commits back to back, with no retire between them (the writer retires only
 * between snapshots, and a program that calls SendPData as soon as the last
 * cycle is over leaves it none): each snapshot is written over the file of
 * the one its begin puts beyond `keep` (its inode), so the store holds the
 * newest `keep` and the one in progress, never more, and nothing is
 * allocated per commit.  (Before, such a store on tmpfs held 4-5 snapshots
 * where 2 were asked for, and three commits in four wrote new files.)
 */
static void
test_back_to_back_commits_write_over_the_oldest (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 1);
	SpError err = { 0 };
	char listing [1024];
	assert_ok (stream_snapshot (st, 1, 4096, &err), &err);
	assert_ok (stream_snapshot (st, 2, 4096, &err), &err);
	for (uint64_t seq = 3; seq <= 6; seq++) {
		ino_t oldest = file_inode (f, seq - 2, "");
		assert_ok (stream_snapshot (st, seq, 4096, &err), &err);
		assert_true (file_inode (f, seq, "") == oldest);
		char want [128];
		snprintf (want, sizeof want, "snap-%020llu.spm snap-%020llu.spm", (unsigned long long)seq - 1, (unsigned long long)seq);
		dir_listing (f->store, listing, sizeof listing);
		assert_string_equal (listing, want);
	}
	Warnings w = { 0 };
	load_expect (st, 6, &w);
	assert_int_equal (w.count, 0);
	sp_store_close (st);
}

/*
 * A snapshot part-way through its removal serves as the spare when there is
 * none: here one too large to be written over (3 MiB against 4 KiB
 * expected) is removed in slices instead; once it is short enough, the next
 * commit takes it as its own file (its inode) rather than allocate a new one
 * while the old is freed; the snapshot loads intact and nothing is left over.
 */
static void
test_file_being_removed_serves_as_spare (void **state)
{
	Fixture *f = *state;
	SpStore *st = open_ok (f->store, 1);
	SpError err = { 0 };
	char listing [1024];
	commit_padded (st, 1, 3u << 20);
	assert_ok (stream_snapshot (st, 2, 4096, &err), &err);
	assert_ok (stream_snapshot (st, 3, 4096, &err), &err);   /* 1 is beyond keep, too large to write over */
	ino_t being_removed = file_inode (f, 1, ".old");
	assert_int_equal (sp_store_retire (st, (3u << 20) - (8u << 10)), 1);   /* shortened to about 8 KiB */
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000001.spm.old snap-00000000000000000002.spm snap-00000000000000000003.spm");
	assert_ok (stream_snapshot (st, 4, 4096, &err), &err);   /* takes 1 */
	assert_true (file_inode (f, 4, "") == being_removed);
	while (sp_store_retire (st, UINT64_MAX))
		;
	dir_listing (f->store, listing, sizeof listing);
	assert_string_equal (listing, "snap-00000000000000000002.spm.old snap-00000000000000000004.spm");   /* 2: the next spare */
	Warnings w = { 0 };
	load_expect (st, 4, &w);
	assert_int_equal (w.count, 0);
	sp_store_close (st);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_setup_teardown (test_keep_two_of_three, setup, teardown),
		cmocka_unit_test_setup_teardown (test_committed_snapshots_are_never_modified, setup, teardown),
		cmocka_unit_test_setup_teardown (test_reopen_continues_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown (test_load_newest, setup, teardown),
		cmocka_unit_test_setup_teardown (test_damaged_newest_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown (test_accept_callback, setup, teardown),
		cmocka_unit_test_setup_teardown (test_chain_loads_whole, setup, teardown),
		cmocka_unit_test_setup_teardown (test_damaged_delta_loads_the_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown (test_chain_skipped_at_the_part_accept_names, setup, teardown),
		cmocka_unit_test_setup_teardown (test_retain_from_keeps_the_chain, setup, teardown),
		cmocka_unit_test_setup_teardown (test_leftover_tmp_is_removed_and_never_loaded, setup, teardown),
		cmocka_unit_test_setup_teardown (test_second_open_in_process_fails, setup, teardown),
		cmocka_unit_test_setup_teardown (test_second_open_in_other_process_fails, setup, teardown),
		cmocka_unit_test_setup_teardown (test_bad_locations, setup, teardown),
		cmocka_unit_test (test_null_store_keeps_nothing),
		cmocka_unit_test (test_stream_writeback_schedule),
		cmocka_unit_test_setup_teardown (test_foreign_names_are_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown (test_file_crash_at_every_step, setup, teardown),
		cmocka_unit_test_setup_teardown (test_file_replace_crash_at_every_step, setup, teardown),
		cmocka_unit_test_setup_teardown (test_replace_refused_where_it_cannot, setup, teardown),
		cmocka_unit_test_setup_teardown (test_chain_load_names_a_missing_or_damaged_part, setup, teardown),
		cmocka_unit_test_setup_teardown (test_pmem_commit_load_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown (test_pmem_crash_at_every_persist, setup, teardown),
		cmocka_unit_test_setup_teardown (test_pmem_torn_record, setup, teardown),
		cmocka_unit_test_setup_teardown (test_pmem_grows, setup, teardown),
		cmocka_unit_test_setup_teardown (test_pmem_foreign_file_and_lock, setup, teardown),
		cmocka_unit_test_setup_teardown (test_stream_in_pieces_equals_whole, setup, teardown),
		cmocka_unit_test_setup_teardown (test_stream_crash_between_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown (test_stream_fault_mid_stream, setup, teardown),
		cmocka_unit_test_setup_teardown (test_spare_is_written_over, setup, teardown),
		cmocka_unit_test_setup_teardown (test_file_being_removed_serves_as_spare, setup, teardown),
		cmocka_unit_test_setup_teardown (test_back_to_back_commits_write_over_the_oldest, setup, teardown),
		cmocka_unit_test_setup_teardown (test_retire_in_slices, setup, teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
