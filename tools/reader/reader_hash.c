/* See reader_hash.h. Linear probing; grows at 3/4 load. */
#include "reader_hash.h"

#include <stdlib.h>

static uint64_t mix(uint64_t scope, uint64_t key) {
  uint64_t x = key ^ (scope * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

static void put_slot(struct lens_hash_slot *slots, size_t cap, uint64_t scope, uint64_t key, int64_t value,
                     size_t *n) {
  size_t i = mix(scope, key) & (cap - 1);
  for (;; i = (i + 1) & (cap - 1)) {
    if (slots[i].value == INT64_MIN) {
      slots[i].scope = scope;
      slots[i].key = key;
      slots[i].value = value;
      (*n)++;
      return;
    }
    if (slots[i].scope == scope && slots[i].key == key) {
      slots[i].value = value;
      return;
    }
  }
}

static int rehash(struct lens_hash *h, size_t cap) {
  struct lens_hash_slot *s = malloc(cap * sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < cap; i++) s[i].value = INT64_MIN;
  size_t n = 0;
  for (size_t i = 0; i < h->cap; i++)
    if (h->slots[i].value != INT64_MIN) put_slot(s, cap, h->slots[i].scope, h->slots[i].key, h->slots[i].value, &n);
  free(h->slots);
  h->slots = s;
  h->cap = cap;
  h->n = n;
  return 0;
}

static int grow(struct lens_hash *h) { return rehash(h, h->cap ? h->cap * 2 : 64); }

int lens_hash_reserve(struct lens_hash *h, size_t n) {
  size_t cap = h->cap ? h->cap : 64;
  while (n * 4 > cap * 3) cap *= 2;
  return cap == h->cap ? 0 : rehash(h, cap);
}

int lens_hash_put(struct lens_hash *h, uint64_t scope, uint64_t key, int64_t value) {
  if ((h->n + 1) * 4 > h->cap * 3 && grow(h)) return -1;
  put_slot(h->slots, h->cap, scope, key, value, &h->n);
  return 0;
}

int lens_hash_get(const struct lens_hash *h, uint64_t scope, uint64_t key, int64_t *value) {
  if (!h->cap) return 0;
  size_t i = mix(scope, key) & (h->cap - 1);
  for (;; i = (i + 1) & (h->cap - 1)) {
    if (h->slots[i].value == INT64_MIN) return 0;
    if (h->slots[i].scope == scope && h->slots[i].key == key) {
      *value = h->slots[i].value;
      return 1;
    }
  }
}

void lens_hash_free(struct lens_hash *h) {
  free(h->slots);
  h->slots = NULL;
  h->cap = h->n = 0;
}
