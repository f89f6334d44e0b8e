/* Open-addressing hash map from a (scope, key) pair to a 64-bit value. The
 * scope packs (proc or file, session); the key is an id, context, slot or
 * string id. Sized for millions of events: 24 bytes a slot. */
#ifndef NCCL_LENS_READER_HASH_H
#define NCCL_LENS_READER_HASH_H

#include <stddef.h>
#include <stdint.h>

struct lens_hash_slot { uint64_t scope, key; int64_t value; }; /* value INT64_MIN = empty */
struct lens_hash { struct lens_hash_slot *slots; size_t cap, n; };

static inline uint64_t lens_hash_scope(uint32_t a, uint32_t session) { return ((uint64_t)a << 32) | session; }

/* Insert or replace. 0, or -1 when out of memory. */
int lens_hash_put(struct lens_hash *h, uint64_t scope, uint64_t key, int64_t value);
/* 1 and *value if present, else 0. */
int lens_hash_get(const struct lens_hash *h, uint64_t scope, uint64_t key, int64_t *value);
/* Room for n entries without rehashing. 0, or -1 when out of memory. */
int lens_hash_reserve(struct lens_hash *h, size_t n);
void lens_hash_free(struct lens_hash *h);

#endif
