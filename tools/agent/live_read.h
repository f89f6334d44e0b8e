/* Reading the live pages of this node (include/nccl-lens/live.h): every
 * <dir>/<pid>.live, copied under its seqlock into private memory. Bytes ->
 * snapshots only; what they mean is agent_model.c's. */
#ifndef NCCL_LENS_AGENT_LIVE_READ_H
#define NCCL_LENS_AGENT_LIVE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/live.h"

struct live_proc {
  struct lens_live_page *page; /* a consistent copy */
  int alive;                   /* the process still runs */
};

struct live_set {
  struct live_proc *procs;
  size_t n;
};

/* Reads every page in dir whose process runs, or whose last update is less
 * than keep_s seconds old (a finished or killed job keeps its final totals
 * that long). Pages that are torn after 100 tries, truncated or of another
 * version are skipped. 0 ok (maybe empty), -1 dir unreadable. */
int live_read_dir(const char *dir, unsigned keep_s, struct live_set *out);
void live_set_free(struct live_set *s);
/* One page by path (tests and top). 0 ok. */
int live_read_page(const char *path, struct lens_live_page *out);

#endif
