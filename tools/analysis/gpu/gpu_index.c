/* Sorted tables instead of hash maps: built once per analysis, then binary
 * searched; (proc, key) so ids of different processes never collide. */
#include "gpu_index.h"

#include <stdlib.h>

int lens_gpu_index_add(struct lens_gpu_index *ix, int32_t proc, uint64_t key, int32_t val) {
  if (ix->n == ix->cap) {
    size_t cap = ix->cap ? ix->cap * 2 : 256;
    struct lens_gpu_ix *v = realloc(ix->v, cap * sizeof(*v));
    if (!v) return -1;
    ix->v = v;
    ix->cap = cap;
  }
  ix->v[ix->n++] = (struct lens_gpu_ix){proc, val, key};
  return 0;
}

static int cmp(const void *pa, const void *pb) {
  const struct lens_gpu_ix *a = pa, *b = pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  return (a->val > b->val) - (a->val < b->val);
}

void lens_gpu_index_sort(struct lens_gpu_index *ix) {
  if (ix->n) qsort(ix->v, ix->n, sizeof(ix->v[0]), cmp);
}

long lens_gpu_index_find(const struct lens_gpu_index *ix, int32_t proc, uint64_t key) {
  size_t lo = 0, hi = ix->n;
  while (lo < hi) { /* first entry with key >= key */
    size_t mid = (lo + hi) / 2;
    if (ix->v[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i < ix->n && ix->v[i].key == key; i++)
    if (proc < 0 || ix->v[i].proc == proc) return (long)i;
  return -1;
}

void lens_gpu_index_free(struct lens_gpu_index *ix) {
  free(ix->v);
  ix->v = NULL;
  ix->n = ix->cap = 0;
}
