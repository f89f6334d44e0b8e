/* Checks a Chrome Trace Event JSON document the way a viewer relies on it:
 * complete ("X") events on any one track (pid, tid) nest (each inside the
 * one it starts in, or after it has ended), and flow events ("s"/"t"/"f")
 * each fall inside a complete event of their track; per flow id, the ranks
 * (args.rank of those enclosing events) it ties together. */
#ifndef NCCL_LENS_TESTS_TIMELINE_CHECK_H
#define NCCL_LENS_TESTS_TIMELINE_CHECK_H

#include <stddef.h>
#include <stdint.h>

struct tl_flow {
  int64_t id;
  size_t events, unbound; /* flow events; of those not inside a slice of their track */
  int ranks[64];          /* distinct ranks tied (first 64) */
  size_t n_ranks;
};

struct tl_check {
  size_t slices, tracks, nest_violations;
  char first_violation[256];
  struct tl_flow *flows; size_t n_flows;
  int64_t min_ts_ns, max_end_ns;
  size_t ranks_seen[4096]; /* slices per args.rank (ranks < 4096) */
};

/* 0 when the file parsed as JSON with a traceEvents array; c filled. */
int tl_check_file(const char *path, struct tl_check *c);
void tl_check_free(struct tl_check *c);

#endif
