/*
 * sp-format.h: the snapshot format, version 1.  docs/FORMAT.md is the full
 * description; this header is its authoritative list of numbers.
 *
 *   snapshot := header record* trailer
 *   header   := magic[8] version:u16 header_size:u16 required_flags:u16
 *               optional_flags:u16 sequence:u64 time_ns:u64 base_sequence:u64
 *   trailer  := 0x7F nclasses:u32 nobjects:u32 nroots:u32 crc32c:u32
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
 *   0x80..0xFF: extension record, tag len:varint payload; readers skip unknown ones.
 *
 * Invariants a valid snapshot satisfies (sp_snapshot_parse checks each):
 *   - class ids are 1..nclasses, defined once, in order, before use;
 *   - every lid in 1..nobjects is defined exactly once; references are 0 (null)
 *     or a lid in 1..nobjects;
 *   - the pieces of a string or array cover [0, length) in order, exactly;
 *   - root ids are unique; the counts in the trailer are the counts in the body.
 */
#ifndef SP_FORMAT_H
#define SP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define SP_FORMAT_MAGIC          "\x89SPM\r\n\x1a\n"
#define SP_FORMAT_MAGIC_LEN      8
#define SP_FORMAT_VERSION        1
#define SP_FORMAT_HEADER_SIZE    40
#define SP_FORMAT_TRAILER_SIZE   17

/* required_flags: a reader must understand every bit set, or refuse. */
#define SP_FLAG_DELTA            0x0001u  /* reserved: applies on top of base_sequence */
#define SP_FLAGS_KNOWN           0x0000u  /* version 1 readers understand none */

enum {
	SP_REC_CLASS = 0x01,
	SP_REC_OBJECT = 0x02,
	SP_REC_STRING = 0x03,
	SP_REC_ARRAY = 0x04,
	SP_REC_ELEMS = 0x05,
	SP_REC_ROOT = 0x06,
	SP_REC_END = 0x7F,
	SP_REC_EXTENSION_FIRST = 0x80,
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
	uint64_t base_sequence;  /* 0: a full snapshot */
} SpSnapHeader;

typedef struct SpSnapTrailer {
	uint32_t nclasses;
	uint32_t nobjects;
	uint32_t nroots;
	uint32_t crc;
} SpSnapTrailer;

void sp_format_write_header (uint8_t out [SP_FORMAT_HEADER_SIZE], const SpSnapHeader *h);
void sp_format_write_trailer (uint8_t out [SP_FORMAT_TRAILER_SIZE], const SpSnapTrailer *t);

#endif
