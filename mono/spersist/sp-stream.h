/*
 * sp-stream.h: a snapshot streamed to a store in chunks (paper Figure 2).
 *
 * The serializer fills a chunk buffer; whoever drains it (the writer task in
 * incremental mode, SendPData itself in stop-the-world mode) hands the bytes
 * here in order, in pieces of any size.  The checksum runs along with them:
 * the trailer's CRC-32C covers every byte before it, so it is known once the
 * last byte before it has gone by, and the last piece's final four bytes (the
 * serializer wrote them as 0) are set then, before they are appended.  No
 * one ever holds or reads a whole snapshot; the store's finish stays the one
 * atomic step.
 *
 *   sp_stream_begin -> sp_stream_write* (the last with last = true) -> sp_stream_finish
 *
 * Every SP_STREAM_WRITEBACK_BYTES the store is told to start writing what it
 * has (sp_store_writeback): by sp_stream_write itself, or, when the stream
 * was begun with the caller in charge of it (a writer in budgeted slices),
 * by the caller's sp_stream_writeback as a step of its own, once
 * writeback_due says so.  Queueing 512 KiB of writeback takes 100-140 us on
 * ext4 here, three times a 64 KiB slice: inside a slice it made one slice
 * in eight overrun a budget that judges slices by their average.
 *
 * Any failure aborts the snapshot in the store (sp-store.h): the store is as
 * it was before begin, and the stream must be begun again.
 */
#ifndef SP_STREAM_H
#define SP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-store.h"

typedef struct SpStream {
	SpStore *store;
	uint64_t sequence;       /* the snapshot in progress, 0 = none */
	uint32_t crc;            /* CRC-32C of the bytes written so far */
	uint64_t bytes;          /* written so far */
	bool sealed;             /* the last piece went by: only finish is left */
	bool caller_writes_back; /* the caller calls sp_stream_writeback when writeback_due */
	bool writeback_due;      /* SP_STREAM_WRITEBACK_BYTES appended since the last writeback */
	uint64_t written_back;   /* bytes when the store was last told to write back */
} SpStream;

#define SP_STREAM_WRITEBACK_BYTES (512u << 10)

int sp_stream_begin (SpStream *st, SpStore *store, uint64_t sequence, uint64_t size_hint, SpError *err);
/*
 * The next `len` bytes of the snapshot, from `data`; `last`: they end it (they
 * hold at least the trailer's CRC field, which is set here: data is written).
 */
int sp_stream_write (SpStream *st, uint8_t *data, size_t len, bool last, SpError *err);
/* The caller writes back (sp_stream_writeback) instead of sp_stream_write (after begin). */
void sp_stream_caller_writes_back (SpStream *st);
/* Start the store writing what was written so far. */
void sp_stream_writeback (SpStream *st);
/* Commit (after the last piece). */
int sp_stream_finish (SpStream *st, SpError *err);
/* Drop the snapshot in progress, if any. */
void sp_stream_abort (SpStream *st);

#endif
