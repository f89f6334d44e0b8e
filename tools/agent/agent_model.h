/* What the agent knows: the node's pages (live_read.h) and, across them, the
 * job view's execution/wait split for communicators with several ranks on
 * this node (docs/job.md's definitions, applied to the pages' recent
 * instances): execution = the shortest span among the ranks of an instance,
 * a rank's wait = its span minus the execution, last rank = the rank with the
 * shortest span. Kept across refreshes; bounded tables. */
#ifndef NCCL_LENS_AGENT_MODEL_H
#define NCCL_LENS_AGENT_MODEL_H

#include <stdint.h>

#include "live_read.h"
#include "sched/sched_page.h"

#define AGENT_SPLITS 256   /* (communicator, function) pairs */
#define AGENT_RANKS 1024   /* (communicator, rank) pairs */
#define AGENT_PENDING 16384 /* instances waiting for their other local ranks (open-addressing table, power of 2) */
#define AGENT_CURSORS 256  /* processes followed */

struct agent_split {
  uint64_t comm_id;
  char comm_name[64];
  char func[LENS_LIVE_FUNC];
  int nranks, local_ranks; /* local_ranks < nranks: partial (execution is an upper bound) */
  uint64_t instances;
  struct lens_live_hist exec;
  double last_busbw_gbs; /* of the newest instance, nccl-tests' bus bandwidth from the execution */
  int32_t last_rank;     /* of the newest instance */
};
struct agent_rank {
  uint64_t comm_id;
  int32_t rank;
  uint32_t pid;
  uint64_t wait_ns, exec_ns, last_count;
};
struct agent_pending {
  uint64_t comm_id, seq, first_real_ns, bytes; /* first_real_ns 0: a free slot */
  uint16_t split;
  uint8_t n;
  int32_t rank[8];
  uint32_t pid[8];
  uint64_t span[8];
};
struct agent_cursor {
  uint32_t pid;
  uint64_t start_real_ns, consumed;
  uint64_t missed; /* instances that left the page's ring before the agent read them */
  uint64_t seen_real_ns; /* when the agent first read this page */
};
/* Per refresh: communicators seen on this node, with their local rank count. */
struct agent_comm {
  uint64_t comm_id;
  int nranks, local;
};

struct agent_model {
  struct live_set pages;
  struct agent_split splits[AGENT_SPLITS];
  uint32_t n_splits;
  struct agent_rank ranks[AGENT_RANKS];
  uint32_t n_ranks;
  struct agent_pending pending[AGENT_PENDING]; /* hashed by (comm_id, split, seq), linear probing */
  uint32_t n_pending;
  struct agent_comm comms[AGENT_SPLITS];
  uint32_t n_comms;
  struct agent_cursor cursors[AGENT_CURSORS];
  uint32_t n_cursors;
  uint64_t expired; /* instances whose other local ranks never came (10 s) */
  uint64_t full;    /* instances not followed: the pending table or the split table was full */
  uint64_t refreshes;
  /* `nccl-lens sched` pages in the same dir (<pid>.sched): per watched thread, time starved */
  struct lens_sched_page_thread *sched;
  size_t n_sched;
};

/* Re-reads the pages and folds their new instances into the split. */
int agent_model_refresh(struct agent_model *m, const char *dir, unsigned keep_s);
void agent_model_free(struct agent_model *m);
/* Re-reads the sched pages of dir (agent_sched.c); called by agent_model_refresh. */
void agent_sched_refresh(struct agent_model *m, const char *dir, unsigned keep_s);
/* Size bucket label of a live series ("1MiB", "0B"). */
void agent_size_label(int bucket, char *buf, size_t len);

#endif
