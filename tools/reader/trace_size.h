/* How much memory a trace's events take once read: its bytes with every
 * EVENTS_PACKED chunk counted at its fixed-record size (the raw_bytes its
 * header gives). `nccl-lens job` decides between one model and streaming
 * on this: a zstd trace is 10-30 times smaller on disk than its events in
 * fixed form, so its file size says nothing about the model it makes. */
#ifndef NCCL_LENS_READER_TRACE_SIZE_H
#define NCCL_LENS_READER_TRACE_SIZE_H

#include <stdint.h>

/* Walks the chunk headers only (a pread of 56 bytes a chunk, no payload,
 * no CRC of payloads) and stops once the sum passes limit. A file that is
 * not a trace, or the bytes from a malformed chunk header on, count as
 * they are on disk. */
uint64_t lens_trace_fixed_bytes(const char *path, uint64_t limit);

#endif
