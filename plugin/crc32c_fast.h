/* CRC-32C for the writer: the SSE4.2 crc32 instruction when the CPU has it
 * (8 bytes per instruction), else the shared table version. Same function
 * as common/lens_chunk.c's lens_crc32c (checked in tests/plugin). The
 * writer spends most of its time in CRCs, so this sets its throughput. */
#ifndef NCCL_LENS_PLUGIN_CRC32C_FAST_H
#define NCCL_LENS_PLUGIN_CRC32C_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

uint32_t lens_crc32c_fast(uint32_t crc, const void *data, size_t len);
/* lens_chunk_hdr_init with the fast CRC. */
void lens_chunk_hdr_init_fast(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                              const void *payload, uint32_t payload_len);

#endif
