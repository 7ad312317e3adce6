/*
 * sp-crc32c.h: CRC-32C (Castagnoli, the iSCSI/ext4 polynomial 0x1EDC6F41).
 *
 * Computed by Intel's ISA-L (Debian's libisal), which picks at run time the
 * fastest code the CPU allows (folding with carry-less multiplication where
 * available; a table elsewhere): about 60 GB/s here, six times a plain loop of
 * the crc32 instruction, which matters because every snapshot is checksummed
 * when written and again when restored.  zlib's crc32 is the other polynomial,
 * which detects fewer burst errors.
 */
#ifndef SP_CRC32C_H
#define SP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over n bytes; sp_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t sp_crc32c (uint32_t crc, const void *data, size_t n);

#endif
