/* The numbers `nccl-lens summary` shows (and report and diff read), as map
 * and merge (tools/cli/passes.h): each host group's model maps to a
 * lens_summary that owns its strings and keeps no index into the model but
 * its proxy threads'; the groups' summaries merge, in input order, into the
 * one the views print. Times in ns (CLOCK_MONOTONIC of the host that
 * recorded them: only durations are kept), sizes in bytes.
 *
 * Merge keys: a communicator by (comm_id, name), never a model index (its
 * ranks on many hosts are one group); a row by its communicator and (func,
 * user tag, algo, kernel variant, proto, size bucket). Counts, sums and
 * maxima add up, so the merge is exact.
 *
 * A row's execution (exec_*) is the job view's (analysis/job/job.h), known
 * only once every group's job partial is reduced: the map keeps each
 * Coll/P2p task's event index and row (lens_sum_task), the merge
 * gathers them per group, and lens_summary_exec adds the decomposed
 * instances' execution to their rows. */
#ifndef NCCL_LENS_SUMMARY_ANALYSIS_H
#define NCCL_LENS_SUMMARY_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"
#include "starvation.h"

struct lens_job;

struct lens_stat { uint64_t n, sum, max; };

/* One row: communicator x (func, user tag, algo or symmetric kernel, proto, size bucket). */
struct lens_sum_row {
  int32_t group;            /* index into lens_summary.groups */
  const char *func, *algo, *proto;
  uint64_t user_tag;        /* NCCL 2.31+ userProfilerTag, 0 = untagged */
  const char *kernel_variant; /* a symmetric kernel's name (algo is then its algorithm part, proto ""), or NULL */
  int bucket;               /* lens_size_bucket of nccl-tests' size (lens_nccl_tests_size) */
  uint64_t count, bytes;
  struct lens_stat enqueue;    /* API start (or op start) -> op stop */
  struct lens_stat completion; /* its kernel's launch (else op start) -> completion (last ProxyOp / KernelCh) */
  uint64_t completed_bytes;    /* bytes of ops that have a completion time */
  /* The job view's execution of the row's tasks (lens_summary_exec): the
   * tasks whose instance it decomposed (lens_job_inst_decomposed), the sum
   * of their instance's size (nccl-tests': an AllGather's or
   * ReduceScatter's is the ranks times one rank's count) and of its
   * exec_ns (the span of the rank that started last: no rank's wait for
   * its peers). algbw = exec_bytes / exec_ns, nccl-tests' algbw; unknown
   * when exec_tasks is 0. */
  uint64_t exec_tasks, exec_bytes, exec_ns;
  struct lens_stat gpu_channel; /* per KernelCh: mapped or pTimer duration */
  uint64_t proxy_ops, proxy_steps, proxy_bytes;
  uint64_t graph;           /* ops from graph replays */
};

/* Copy-engine collectives (API v6+): communicator x (func, sync strategy,
 * size bucket). Their events bracket the host's enqueue of the copies (spec
 * §2: every CE stop means "enqueued"); the copy engines' own work is not
 * recorded, so there is no completion or GPU time. */
struct lens_sum_ce_row {
  int32_t group;
  const char *func, *sync_strategy;
  uint64_t user_tag;
  int bucket;
  uint64_t count, bytes;
  struct lens_stat enqueue; /* CollApi start (else CeColl start) -> CeColl stop */
  struct lens_stat ce;      /* CeColl start -> stop */
  struct lens_stat sync;    /* each CeSync start -> stop */
  struct lens_stat batch;   /* each CeBatch start -> stop */
  uint64_t batch_bytes, batch_ops; /* CeBatch totalBytes and numOps */
};

/* A communicator as seen by all loaded ranks (same comm_id and name). */
struct lens_sum_group {
  uint64_t comm_id;
  const char *name;
  int nranks, ranks_seen; /* ranks_seen: its inits that recorded an operation */
};

/* Time a proxy thread spent in each ProxyCtrl state. */
struct lens_sum_proxy {
  int32_t thread; /* index into the threads of the model mapped (merged: of the skeleton) */
  uint64_t ops, steps, bytes;
  uint64_t state_ns[4]; /* enum lens_proxy_level: active, sleep, idle (awake), append (within active/idle) */
  uint64_t first_ns, last_ns, span_ns; /* first ProxyCtrl start -> last stop */
};

/* A Coll/P2p task of a mapped model, kept until the job view is known: its
 * index in its group's model (as lens_job_rank.event names it), its row in
 * the summary holding it, its bytes. */
struct lens_sum_task { uint32_t event, row; };

struct lens_summary {
  struct lens_sum_group *groups; size_t n_groups;
  struct lens_sum_row *rows; size_t n_rows;
  struct lens_sum_proxy *proxies; size_t n_proxies;
  struct lens_sum_ce_row *ce_rows; size_t n_ce_rows;
  uint64_t acc_counts[32];  /* events per LENS_ACC_* bit */
  uint64_t time_source[3];  /* KernelCh per lens_time_source */
  uint64_t kernel_ch;
  int analyses_ran;
  int wide; /* text: every column (summary --wide); else the tables fit 120 columns */
  int all;  /* text: every row of the per-process, proxy-thread and host tables (summary --all) */
  uint64_t evf_counts[32];  /* events per LENS_EVF_* bit */
  uint64_t events;          /* events read (after the selection) */
  /* the scheduler probe's report (starvation.h), n_samples 0 without a probe trace */
  struct lens_starvation starvation;
  /* the hang analysis (hang_analysis.h) when the command ran it; JSON "hang"
   * is null without it. Not owned. */
  const struct lens_hang_report *hang;
  /* The tasks for lens_summary_exec, per group by event: group g's are
   * tasks[task_first[g] .. task_first[g + 1]), its processes start at
   * task_proc[g] (task_proc[n_task_groups]: the end of the last group's) in
   * the skeleton lens_job_rank.proc indexes. Freed by lens_summary_exec. */
  struct lens_sum_task *tasks; size_t n_tasks;
  size_t *task_first, *task_proc; size_t n_task_groups;
};
struct lens_hang_report;

/* Map: the summary of one model (a host group's), owning every string; its
 * proxies' thread indexes are the model's. 0, or -1 out of memory (s
 * empty). analyses_ran: the GPU analysis ran on m (else any accuracy flag
 * says so). The ProxySteps count whether m holds them as events or folded
 * into their ProxyOp (LENS_LOAD_FOLD_STEPS: lens_folded_op, the threads'
 * folded_*, folded_steps and folded_evf_counts): the same summary either
 * way (tests/passes/test_fold.c), except the order of two proxy threads
 * whose first proxy record starts at the same nanosecond in one process
 * when one of them is a folded step (a full model orders them by file
 * position, which a folded step no longer has). */
int lens_summary_map(const struct lens_model *m, struct lens_summary *s, int analyses_ran);
/* Merge: adds part (mapped from the next group, in input order) to into;
 * base is where that group's threads and processes start in the skeleton
 * (lens_passes_out.bases[g]). into starts zeroed. 0, or -1 out of memory
 * (into keeps what it had, to be freed). */
int lens_summary_merge(struct lens_summary *into, const struct lens_summary *part,
                       const struct lens_model_base *base);
/* After the merge of every group, with the job view of the same groups
 * (its ranks' proc and event as the reduce made them, before anything
 * resets the events): adds each decomposed instance's execution to the row
 * of each of its rank tasks (exec_*), then frees the tasks. A task no
 * decomposed instance names adds nothing. */
void lens_summary_exec(struct lens_summary *s, const struct lens_job *j);
/* The summary of a whole model: the map of it as one group, with its job
 * view's execution (lens_job_build, lens_summary_exec). */
int lens_summary_build(const struct lens_model *m, struct lens_summary *s, int analyses_ran);
void lens_summary_free(struct lens_summary *s);

#endif
