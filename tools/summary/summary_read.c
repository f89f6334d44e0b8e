/* See summary_read.h. */
#include "summary/summary_read.h"

#include <stdlib.h>
#include <string.h>

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
  struct lens_job_part *p = calloc(1, sizeof *p);
  if (!p || lens_job_map(m, p) || lens_job_part_own_strings(p)) {
    if (p) lens_job_part_free(p);
    free(p);
    lens_cli_error(x->cmd, "out of memory");
    return NULL;
  }
  return p;
}

static void job_part_free(void *p) {
  lens_job_part_free(p);
  free(p);
}

int lens_summary_read(const char *cmd, struct lens_trace_cli *c, uint64_t job_min_wait_ns, unsigned flags,
                      struct lens_summary_run *r) {
  memset(r, 0, sizeof *r);
  struct map_ctx x = {cmd}; /* read by the workers during lens_passes_run only */
  /* The summary counts every ProxyStep and the bytes of each (their
   * states): the steps are read as events. */
  const struct lens_pass passes[N_PASSES] = {
      [PASS_SUMMARY] = {.map = summary_map, .free = summary_part_free, .ctx = &x, .needs = LENS_PASS_STEPS},
      [PASS_JOB] = {.map = job_map, .free = job_part_free, .ctx = &x},
      [PASS_HANG] = {.map = lens_hang_pass_map, .free = lens_hang_pass_free, .needs = LENS_PASS_STEPS},
  };
  size_t n_passes = flags & LENS_SUMMARY_READ_HANG ? N_PASSES : PASS_HANG;
  int rc = lens_passes_run(cmd, c, passes, n_passes, NULL, &r->out);
  if (rc) return rc;
  size_t ng = r->out.n_groups;
  if (n_passes > PASS_HANG) {
    if (lens_hang_merge((struct lens_hang_part *const *)r->out.parts + PASS_HANG * ng, ng, r->out.bases, &r->hang))
      goto oom;
    r->have_hang = 1;
  }
  for (size_t g = 0; g < ng; g++)
    if (lens_summary_merge(&r->s, r->out.parts[PASS_SUMMARY * ng + g], r->out.bases[g].thread)) goto oom;
  /* The summaries are merged: their parts go now, before the job reduce. */
  for (size_t g = 0; g < ng; g++) {
    summary_part_free(r->out.parts[PASS_SUMMARY * ng + g]);
    r->out.parts[PASS_SUMMARY * ng + g] = NULL;
  }
  /* The reduce wants the partials side by side: moved out of the driver's. */
  r->parts = calloc(ng ? ng : 1, sizeof *r->parts);
  if (!r->parts) goto oom;
  for (size_t g = 0; g < ng; g++) {
    struct lens_job_part *p = r->out.parts[PASS_JOB * ng + g];
    r->parts[g] = *p;
    free(p);
    r->out.parts[PASS_JOB * ng + g] = NULL;
  }
  r->n_parts = ng;
  r->job_skel = lens_job_skeleton(r->parts, ng);
  if (!r->job_skel || lens_job_reduce_consume(r->parts, ng, &r->j, job_min_wait_ns)) goto oom;
  r->have_job = 1;
  /* Rows reduced from records have no events: the hosts are placed from
   * the clocks and rank ends the map kept with the records (as job does). */
  for (size_t i = 0; i < r->j.n_ranks; i++) r->j.ranks[i].event = -1;
  size_t n_clocks;
  struct lens_align_proc_clock *clocks = lens_job_parts_clocks(r->parts, ng, &n_clocks);
  if (!clocks) goto oom;
  int bad = lens_align_build_ends(clocks, n_clocks, &r->j, NULL, &r->al);
  free(clocks);
  if (bad) goto oom;
  r->have_align = 1;
  return 0;
oom:
  lens_cli_error(cmd, "out of memory");
  return 1;
}

void lens_summary_run_free(struct lens_summary_run *r) {
  const struct lens_pass passes[N_PASSES] = {[PASS_SUMMARY] = {.free = summary_part_free},
                                             [PASS_JOB] = {.free = job_part_free},
                                             [PASS_HANG] = {.free = lens_hang_pass_free}};
  if (r->out.n_passes) lens_passes_free(passes, &r->out);
  if (r->have_align) lens_align_free(&r->al);
  if (r->have_hang) lens_hang_free(&r->hang);
  if (r->have_job) lens_job_free(&r->j);
  lens_job_skeleton_free(r->job_skel);
  for (size_t g = 0; r->parts && g < r->n_parts; g++) lens_job_part_free(&r->parts[g]);
  free(r->parts);
  lens_summary_free(&r->s);
  memset(r, 0, sizeof *r);
}
