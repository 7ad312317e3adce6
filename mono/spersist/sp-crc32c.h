/*
 * sp-crc32c.h: CRC-32C (Castagnoli, the iSCSI/ext4 polynomial 0x1EDC6F41).
 *
 * Written here because Debian 12 packages no C CRC-32C library (google/crc32c is
 * not packaged); zlib's crc32 is the other polynomial, which detects fewer burst
 * errors.  On x86-64 with SSE4.2 the CPU's crc32 instruction is used, elsewhere a
 * slicing-by-8 table; both give the same values (tested).
 */
#ifndef SP_CRC32C_H
#define SP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over n bytes; sp_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t sp_crc32c (uint32_t crc, const void *data, size_t n);
/* The portable path alone (for tests that compare the two). */
uint32_t sp_crc32c_sw (uint32_t crc, const void *data, size_t n);

#endif
