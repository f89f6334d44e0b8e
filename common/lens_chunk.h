/* Chunk framing and CRC-32C shared by every producer and the reader,
 * so there is exactly one definition of what a valid chunk is. */
#ifndef NCCL_LENS_COMMON_CHUNK_H
#define NCCL_LENS_COMMON_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

uint32_t lens_crc32c(uint32_t crc, const void *data, size_t len);

/* Fills *h for a payload; the caller writes h, payload, then
 * lens_chunk_padding(len) zero bytes. */
void lens_chunk_hdr_init(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                         const void *payload, uint32_t payload_len);
static inline uint32_t lens_chunk_padding(uint32_t payload_len) { return (8 - (payload_len & 7)) & 7; }

/* 0 if the header is well formed (magic, hdr_crc); -1 otherwise. */
int lens_chunk_hdr_check(const struct lens_chunk_hdr *h);
/* 0 if payload matches h->payload_crc. */
int lens_chunk_payload_check(const struct lens_chunk_hdr *h, const void *payload);

void lens_file_hdr_init(struct lens_file_hdr *fh, uint32_t producer, uint64_t created_real_ns);
int lens_file_hdr_check(const struct lens_file_hdr *fh);

#endif
