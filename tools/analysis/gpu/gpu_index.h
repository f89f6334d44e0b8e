/* Sorted (proc, key) -> event index tables for the GPU analysis joins. */
#ifndef NCCL_LENS_GPU_INDEX_H
#define NCCL_LENS_GPU_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct lens_gpu_ix { int32_t proc; int32_t val; uint64_t key; };
struct lens_gpu_index { struct lens_gpu_ix *v; size_t n, cap; };

int lens_gpu_index_add(struct lens_gpu_index *ix, int32_t proc, uint64_t key, int32_t val);
void lens_gpu_index_sort(struct lens_gpu_index *ix);
/* First position with this (proc, key), or -1. Entries with the same key
 * follow it. proc < 0 matches any process. */
long lens_gpu_index_find(const struct lens_gpu_index *ix, int32_t proc, uint64_t key);
void lens_gpu_index_free(struct lens_gpu_index *ix);

#endif
