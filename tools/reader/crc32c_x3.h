/* CRC-32C of big buffers in three interleaved streams (the bulk reader's
 * chunk checks, chunk_stream.c). The crc32 instruction takes 3 cycles to
 * give its result and one to start, so one stream of 8-byte steps (common/
 * lens_crc32c.c) waits on each result; three independent streams over
 * thirds of a block keep it busy, and the three CRCs are joined by shifting
 * the first over the others' length (a table lookup: a CRC is linear in its
 * starting value). Same values as lens_crc32c (tests/reader/test_crc32c_x3.c);
 * the portable table without SSE4.2. Kept apart from common/lens_crc32c.c,
 * which the writers share; the partial-file reader (job_part_io.c) uses it
 * too. */
#ifndef NCCL_LENS_READER_CRC32C_X3_H
#define NCCL_LENS_READER_CRC32C_X3_H

#include <stddef.h>
#include <stdint.h>

uint32_t lens_crc32c_x3(uint32_t crc, const void *data, size_t len);

#endif
