/*
 * sp-format.h: the snapshot format, versions 1 and 2.  docs/FORMAT.md is the
 * full description; this header is its authoritative list of numbers.
 *
 *   snapshot := header record* trailer
 *   header   := magic[8] version:u16 header_size:u16 required_flags:u16
 *               optional_flags:u16 sequence:u64 time_ns:u64 base_sequence:u64
 *               [prev_sequence:u64 prev_crc:u32 prior_objects:u32]   (deltas)
 *               [fold_base:u64 fold_crc:u32 0:u32]                    (folded full snapshots)
 *   trailer  := 0x7F nclasses:u32 nobjects:u32 nroots:u32 crc32c:u32
 *
 * `version` is the oldest reader version that can read the file: a full
 * snapshot is written as version 1 (older spmono reads it), a delta as
 * version 2 with the DELTA flag and the 56-byte header.
 *
 * All fixed-width integers are little-endian; "varint" is unsigned LEB128.  The
 * CRC-32C covers every byte before the crc field.  Records:
 *
 *   CLASS  0x01 id kind:u8 assembly:str name:str nfields (fname:str kind:u8 [tname:str if REF])*
 *   OBJECT 0x02 lid class_id value*            (primitive leaves in field order, then reference leaves)
 *   STRING 0x03 lid length piece               (piece: count enc:u8 data)
 *   ARRAY  0x04 lid class_id length piece      (piece: count element*; an element's values as an OBJECT's)
 *   ELEMS  0x05 lid start piece                (continues a STRING/ARRAY: chunked large objects)
 *   ROOT   0x06 root_id lid
 *   PATCH  0x07 lid class_id start piece       (deltas: elements of an array an earlier snapshot defined)
 *   0x80..0xFF: extension record, tag len:varint payload; readers skip unknown ones.
 *   CLASS INDEX 0x80 len count first (gap)* record_size:u32   (an extension: SP_OPT_CLASS_INDEX)
 *
 * Invariants a valid snapshot satisfies (sp_snapshot_parse checks each):
 *   - class ids are 1..nclasses, defined once, in order, before use;
 *   - every lid in 1..nobjects is defined exactly once; references are 0 (null)
 *     or a lid in 1..nobjects;
 *   - the pieces of a string or array cover [0, length) in order, exactly;
 *   - root ids are unique; the counts in the trailer are the counts in the body;
 *   - with SP_OPT_CLASS_INDEX, the last record is the class index, and it
 *     gives the offset of every CLASS record.
 * A delta (version 2, flag DELTA) applies to the snapshot `prev_sequence` of
 * the chain that starts at the full snapshot `base_sequence`; besides:
 *   - lids prior_objects+1..nobjects are new: each defined exactly once;
 *   - a lid in 1..prior_objects may be given again by one OBJECT record (its
 *     whole new value), or patched by PATCH records; never as STRING/ARRAY;
 *   - ELEMS only continue objects defined in the same file.
 */
#ifndef SP_FORMAT_H
#define SP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define SP_FORMAT_MAGIC          "\x89SPM\r\n\x1a\n"
#define SP_FORMAT_MAGIC_LEN      8
#define SP_FORMAT_VERSION        1   /* full snapshots */
#define SP_FORMAT_VERSION_DELTA  2   /* delta snapshots */
#define SP_FORMAT_VERSION_MAX    2   /* the newest this code reads */
#define SP_FORMAT_HEADER_SIZE    40
#define SP_FORMAT_DELTA_HEADER_SIZE 56
#define SP_FORMAT_HEADER_MAX     SP_FORMAT_DELTA_HEADER_SIZE
#define SP_FORMAT_PREV_CRC_OFFSET 48 /* a delta header's prev_crc (a pipelined delta's writer fills it in) */
#define SP_FORMAT_TRAILER_SIZE   17

/* required_flags: a reader must understand every bit set, or refuse. */
#define SP_FLAG_DELTA            0x0001u  /* applies on top of prev_sequence (version 2) */
#define SP_FLAGS_KNOWN           0x0001u

/*
 * optional_flags: hints a reader may ignore.  FOLDED: a full snapshot that
 * took the place of delta `sequence` (the chain up to it folded into one
 * file, same LIDs, same state): it has the 56-byte header, whose
 * prev_sequence field holds the base its chain's deltas name (fold_base) and
 * prev_crc the checksum of the delta it replaced (fold_crc), so that the
 * deltas after it still apply.  An older reader sees a full snapshot.
 */
#define SP_OPT_FOLDED            0x0001u
/*
 * CLASS_INDEX: the last record before the trailer is the class index
 * (SP_REC_CLASS_INDEX): the offset of each CLASS record in id order, so that
 * a reader can read every class before the first object (sp-decode.c: the
 * class of an object made before its record is then chosen among the
 * snapshot's own).  Its last 4 bytes give its size, so a reader finds it
 * from the trailer.  An older reader skips it, as any extension; a reader
 * that reads it checks it against the records.  Full snapshots have it.
 */
#define SP_OPT_CLASS_INDEX       0x0002u

enum {
	SP_REC_CLASS = 0x01,
	SP_REC_OBJECT = 0x02,
	SP_REC_STRING = 0x03,
	SP_REC_ARRAY = 0x04,
	SP_REC_ELEMS = 0x05,
	SP_REC_ROOT = 0x06,
	SP_REC_PATCH = 0x07,
	SP_REC_END = 0x7F,
	SP_REC_EXTENSION_FIRST = 0x80,
	SP_REC_CLASS_INDEX = 0x80,   /* an extension: SP_OPT_CLASS_INDEX */
};

/* String piece encodings. */
enum {
	SP_STR_LATIN1 = 0,       /* one byte a code unit, every unit < 256 */
	SP_STR_UTF16LE = 1,
};

/* Limits a reader enforces on untrusted input. */
#define SP_MAX_NAME              1024        /* bytes of a class or field name */
#define SP_MAX_FIELDS            65535
#define SP_MAX_LENGTH            0x7fffffc7u /* largest CLR array / string length */
#define SP_MAX_ROOT_ID           0x7fffffffu

typedef struct SpSnapHeader {
	uint16_t version;
	uint16_t header_size;
	uint16_t required_flags;
	uint16_t optional_flags;
	uint64_t sequence;
	uint64_t time_ns;        /* wall clock at SendPData, ns since the Unix epoch */
	uint64_t base_sequence;  /* 0: a full snapshot; a delta: the full snapshot its chain starts at */
	/* Deltas only (0 in a full snapshot): */
	uint64_t prev_sequence;  /* the snapshot this delta applies to (the base or a delta) ... */
	uint32_t prev_crc;       /* ... its trailer's CRC-32C ... */
	uint32_t prior_objects;  /* ... and its trailer's nobjects */
	/* Folded full snapshots only (SP_OPT_FOLDED; 0 otherwise): */
	uint64_t fold_base;      /* the base_sequence of the deltas that follow it */
	uint32_t fold_crc;       /* the checksum of the delta it replaced, which those deltas name */
} SpSnapHeader;

static inline int sp_header_is_delta (const SpSnapHeader *h) { return (h->required_flags & SP_FLAG_DELTA) != 0; }
static inline int sp_header_is_folded (const SpSnapHeader *h)
{
	return !sp_header_is_delta (h) && (h->optional_flags & SP_OPT_FOLDED) != 0;
}

typedef struct SpSnapTrailer {
	uint32_t nclasses;
	uint32_t nobjects;
	uint32_t nroots;
	uint32_t crc;
} SpSnapTrailer;

/* Bytes of the header h is written as: 40 for a full snapshot, 56 for a delta or a folded one. */
static inline size_t sp_format_header_size (const SpSnapHeader *h)
{
	return sp_header_is_delta (h) || sp_header_is_folded (h) ? SP_FORMAT_DELTA_HEADER_SIZE : SP_FORMAT_HEADER_SIZE;
}
/* Writes sp_format_header_size (h) bytes; version and flags follow from h->required_flags. */
void sp_format_write_header (uint8_t out [SP_FORMAT_HEADER_MAX], const SpSnapHeader *h);
void sp_format_write_trailer (uint8_t out [SP_FORMAT_TRAILER_SIZE], const SpSnapTrailer *t);

#endif
