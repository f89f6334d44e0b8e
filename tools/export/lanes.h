/* Lanes: complete ("X") events on one Chrome/Perfetto track must nest
 * (each either inside the one before it or after it has ended). Work that
 * really overlaps (a grouped Send and Recv, two kernels on two streams, two
 * ProxyOps) does not; rather than clip a measured time, each interval goes to
 * the first lane of its track where it nests, opening a new lane when none
 * does. Intervals must come in order of start, the longer first at equal
 * starts (lens_lanes_sort). */
#ifndef NCCL_LENS_EXPORT_LANES_H
#define NCCL_LENS_EXPORT_LANES_H

#include <stddef.h>
#include <stdint.h>

#define LENS_LANES_MAX 64 /* a track never has more; the rest share the last (counted) */
#define LENS_LANES_DEPTH 32

struct lens_lanes {
  int64_t open[LENS_LANES_MAX][LENS_LANES_DEPTH]; /* per lane: ends of the intervals open, innermost last */
  int depth[LENS_LANES_MAX];
  int used;
  size_t crowded; /* intervals put on the last lane although they do not nest there */
};

void lens_lanes_reset(struct lens_lanes *l);
/* The lane for [start, end] (end >= start). */
int lens_lanes_place(struct lens_lanes *l, int64_t start, int64_t end);

#endif
