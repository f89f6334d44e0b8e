/* Reading the live pages of this node (include/nccl-lens/live.h): every
 * <dir>/<pid>.live, copied under its seqlock into private memory. Bytes ->
 * snapshots only; what they mean is agent_model.c's.
 *
 * A set is kept from one refresh to the next: each page's private copy stays
 * allocated, and a refresh copies (pread, never a mapping: the page is
 * another process's file and may be truncated or replaced under us) only the
 * header, the series in use and the instances added to recent[] since the
 * last copy. Copying whole 650 KiB pages each time cost the agent ~18 ms of
 * CPU per refresh of 8 pages.
 *
 * Pages are opened O_NOFOLLOW|O_NONBLOCK and must be regular files of one
 * link and exactly sizeof(struct lens_live_page) bytes; a page whose process
 * runs must belong to that process's user (or root). A refused file is named
 * once on stderr. Counts (n_comms, n_series) and names in the copies are
 * bounded and terminated. */
#ifndef NCCL_LENS_AGENT_LIVE_READ_H
#define NCCL_LENS_AGENT_LIVE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl-lens/live.h"

struct live_proc {
  struct lens_live_page *page; /* a consistent copy */
  int alive;                   /* the process still runs: same pid, start ticks and pid namespace
                                  (a page of another pid namespace: published within the last minute) */
  /* private to live_read.c */
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
/* One page by path (tests), whole, with the same checks. 0 ok. */
int live_read_page(const char *path, struct lens_live_page *out);

#endif
