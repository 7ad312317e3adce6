/*
 * sp-store.h: where snapshots live.  One interface, several stores.
 *
 * A store holds numbered snapshots (sequence 1, 2, ...).  Its promises:
 *   - commit is atomic: after a crash at any instant, a snapshot is either the
 *     complete bytes that were committed or absent; a partial one is never
 *     offered by load;
 *   - a committed snapshot is never modified in place; the newest `keep` are
 *     kept.  A store that can (replace, optional) lets the core put another
 *     file of the same state in a snapshot's place (a folded chain), as
 *     atomically as a commit;
 *   - one process at a time: open fails clearly when another holds the store.
 *
 * A store never looks inside a snapshot: delta chains (docs/FORMAT.md) are
 * the core's.  What a store keeps is the newest `keep` snapshots, or, when
 * the core says so (retain_from: a chain's base), every snapshot from that
 * sequence on.
 *
 * The file store (a directory, sp-store-file.c) commits by writing a temporary
 * file, fsync, rename, fsync of the directory.  Locations: "DIR" or "file:DIR".
 * The pmem store (one file mapped with libpmem, sp-store-pmem.c) keeps two
 * snapshots and a record each.  Location: "pmem:FILE".  The NATS store
 * (sp-store-nats.c) keeps them on a replicated JetStream stream, the commit
 * being the publication of a catalog, fenced by its expected sequence.
 */
#ifndef SP_STORE_H
#define SP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-snapshot.h"

typedef struct SpStore SpStore;

typedef struct SpSnapInfo {
	uint64_t sequence;
	uint64_t size;
	uint64_t time_ns;        /* from the snapshot header, 0 when unreadable */
	bool valid;              /* header, trailer and checksum verify */
	char why [SP_ERROR_MAX];  /* when not valid */
	char path [512];
} SpSnapInfo;

/*
 * What a store fills in.  A snapshot reaches a store as a stream: begin, its
 * bytes appended in order (chunk by chunk, as the writer task drains its
 * buffers, so that neither side holds a whole snapshot), then finish, the one
 * atomic step that makes it the newest committed snapshot, or abort, which
 * leaves the store as it was.  One snapshot is in progress at a time.  A crash
 * at any instant before finish returns leaves the store as before begin.
 */
/* Gives a snapshot's bytes, in order, to `write` (sp_fold_write is one): 0, or -1 with err set. */
typedef int (*SpProduceFn) (void *ctx, SpWriteFn write, void *write_ctx, SpError *err);

typedef struct SpStoreOps {
	const char *name;
	/* Newest first, each checked (reads every snapshot). */
	int (*list) (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err);
	/* Newest first, sequence numbers only (reads none). */
	int (*sequences) (SpStore *s, uint64_t **seqs, size_t *n, SpError *err);
	/* The bytes of snapshot `sequence` (mapped or read), until they are released. */
	int (*read) (SpStore *s, uint64_t sequence, uint8_t **data, size_t *size, SpError *err);
	void (*release) (SpStore *s, uint8_t *data, size_t size);
	/* Snapshot `sequence` begins; size_hint: its likely size (0: unknown), for stores that place it. */
	int (*begin) (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err);
	/* Its next `size` bytes (they may be on their way to the medium: finish makes them durable). */
	int (*append) (SpStore *s, const uint8_t *data, size_t size, SpError *err);
	/*
	 * Optional (NULL: appended bytes are on their way already): start the
	 * medium writing what was appended so far, without waiting for it, so
	 * that finish has little left to wait for.  Its cost is queueing the
	 * writes, in proportion to the bytes; sp-stream.h says who calls it.
	 */
	void (*writeback) (SpStore *s);
	/* Durable and committed, atomically. */
	int (*finish) (SpStore *s, SpError *err);
	/* Drop the snapshot in progress (after a failed append or finish, or a failed cycle). */
	void (*abort) (SpStore *s);
	/*
	 * Remove snapshots beyond the newest `keep`, about max_bytes of storage a
	 * call (so that a budgeted caller can spread it): 1 when more may be left,
	 * 0 when none is.  Never touches the newest `keep`.
	 */
	int (*retire) (SpStore *s, uint64_t max_bytes, SpError *err);
	void (*close) (SpStore *s);
	/*
	 * Optional (NULL: the store cannot fold chains): put another snapshot of
	 * the same state in committed snapshot `sequence`'s place (a folded
	 * chain, sp-fold.h), its bytes given by `produce`.  Atomic as a commit:
	 * after a crash at any instant, `sequence` holds the old bytes or the new
	 * ones, whole.  May run on another thread while a snapshot is streamed in
	 * (begin..finish); never alongside retire, and the caller keeps
	 * `sequence` retained until it returns.
	 */
	int (*replace) (SpStore *s, uint64_t sequence, SpProduceFn produce, void *ctx, SpError *err);
} SpStoreOps;

struct SpStore {
	const SpStoreOps *ops;
	char *location;
	unsigned keep;           /* committed snapshots kept, >= 1 */
	uint64_t retain_from;    /* when not 0: keep every snapshot from this sequence on instead (delta chains) */
	bool readonly;           /* opened to look (sp_store_open_readonly): commit refuses */
	uint64_t last_sequence;  /* highest sequence present or committed */
	uint64_t writing;        /* sequence of the snapshot in progress (begin..finish/abort), 0 = none */
	uint64_t written;        /* its bytes appended so far */
	/* A store shared by processes (replicated: sp-store-nats.c): another one committed since this one last did,
	 * which is no longer the primary (its commits fail from then on; SPC.IsPrimary says so). */
	bool fenced;
};

/* Open (creating it when missing) the store at `location`. */
int sp_store_open (const char *location, unsigned keep, SpStore **out, SpError *err);
/*
 * Open the store at `location` to look at it (spdump): it must exist; no lock
 * is taken (the program may be using it: committed snapshots never change),
 * nothing is created or removed, and commit fails.
 */
int sp_store_open_readonly (const char *location, SpStore **out, SpError *err);
void sp_store_close (SpStore *s);

int sp_store_list (SpStore *s, SpSnapInfo **infos, size_t *n, SpError *err);
/*
 * Streaming a snapshot in (see SpStoreOps): these check the order of calls and
 * the sequence, and abort the snapshot in progress when a step fails, so the
 * caller only has to stop.  sp_store_abort does nothing when none is.
 */
int sp_store_begin (SpStore *s, uint64_t sequence, uint64_t size_hint, SpError *err);
int sp_store_append (SpStore *s, const uint8_t *data, size_t size, SpError *err);
int sp_store_finish (SpStore *s, SpError *err);
void sp_store_abort (SpStore *s);
/* SpStoreOps.replace, checked: the store must be writable, able to, and hold `sequence`. */
int sp_store_replace (SpStore *s, uint64_t sequence, SpProduceFn produce, void *ctx, SpError *err);
static inline bool sp_store_can_replace (const SpStore *s) { return s->ops->replace && !s->readonly; }
/* Old snapshots' storage, about max_bytes a call: 1 when more may be left, 0 when none is. */
int sp_store_retire (SpStore *s, uint64_t max_bytes);
/* A whole snapshot in one go: begin, append, finish, then every old snapshot retired. */
int sp_store_commit (SpStore *s, const uint8_t *data, size_t size, uint64_t sequence, SpError *err);
/* Start writing what the snapshot in progress appended so far (ops->writeback; nothing when the store has none). */
void sp_store_writeback (SpStore *s);
/* Has the store a writeback step (ops->writeback)? */
bool sp_store_writes_back (const SpStore *s);
static inline uint64_t sp_store_next_sequence (const SpStore *s) { return s->last_sequence + 1; }

/* The chain of the snapshot sp_store_load_newest took: its full snapshot first, the newest last. */
typedef struct SpLoaded {
	SpChainPart *parts;      /* n parts; NULL when the store holds no snapshot that loads */
	uint64_t *sequences;
	size_t n;
	uint64_t sequence;       /* the newest's (its last part) */
	uint64_t bytes;          /* of every part */
} SpLoaded;

/*
 * The newest snapshot that passes `accept`, with its chain (a full snapshot
 * is a chain of one): give it back with sp_store_release_loaded.  Each
 * candidate's parts are checked (checksum, header, links: the whole chain is
 * there) before accept sees them.  accept returns 0 to take the chain,
 * SP_ACCEPT_SKIP when part *failed is damaged (every chain through that part
 * is skipped, and the next older snapshot tried: the newest intact prefix of
 * a chain comes next), SP_ACCEPT_FATAL to stop: load then fails with
 * accept's error.  accept NULL takes the first chain whose checks pass.  Each
 * newer snapshot skipped is reported through `warn` with its reason.
 */
#define SP_ACCEPT_SKIP  (-1)
#define SP_ACCEPT_FATAL (-2)
typedef int (*SpAcceptFn) (void *ctx, const SpChainPart *parts, size_t n, size_t *failed, SpError *err);
typedef void (*SpWarnFn) (void *ctx, const char *message);
int sp_store_load_newest (SpStore *s, SpAcceptFn accept, void *accept_ctx, SpWarnFn warn, void *warn_ctx,
			  SpLoaded *loaded, SpError *err);
void sp_store_release_loaded (SpStore *s, SpLoaded *loaded);
/* Bytes a store's read op gave (NULL is ignored). */
void sp_store_release (SpStore *s, uint8_t *data, size_t size);

/* Of a store's `count` snapshots, the oldest being `oldest`: that one if its retention removes it now, else 0 (for retire). */
uint64_t sp_store_retirable (const SpStore *s, uint64_t oldest, size_t count);

/* For stores that overwrite their old snapshots in place: nothing to retire. */
int sp_store_retire_nothing (SpStore *s, uint64_t max_bytes, SpError *err);

/* Stores register here (sp-store-file.c, sp-store-pmem.c). */
int sp_store_file_open (const char *dir, bool readonly, SpStore **out, SpError *err);
int sp_store_pmem_open (const char *path, bool readonly, SpStore **out, SpError *err);
/*
 * "nats://HOST:PORT[,HOST:PORT...]/NAME": the replicated store, on a NATS
 * JetStream stream (sp-store-nats.c, docs/REPLICATION.md); without libnats at
 * build time, open says so.
 */
int sp_store_nats_open (const char *location, bool readonly, SpStore **out, SpError *err);
/* "null:": discards every snapshot (sp-store-null.c), for measuring serialization apart from storage. */
int sp_store_null_open (SpStore **out, SpError *err);
/* Tests: the next commit stops, as a crash would, before its n-th step (0: never; see each store). */
extern unsigned sp_store_file_crash_before_step;
extern unsigned sp_store_pmem_crash_before_step;

#endif
