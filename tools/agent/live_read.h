/* Reading the live pages of this node (include/nccl-lens/live.h): every
 * <dir>/<pid>.live, copied under its seqlock into private memory. Bytes ->
 * snapshots only; what they mean is agent_model.c's.
 *
 * A set is kept from one refresh to the next: each page stays mapped and its
 * private copy allocated, and a refresh copies only the header, the series in
 * use and the instances added to recent[] since the last copy. Copying whole
 * 650 KiB pages (and faulting fresh mappings in) each time cost the agent
 * ~18 ms of CPU per refresh of 8 pages. */
#ifndef NCCL_LENS_AGENT_LIVE_READ_H
#define NCCL_LENS_AGENT_LIVE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl-lens/live.h"

struct live_proc {
  struct lens_live_page *page; /* a consistent copy */
  int alive;                   /* the process still runs */
  /* private to live_read.c */
  const struct lens_live_page *map;
  dev_t dev;
  ino_t ino;
  uint64_t recent_have; /* page->recent[] holds every instance below this recent_total */
  int seen;
};

struct live_set {
  struct live_proc *procs;
  size_t n, cap;
};

/* Refreshes s from every page in dir whose process runs, or whose last update
 * is less than keep_s seconds old (a finished or killed job keeps its final
 * totals that long). Pages that are torn after 100 tries, truncated or of
 * another version are left out. 0 ok (maybe empty), -1 dir unreadable. */
int live_read_dir(const char *dir, unsigned keep_s, struct live_set *s);
void live_set_free(struct live_set *s);
/* One page by path (tests). 0 ok. */
int live_read_page(const char *path, struct lens_live_page *out);

#endif
