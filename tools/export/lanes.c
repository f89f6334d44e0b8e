/* See lanes.h. */
#include "export/lanes.h"

#include <string.h>

void lens_lanes_reset(struct lens_lanes *l) { memset(l, 0, sizeof *l); }

/* 1 if [start, end] nests on lane k (closing what ended before start). */
static int fits(struct lens_lanes *l, int k, int64_t start, int64_t end) {
  while (l->depth[k] && l->open[k][l->depth[k] - 1] <= start) l->depth[k]--;
  if (!l->depth[k]) return 1;
  return end <= l->open[k][l->depth[k] - 1] && l->depth[k] < LENS_LANES_DEPTH;
}

int lens_lanes_place(struct lens_lanes *l, int64_t start, int64_t end) {
  int k = 0;
  while (k < l->used && !fits(l, k, start, end)) k++;
  if (k == l->used) {
    if (l->used == LENS_LANES_MAX) {
      l->crowded++;
      return LENS_LANES_MAX - 1;
    }
    l->used++;
  }
  l->open[k][l->depth[k]++] = end;
  return k;
}
