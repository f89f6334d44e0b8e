/* Writes a synthetic run (synth.h) as a real .lens trace, chunk by chunk as
 * the plugin's writer would, so the reader, the GPU analysis and the
 * validate command can be tested end to end without a GPU. */
#ifndef NCCL_LENS_TESTS_CUPTI_TRACE_WRITER_H
#define NCCL_LENS_TESTS_CUPTI_TRACE_WRITER_H

#include "synth.h"

/* with_cupti_chunks: also write the CUPTI buffer as LENS_CHUNK_CUPTI chunks
 * (split in pieces of at most chunk_bytes). Returns 0 or -1. */
int synth_write_trace(const struct synth *s, const char *path, int with_cupti_chunks, size_t chunk_bytes);
/* The raw CUPTI buffer alone, as saved with --cupti-buffer. */
int synth_write_cupti_buffer(const struct synth *s, const char *path);

#endif
