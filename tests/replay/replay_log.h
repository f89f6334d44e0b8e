/* Test helper: run the replay driver against the recording plugin and read
 * back its call log (one struct per line, in call order per process). */
#ifndef NCCL_LENS_TESTS_REPLAY_LOG_H
#define NCCL_LENS_TESTS_REPLAY_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/replay.h"

struct rl_line {
  long seq;
  int pid, tid;
  char call[12];  /* init start stop record finalize */
  char id[24];    /* e<N>, 0, x<addr> */
  uint64_t type;  /* start */
  char parent[24];
  char ctx[24];
  int rank;
  int state;      /* record */
  bool args_null; /* record */
  uint64_t args;  /* record: the 8-byte args union */
  char rest[320]; /* the key=value fields */
};

struct rl_log {
  int n;
  struct rl_line *l;
  struct lens_replay_result res;
  int rc;
};

/* Options preset for the recording plugin; mask is what it writes at init. */
void rl_opts(struct lens_replay_opts *o, const char *scenario, int nodes, int rpn);
/* Runs with REC_MASK=mask (and the given extra env "K=V", or NULL), reads the log. */
void rl_run(struct rl_log *lg, const struct lens_replay_opts *o, int mask, const char *env);
void rl_free(struct rl_log *lg);
/* Value of key in a line's fields ("" if absent); copied into a static buffer per call site. */
const char *rl_get(const struct rl_line *l, const char *key, char *buf, int len);
long rl_geti(const struct rl_line *l, const char *key);
/* Index of the start line that created handle id in process pid, or -1. */
int rl_find_start(const struct rl_log *lg, const char *id, int pid);

#endif
