/* See summary_read.h. */
#include "summary/summary_read.h"

#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "analysis/analyses.h"
#include "analysis/job/job_part.h"
#include "cli/cli.h"

enum { PASS_SUMMARY, PASS_JOB, PASS_HANG, N_PASSES };

struct map_ctx { const char *cmd; };

static void *summary_map(struct lens_model *m, void *ctx) {
  const struct map_ctx *x = ctx;
  struct lens_summary *s = malloc(sizeof *s);
  if (!s || lens_summary_map(m, s, lens_analyze_gpu != NULL)) {
    free(s);
    lens_cli_error(x->cmd, "out of memory");
    return NULL;
  }
  return s;
}

static void summary_part_free(void *p) {
  lens_summary_free(p);
  free(p);
}

static void *job_map(struct lens_model *m, void *ctx) {
  const struct map_ctx *x = ctx;
  void *p = lens_job_pass_map(m, NULL); /* packed: it waits for the reduce beside every other group's */
  if (!p) lens_cli_error(x->cmd, "out of memory");
  return p;
}

int lens_summary_read(const char *cmd, struct lens_trace_cli *c, uint64_t job_min_wait_ns, unsigned flags,
                      struct lens_summary_run *r) {
  return lens_summary_read_with(cmd, c, job_min_wait_ns, flags, NULL, 0, r);
}

void **lens_summary_run_extra(struct lens_summary_run *r, size_t k) {
  return r->out.parts + (r->extra_at + k) * r->out.n_groups;
}

int lens_summary_read_with(const char *cmd, struct lens_trace_cli *c, uint64_t job_min_wait_ns, unsigned flags,
                           const struct lens_pass *extra, size_t n_extra, struct lens_summary_run *r) {
  memset(r, 0, sizeof *r);
  struct map_ctx x = {cmd}; /* read by the workers during lens_passes_run only (free needs no ctx) */
  /* The summary counts every ProxyStep and the bytes of each, the hang
   * diagnosis reads a stuck op's steps and their states: the reader folds
   * the steps into their ProxyOp and keeps both (LENS_LOAD_FOLD_STEPS),
   * unless an extra pass reads them as events. */
  const struct lens_pass base[N_PASSES] = {
      [PASS_SUMMARY] = {.map = summary_map, .free = summary_part_free, .ctx = &x},
      [PASS_JOB] = {.map = job_map, .free = lens_job_pass_free, .ctx = &x},
      [PASS_HANG] = {.map = lens_hang_pass_map, .free = lens_hang_pass_free},
  };
  size_t n_base = flags & LENS_SUMMARY_READ_HANG ? N_PASSES : PASS_HANG;
  struct lens_pass *passes = malloc((n_base + n_extra) * sizeof *passes);
  if (!passes) {
    lens_cli_error(cmd, "out of memory");
    return 1;
  }
  memcpy(passes, base, n_base * sizeof *passes);
  if (n_extra) memcpy(passes + n_base, extra, n_extra * sizeof *passes);
  r->passes = passes, r->n_passes = n_base + n_extra, r->extra_at = n_base;
  size_t n_passes = n_base;
  int rc = lens_passes_run(cmd, c, passes, r->n_passes, NULL, &r->out);
  if (rc) return rc;
  size_t ng = r->out.n_groups;
  if (n_passes > PASS_HANG) {
    if (lens_hang_merge((struct lens_hang_part *const *)r->out.parts + PASS_HANG * ng, ng, r->out.bases, &r->hang))
      goto oom;
    r->have_hang = 1;
  }
  for (size_t g = 0; g < ng; g++)
    if (lens_summary_merge(&r->s, r->out.parts[PASS_SUMMARY * ng + g], &r->out.bases[g])) goto oom;
  /* The summaries are merged: their parts go now, before the job reduce. */
  for (size_t g = 0; g < ng; g++) {
    summary_part_free(r->out.parts[PASS_SUMMARY * ng + g]);
    r->out.parts[PASS_SUMMARY * ng + g] = NULL;
  }
  /* The reduce wants the partials side by side: moved out of the driver's. */
  r->parts = lens_job_pass_take(r->out.parts + PASS_JOB * ng, ng);
  if (!r->parts) goto oom;
  r->n_parts = ng;
  r->job_skel = lens_job_skeleton(r->parts, ng);
  if (!r->job_skel || lens_job_reduce_consume(r->parts, ng, &r->j, job_min_wait_ns)) goto oom;
  r->have_job = 1;
  /* each row's execution, while the job's rows still name their events: algbw never counts a wait */
  lens_summary_exec(&r->s, &r->j);
  /* Rows reduced from records have no events: the hosts are placed from
   * the clocks and rank ends the map kept with the records (as job does). */
  int32_t *events = NULL; /* LENS_SUMMARY_READ_EVENTS: given back after the alignment */
  if ((flags & LENS_SUMMARY_READ_EVENTS) && !(events = malloc((r->j.n_ranks + 1) * sizeof *events))) goto oom;
  for (size_t i = 0; i < r->j.n_ranks; i++) {
    if (events) events[i] = r->j.ranks[i].event;
    r->j.ranks[i].event = -1;
  }
  size_t n_clocks;
  struct lens_align_proc_clock *clocks = lens_job_parts_clocks(r->parts, ng, &n_clocks);
  int bad = !clocks || lens_align_build_ends(clocks, n_clocks, &r->j, NULL, &r->al);
  free(clocks);
  for (size_t i = 0; events && i < r->j.n_ranks; i++) r->j.ranks[i].event = events[i];
  free(events);
  if (bad) goto oom;
  r->have_align = 1;
  return 0;
oom:
  lens_cli_error(cmd, "out of memory");
  return 1;
}

void lens_summary_run_slim(struct lens_summary_run *r) {
  if (r->have_align) lens_align_free(&r->al);
  r->have_align = 0;
  if (r->have_hang) lens_hang_free(&r->hang);
  r->have_hang = 0;
  free(r->j.ranks);
  r->j.ranks = NULL, r->j.n_ranks = 0;
  free(r->j.oneway);
  r->j.oneway = NULL, r->j.n_oneway = 0;
  lens_job_skeleton_free(r->job_skel);
  r->job_skel = NULL;
  for (size_t g = 0; r->parts && g < r->n_parts; g++) {
    struct lens_job_part *p = &r->parts[g];
    free(p->procs), free(p->comms), free(p->recs), free(p->recs_z), free(p->ops), free(p->wops), free(p->clocks);
    p->procs = NULL, p->comms = NULL, p->recs = NULL, p->recs_z = NULL, p->ops = NULL, p->wops = NULL;
    p->clocks = NULL, p->recs_z_len = 0;
    p->n_procs = p->n_comms = p->n_recs = p->n_ops = p->n_wops = 0;
  }
#ifdef __GLIBC__
  malloc_trim(0); /* the partials came from the pass driver's heap, kept: their pages go back now */
#endif
}

void lens_summary_run_free(struct lens_summary_run *r) {
  if (r->out.n_passes && r->passes) lens_passes_free(r->passes, &r->out);
  free(r->passes);
  if (r->have_align) lens_align_free(&r->al);
  if (r->have_hang) lens_hang_free(&r->hang);
  if (r->have_job) lens_job_free(&r->j);
  lens_job_skeleton_free(r->job_skel);
  for (size_t g = 0; r->parts && g < r->n_parts; g++) lens_job_part_free(&r->parts[g]);
  free(r->parts);
  lens_summary_free(&r->s);
  memset(r, 0, sizeof *r);
}
