/* The timeline memo: what a whole reading of a job gives `nccl-lens export
 * --format job|perfetto`, kept in the private cache (cli/cache.h) so that a
 * --since/--until window of the timeline reads about the window
 * (docs/scale.md, "A window of the timeline").
 *
 * The timeline's window is on job time: where it lies on each host's
 * MONOTONIC clock is known only from the alignment, and the alignment only
 * from every instance's ends, so a window without the memo reads the whole
 * job twice. An export that reads the job whole (a whole export, or the
 * first window: export_job.c) leaves, under the key of its inputs:
 *   - one entry: each process's pid, first event and producer, the
 *     communicators (for --comm and the drawn processes), each input's host
 *     group and each group's first process (to check the drawing reading
 *     against), the alignment, every instance of the job view (what a slice
 *     names: operation, seq, bytes, execution, last rank, cause) and an
 *     index of slabs;
 *   - one entry a slab (zstd): the rank rows of a run of instances, each
 *     with its GPU slice's MONOTONIC times (lens_job_row_time), and the slab's
 *     span of aligned job time.
 * A window then reads that entry and the slabs its span meets, and draws
 * each host group loaded by the job window mapped to the group's hosts
 * (lens_model_load_window, absolute). A slab missing (evicted) or anything
 * that does not match is a miss: the export reads the job whole. */
#ifndef NCCL_LENS_EXPORT_TIMELINE_MEMO_H
#define NCCL_LENS_EXPORT_TIMELINE_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/job/job.h"
#include "analysis/job/job_align.h"
#include "cli/cache.h"
#include "export/job_export.h"
#include "reader/lensread.h"

struct lens_timeline_comm {
  int32_t proc;
  uint32_t reserved;
  uint64_t comm_id;
  char name[128];
};

struct lens_timeline_slab {
  uint64_t inst0, inst1;  /* its instances [inst0, inst1) */
  uint64_t rows;          /* their rank rows */
  int64_t lo, hi;         /* aligned job time its drawable GPU slices span (lo > hi: none) */
};

struct lens_timeline_memo {
  size_t n_inputs, n_procs, n_groups;
  int32_t *group_of_input;    /* per input: its host group */
  uint64_t *group_proc;       /* per group (+ 1): its first process in the job's numbering */
  uint32_t *pid;              /* per process */
  uint64_t *min_start;        /* per process: its first event (MONOTONIC), UINT64_MAX none */
  uint8_t *plugin;            /* per process: its trace was written by the plugin */
  struct lens_timeline_comm *comms; size_t n_comms;
  struct lens_align a;
  int have_a;
  /* Every instance; ranks and row_times (one per rank row) only for the
   * slabs read by lens_timeline_memo_rows, in the job view's order. */
  struct lens_job j;
  struct lens_job_row_time *row_times;
  struct lens_timeline_slab *slabs; size_t n_slabs;
  uint64_t *inst_rows;        /* per instance: its rank rows in the whole view */
  char *strings;              /* the instances' operation names */
};

/* Stores the memo of a whole reading under k (kind "timeline"): skel and
 * bases the first reading's, group_of_input per input (c->n), min_start and
 * plugin (lens_job_export_proc_facts) per skeleton process, rt per row of
 * j->ranks (UINT64_MAX a: not drawn). 0, or -1 (nothing stored, or not
 * every part). */
int lens_timeline_memo_save(const struct lens_cache_key *k, size_t n_inputs, const long *group_of_input,
                            const struct lens_model *skel, const struct lens_model_base *bases, size_t n_groups,
                            const uint64_t *min_start, const struct lens_align *a, const struct lens_job *j,
                            const struct lens_job_row_time *rt, const uint8_t *plugin);

/* The memo's main entry: 0, or -1 on a miss (mm zeroed: free it anyway). */
int lens_timeline_memo_load(const struct lens_cache_key *k, size_t n_inputs, struct lens_timeline_memo *mm);

/* The rank rows of every slab whose span meets [lo, hi] (aligned job ns):
 * mm->j.ranks, mm->row_times and each instance's first_rank/n_ranks (0 rows
 * for the instances of the slabs not read). 0, or -1 on a miss. */
int lens_timeline_memo_rows(const struct lens_cache_key *k, struct lens_timeline_memo *mm, int64_t lo, int64_t hi);

void lens_timeline_memo_free(struct lens_timeline_memo *mm);

/* What the two readers check, on bytes (tests/fuzz/fuzz_timeline_memo.c):
 * the main entry's data (0, or -1 with mm zeroed), and whether z is slab
 * `slab` of `rows` rows of processes under n_procs (0 / -1). */
int lens_timeline_memo_parse(const uint8_t *data, size_t len, size_t n_inputs, struct lens_timeline_memo *mm);
int lens_timeline_memo_slab_check(const void *z, size_t zlen, uint64_t slab, uint64_t rows, size_t n_procs);

#endif
