/* sp-stream.c: see sp-stream.h. */
#include "sp-stream.h"

#include "sp-buf.h"
#include "sp-crc32c.h"

int
sp_stream_begin (SpStream *st, SpStore *store, uint64_t sequence, uint64_t size_hint, SpError *err)
{
	*st = (SpStream){ .store = store };
	if (sp_store_begin (store, sequence, size_hint, err) < 0)
		return -1;
	st->sequence = sequence;
	return 0;
}

static int
sp_stream_fail (SpStream *st)
{
	sp_stream_abort (st);
	return -1;
}

int
sp_stream_write (SpStream *st, uint8_t *data, size_t len, bool last, SpError *err)
{
	if (!st->sequence || st->sealed)
		return sp_error_set (err, "internal error: no snapshot is being streamed");
	if (last) {
		if (len < 4) {
			sp_error_set (err, "internal error: the last piece of snapshot %llu holds no checksum",
				      (unsigned long long)st->sequence);
			return sp_stream_fail (st);
		}
		st->crc = sp_crc32c (st->crc, data, len - 4);
		sp_put_le (data + len - 4, st->crc, 4);
		st->sealed = true;
	} else {
		st->crc = sp_crc32c (st->crc, data, len);
	}
	if (sp_store_append (st->store, data, len, err) < 0) {
		st->sequence = 0;     /* the store aborted it */
		return -1;
	}
	st->bytes += len;
	if (!st->sealed && st->bytes - st->written_back >= SP_STREAM_WRITEBACK_BYTES && sp_store_writes_back (st->store)) {
		if (st->caller_writes_back)
			st->writeback_due = true;
		else
			sp_stream_writeback (st);
	}
	return 0;
}

void
sp_stream_caller_writes_back (SpStream *st)
{
	st->caller_writes_back = true;
}

void
sp_stream_writeback (SpStream *st)
{
	if (st->sequence && !st->sealed)
		sp_store_writeback (st->store);
	st->written_back = st->bytes;
	st->writeback_due = false;
}

int
sp_stream_finish (SpStream *st, SpError *err)
{
	if (!st->sealed) {
		sp_error_set (err, "internal error: snapshot %llu finished before its last piece",
			      (unsigned long long)st->sequence);
		return sp_stream_fail (st);
	}
	int rc = sp_store_finish (st->store, err);
	st->sequence = 0;
	st->sealed = false;
	return rc;
}

void
sp_stream_abort (SpStream *st)
{
	if (st->store && st->sequence)
		sp_store_abort (st->store);
	st->sequence = 0;
	st->sealed = false;
}
