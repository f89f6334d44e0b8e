/* CRC-32C entry points (common/lens_crc32c.c). lens_crc32c (lens_chunk.h)
 * itself uses the SSE4.2 crc32 instruction when the CPU has it, else a
 * table; the _fast names are the ones the plugin's writer has always called
 * and are now the same function. */
#ifndef NCCL_LENS_COMMON_CRC32C_FAST_H
#define NCCL_LENS_COMMON_CRC32C_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

uint32_t lens_crc32c_fast(uint32_t crc, const void *data, size_t len);
/* lens_chunk_hdr_init under its old writer name. */
void lens_chunk_hdr_init_fast(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                              const void *payload, uint32_t payload_len);
/* The portable table version, whatever the CPU (tests compare the two). */
uint32_t lens_crc32c_table(uint32_t crc, const void *data, size_t len);
/* 1 when lens_crc32c runs on the crc32 instruction. */
int lens_crc32c_hw_available(void);

#endif
