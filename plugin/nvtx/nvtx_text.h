/* Allocation-free text building for NVTX messages: the caller owns a fixed
 * buffer (a per-thread one) and appends; output is always NUL-terminated and
 * silently truncated at the buffer's end. No locale, no printf. */
#ifndef NCCL_LENS_PLUGIN_NVTX_TEXT_H
#define NCCL_LENS_PLUGIN_NVTX_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct lens_text {
  char *buf;
  size_t cap; /* bytes in buf, > 0 */
  size_t len; /* chars written, excluding the NUL */
};

static inline void lens_text_init(struct lens_text *t, char *buf, size_t cap) {
  t->buf = buf;
  t->cap = cap;
  t->len = 0;
  buf[0] = '\0';
}

void lens_text_str(struct lens_text *t, const char *s); /* NULL appends "?" */
void lens_text_char(struct lens_text *t, char c);
void lens_text_u64(struct lens_text *t, uint64_t v);
void lens_text_i64(struct lens_text *t, int64_t v);
/* "512 B", "4 MiB", "1.5 GiB": one decimal, truncated, when not exact. */
void lens_text_bytes(struct lens_text *t, uint64_t bytes);

/* NCCL passes the same few datatype literals again and again: a small
 * caller-owned cache (zeroed) maps their pointers to our table, so the
 * strcmp scan runs once per literal. NULL = no cache. */
#define LENS_DTYPE_CACHE 4
struct lens_dtype_cache {
  const char *ptr[LENS_DTYPE_CACHE];
  const void *info[LENS_DTYPE_CACHE];
  unsigned next;
};
/* Size in bytes of an NCCL datatype name ("ncclFloat32" -> 4), 0 if unknown. */
unsigned lens_dtype_size(struct lens_dtype_cache *c, const char *name);
/* Short name for messages: "ncclFloat32" -> "f32", unknown -> the name itself. */
const char *lens_dtype_short(struct lens_dtype_cache *c, const char *name);

#endif
