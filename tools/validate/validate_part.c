/* See validate_part.h. The listed launches and channels are the same records
 * lens_validate_print wrote from a whole model: every field is taken here,
 * where the group's model (kernels, clock maps, ops) is at hand. */
#include "validate/validate_part.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gpu/gpu_analysis.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "validate/validate_print.h"

static uint64_t op_launch(const struct lens_event *op) {
  return op->type == LENS_T_COLL ? op->p.coll.launch_id : op->type == LENS_T_P2P ? op->p.p2p.launch_id : 0;
}

/* "AllReduce", or with the op's user tag (NCCL 2.31+) "AllReduce, backward". */
static void op_func(const struct lens_event *op, char *buf, size_t len) {
  const char *f = op->type == LENS_T_COLL ? op->p.coll.func : op->type == LENS_T_P2P ? op->p.p2p.func : NULL;
  uint64_t tag = lens_event_user_tag(op);
  char tb[32];
  if (!tag) snprintf(buf, len, "%s", f ? f : "?");
  else snprintf(buf, len, "%s, %s", f ? f : "?", lens_tag_label(tag, tb, sizeof tb));
}

/* "yes" only when the channel is inside its kernel by more than the map's
 * error bound on both sides: under a map of milliseconds (notice times) the
 * bound is wider than what is judged, and the answer is "unknown". The
 * "no" comes from LENS_ACC_OUTSIDE_KERNEL (outside by more than the bound,
 * or a kernel shorter than its channels). */
static const char *inside_kernel(const struct lens_model *m, const struct lens_event *e, const struct lens_kernel *k) {
  int32_t map = lens_gpu_map_for(m, e->thread, e->p.kernel_ch.start_gpu_ns);
  if (map < 0) return "unknown";
  double tol = m->clock_maps[map].error_bound_ns - 50; /* 50 ns: %globaltimer quantisation */
  double before = (double)(int64_t)(e->acc.gpu_start_mono_ns - k->start_mono_ns);
  double after = e->acc.gpu_stop_mono_ns ? (double)(int64_t)(k->end_mono_ns - e->acc.gpu_stop_mono_ns) : before;
  return before >= tol && after >= tol ? "yes" : "unknown";
}

static void channel_rec(const struct lens_model *m, const struct lens_event *e, const struct lens_event *op,
                        struct lens_vl_channel *c) {
  const struct lens_accuracy *a = &e->acc;
  memset(c, 0, sizeof *c);
  const struct lens_kernel *k =
      a->cupti_kernel >= 0 && (size_t)a->cupti_kernel < m->n_kernels ? &m->kernels[a->cupti_kernel] : NULL;
  int checked = k && k->start_mono_ns && !k->graph_id && a->gpu_start_mono_ns;
  snprintf(c->inside, sizeof c->inside, "%s",
           !checked ? "unknown" : (a->flags & LENS_ACC_OUTSIDE_KERNEL) ? "no" : inside_kernel(m, e, k));
  c->id = e->id;
  c->channel = e->p.kernel_ch.channel;
  c->op_type = (uint8_t)op->type;
  op_func(op, c->func, sizeof c->func);
  c->start_gpu = e->p.kernel_ch.start_gpu_ns;
  c->stop_gpu = e->p.kernel_ch.stop_gpu_ns;
  c->start_mono = a->gpu_start_mono_ns;
  c->stop_mono = a->gpu_stop_mono_ns;
  c->notice_lag = a->notice_lag_ns;
  c->lag_known = (uint8_t)lens_gpu_notice_lag_known(m, e);
  c->time_source = (uint8_t)a->time_source;
  c->overrun = (a->flags & (LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)) != 0;
  c->flags = a->flags;
  c->checked = (uint8_t)checked;
  c->span_base = checked ? k->start_mono_ns : a->gpu_start_mono_ns;
}

/* Which Coll/P2p belongs to which launch: the ops of launch ordinal k (k-th
 * KernelLaunch in event order) are ops[first[k] .. first[k+1]), in event
 * order; ops without a launch id come last. Looking them up per launch by
 * scanning every event made --json (which lists every launch) quadratic:
 * 183 s on 1 M events. */
struct launch_index {
  int32_t *ops;        /* event indices of Coll/P2p, grouped by launch ordinal */
  size_t *first;       /* n_launches + 2 entries: the last group is "no launch" */
  size_t n_launches;
};

struct op_key { int32_t proc; uint64_t id; int32_t ev; int32_t ordinal; };

static int by_key(const void *a, const void *b) {
  const struct op_key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->ev > y->ev) - (x->ev < y->ev);
}

static void launch_index_free(struct launch_index *ix) {
  free(ix->ops);
  free(ix->first);
  memset(ix, 0, sizeof *ix);
}

/* 0, or -1 out of memory. An op whose launch id names no launch of its
 * process is listed nowhere; one whose (proc, id) several launches share is
 * listed under the first of them. */
static int launch_index_build(const struct lens_model *m, struct launch_index *ix) {
  memset(ix, 0, sizeof *ix);
  size_t n_l = 0, n_op = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    int t = m->events[i].type;
    n_l += t == LENS_T_KERNEL_LAUNCH;
    n_op += t == LENS_T_COLL || t == LENS_T_P2P;
  }
  struct op_key *l = malloc((n_l + 1) * sizeof *l);
  int32_t *op_of = malloc((n_op + 1) * sizeof *op_of); /* per op: its launch ordinal, n_l none, -1 unknown id */
  size_t *fill = calloc(n_l + 1, sizeof *fill);
  ix->first = calloc(n_l + 2, sizeof *ix->first);
  ix->ops = malloc((n_op + 1) * sizeof *ix->ops);
  if (!l || !op_of || !fill || !ix->first || !ix->ops) goto oom;
  ix->n_launches = n_l;
  size_t k = 0;
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_KERNEL_LAUNCH) {
      l[k] = (struct op_key){m->events[i].proc, m->events[i].id, (int32_t)i, (int32_t)k};
      k++;
    }
  qsort(l, n_l, sizeof *l, by_key);
  k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *op = &m->events[i];
    if (op->type != LENS_T_COLL && op->type != LENS_T_P2P) continue;
    uint64_t id = op_launch(op);
    int32_t ord = (int32_t)n_l;
    if (id) {
      struct op_key key = {op->proc, id, -1, 0};
      size_t lo = 0, hi = n_l; /* first launch key >= (proc, id, -1) */
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (by_key(&l[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
      }
      ord = lo < n_l && l[lo].proc == op->proc && l[lo].id == id ? l[lo].ordinal : -1;
    }
    op_of[k++] = ord;
    if (ord >= 0) ix->first[ord + 1]++;
  }
  for (size_t g = 1; g <= n_l + 1; g++) ix->first[g] += ix->first[g - 1];
  k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    int t = m->events[i].type;
    if (t != LENS_T_COLL && t != LENS_T_P2P) continue;
    int32_t ord = op_of[k++];
    if (ord >= 0) ix->ops[ix->first[ord] + fill[ord]++] = (int32_t)i;
  }
  free(fill);
  free(l);
  free(op_of);
  return 0;
oom:
  free(fill);
  free(l);
  free(op_of);
  launch_index_free(ix);
  return -1;
}

/* How many of launch ordinal k's channels are flagged (LENS_VALIDATE_FLAGGED). */
static size_t flagged_channels(const struct lens_model *m, const struct launch_index *ix, size_t k) {
  size_t n = 0;
  for (size_t o = ix->first[k]; o < ix->first[k + 1]; o++)
    for (int32_t c = m->events[ix->ops[o]].first_child; c >= 0; c = m->events[c].next_sibling)
      n += m->events[c].type == LENS_T_KERNEL_CH && (m->events[c].acc.flags & LENS_VALIDATE_FLAGGED);
  return n;
}

/* The KernelCh of launch ordinal k's ops (k == n_launches: ops without a
 * launch): counted, and written while *budget lasts (-1: no limit); with
 * ok_used, one that is not flagged only while lens_fmt_json_ok_listed says.
 * *ok counts those not flagged (NULL: not counted). */
static size_t channels_of(const struct lens_model *m, const struct launch_index *ix, size_t k, FILE *f,
                          long *budget, size_t *written, size_t *ok_used, size_t *ok) {
  size_t n = 0;
  for (size_t o = ix->first[k]; o < ix->first[k + 1]; o++) {
    const struct lens_event *op = &m->events[ix->ops[o]];
    for (int32_t c = op->first_child; c >= 0; c = m->events[c].next_sibling) {
      if (m->events[c].type != LENS_T_KERNEL_CH) continue;
      n++;
      int flagged = (m->events[c].acc.flags & LENS_VALIDATE_FLAGGED) != 0;
      if (ok && !flagged) (*ok)++;
      if (!f || (*budget >= 0 && (long)*written >= *budget)) continue;
      if (ok_used && !flagged && !lens_fmt_json_ok_listed(ok_used, 1, 0)) continue;
      struct lens_vl_channel rec;
      channel_rec(m, &m->events[c], op, &rec);
      fwrite(&rec, sizeof rec, 1, f);
      (*written)++;
    }
  }
  return n;
}

static void launch_rec(const struct lens_model *m, const struct lens_event *l, struct lens_vl_launch *r) {
  memset(r, 0, sizeof *r);
  r->id = l->id;
  r->ext_id = l->p.kernel_launch.ext_corr_id;
  r->proc = l->proc;
  r->no_kernel_record = (l->acc.flags & LENS_ACC_NO_KERNEL_RECORD) != 0;
  r->kernel_index = -1;
  if (l->acc.cupti_kernel >= 0 && (size_t)l->acc.cupti_kernel < m->n_kernels) {
    const struct lens_kernel *k = &m->kernels[l->acc.cupti_kernel];
    r->kernel_index = l->acc.cupti_kernel;
    r->corr = k->correlation_id, r->dev = k->device_id, r->stream = k->stream_id, r->grid_x = k->grid_x;
    r->graph_id = k->graph_id, r->k_start = k->start_mono_ns, r->k_end = k->end_mono_ns;
  }
}

static void cupti_of(const struct lens_model *m, struct lens_vl_cupti *c) {
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  memset(c, 0, sizeof *c);
  snprintf(c->graph_join, sizeof c->graph_join, "none");
  if (!r) return;
  c->have_report = 1;
  c->cupti_available = r->cupti_available;
  snprintf(c->note, sizeof c->note, "%s", r->cupti_note);
  snprintf(c->graph_join, sizeof c->graph_join, "%s", r->graph_join ? r->graph_join : "none");
  c->blobs = r->blobs, c->blob_errors = r->blob_errors, c->records = r->records;
  c->kernel_records = r->kernel_records, c->ext_records = r->ext_records, c->api_records = r->api_records;
  c->kernels_joined = r->kernels_joined, c->kernels_graph = r->kernels_graph;
  c->kernels_graph_joined = r->kernels_graph_joined, c->foreign_ext_ids = r->foreign_ext_ids;
  c->launches_with_ext = r->launches_with_ext, c->launches_no_kernel = r->launches_no_kernel;
  c->kch_cupti_checked = r->kch_cupti_checked, c->kernels_contradict = r->kernels_contradict;
}

void lens_validate_part_free(void *part) {
  struct lens_validate_part *p = part;
  if (!p) return;
  free(p->file_events);
  free(p->map_fixed);
  free(p->map_offset);
  free(p);
}

void *lens_validate_map(struct lens_model *m, void *ctx) {
  const struct lens_validate_map_ctx *x = ctx;
  struct lens_validate_part *p = calloc(1, sizeof *p);
  struct launch_index ix = {0};
  FILE *f = NULL;
  if (!p) goto oom;
  p->file_events = calloc(m->n_files + 1, sizeof *p->file_events);
  p->map_fixed = calloc(m->n_clock_maps + 1, 1);
  p->map_offset = calloc(m->n_clock_maps + 1, sizeof *p->map_offset);
  if (!p->file_events || !p->map_fixed || !p->map_offset || launch_index_build(m, &ix)) goto oom;
  p->n_files = m->n_files;
  p->n_maps = m->n_clock_maps;
  cupti_of(m, &p->cupti);
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    p->map_fixed[i] = r && i < r->n_segs && r->segs[i].slope_fixed;
    p->map_offset[i] = (int64_t)(lens_gpu_map_ns(m, (int32_t)i, c->gpu_from) - c->gpu_from);
  }
  for (size_t pr = 0; pr < m->n_procs; pr++) /* the folded ProxySteps: events of a full load */
    if (m->procs[pr].file >= 0 && (size_t)m->procs[pr].file < m->n_files)
      p->file_events[m->procs[pr].file] += m->procs[pr].folded_steps;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int32_t pr = e->proc;
    if (pr >= 0 && (size_t)pr < m->n_procs && m->procs[pr].file >= 0 && (size_t)m->procs[pr].file < m->n_files)
      p->file_events[m->procs[pr].file]++;
    if (e->type != LENS_T_KERNEL_CH) continue;
    p->kch++;
    p->mapped += e->acc.gpu_start_mono_ns != 0;
    p->bad += (e->acc.flags & LENS_VALIDATE_BAD_FLAGS) != 0;
    p->unmapped += (e->acc.flags & LENS_ACC_NO_CLOCK_MAP) != 0;
    for (size_t b = 0; b < LENS_VALIDATE_N_FLAGS; b++) p->flags[b] += (e->acc.flags >> b) & 1;
  }
  f = lens_spool_create(x->spool, p->spool, sizeof p->spool);
  if (!f) {
    lens_cli_error("validate", "cannot write a temporary file: %s", strerror(errno));
    goto fail;
  }
  /* Launches in event order, each with all its channels; no group lists
   * more than the limit, nor more of the ok ones than the job lists (it
   * takes them in this order from the first group on). */
  size_t k = 0, ok_used = 0, orphans_ok_used = 0;
  long no_limit = -1;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *l = &m->events[i];
    if (l->type != LENS_T_KERNEL_LAUNCH) continue;
    k++;
    p->launches++;
    struct lens_vl_launch rec;
    launch_rec(m, l, &rec);
    rec.flagged = rec.no_kernel_record || flagged_channels(m, &ix, k - 1);
    p->launches_ok += !rec.flagged;
    if (x->limit >= 0 && (long)p->launches_listed >= x->limit) continue;
    size_t w = 0;
    rec.n_ch = (uint32_t)channels_of(m, &ix, k - 1, NULL, &no_limit, &w, NULL, NULL);
    if (x->ok_capped && !rec.flagged && !lens_fmt_json_ok_listed(&ok_used, 1 + (size_t)rec.n_ch, 0)) continue;
    fwrite(&rec, sizeof rec, 1, f);
    channels_of(m, &ix, k - 1, f, &no_limit, &w, NULL, NULL);
    p->launches_listed++;
  }
  p->orphans_at = (uint64_t)ftell(f);
  long budget = x->limit;
  p->orphans = channels_of(m, &ix, ix.n_launches, f, &budget, &p->orphans_listed,
                           x->ok_capped ? &orphans_ok_used : NULL, &p->orphans_ok);
  if (fflush(f) || ferror(f)) {
    lens_cli_error("validate", "cannot write a temporary file: %s", strerror(errno));
    goto fail;
  }
  fclose(f);
  launch_index_free(&ix);
  return p;
oom:
  lens_cli_error("validate", "out of memory");
fail:
  if (f) fclose(f);
  launch_index_free(&ix);
  lens_validate_part_free(p);
  return NULL;
}

static void sum_cupti(struct lens_vl_cupti *s, const struct lens_vl_cupti *c) {
  if (!c->have_report) return;
  if (!s->have_report) {
    *s = *c;
    return;
  }
  s->cupti_available |= c->cupti_available;
  if (!s->note[0]) snprintf(s->note, sizeof s->note, "%s", c->note);
  if (!strcmp(s->graph_join, "none")) snprintf(s->graph_join, sizeof s->graph_join, "%s", c->graph_join);
  s->blobs += c->blobs, s->blob_errors += c->blob_errors, s->records += c->records;
  s->kernel_records += c->kernel_records, s->ext_records += c->ext_records, s->api_records += c->api_records;
  s->kernels_joined += c->kernels_joined, s->kernels_graph += c->kernels_graph;
  s->kernels_graph_joined += c->kernels_graph_joined, s->foreign_ext_ids += c->foreign_ext_ids;
  s->launches_with_ext += c->launches_with_ext, s->launches_no_kernel += c->launches_no_kernel;
  s->kch_cupti_checked += c->kch_cupti_checked, s->kernels_contradict += c->kernels_contradict;
}

int lens_validate_merge(const struct lens_model *skel, const struct lens_validate_part *const *parts, size_t n,
                        const struct lens_model_base *bases, const struct lens_spool_dir *spool,
                        struct lens_validate_job *out) {
  memset(out, 0, sizeof *out);
  out->parts = parts, out->n_parts = n, out->spool = spool, out->bases = bases;
  struct lens_validate_part *s = &out->sum;
  snprintf(s->cupti.graph_join, sizeof s->cupti.graph_join, "none");
  s->file_events = calloc(skel->n_files + 1, sizeof *s->file_events);
  s->map_fixed = calloc(skel->n_clock_maps + 1, 1);
  s->map_offset = calloc(skel->n_clock_maps + 1, sizeof *s->map_offset);
  if (!s->file_events || !s->map_fixed || !s->map_offset) return lens_validate_job_free(out), -1;
  s->n_files = skel->n_files;
  s->n_maps = skel->n_clock_maps;
  for (size_t g = 0; g < n; g++) {
    const struct lens_validate_part *p = parts[g];
    s->launches += p->launches, s->launches_listed += p->launches_listed;
    s->orphans += p->orphans, s->orphans_listed += p->orphans_listed;
    s->launches_ok += p->launches_ok, s->orphans_ok += p->orphans_ok;
    s->kch += p->kch, s->mapped += p->mapped, s->bad += p->bad, s->unmapped += p->unmapped;
    for (size_t b = 0; b < LENS_VALIDATE_N_FLAGS; b++) s->flags[b] += p->flags[b];
    sum_cupti(&s->cupti, &p->cupti);
    for (size_t i = 0; i < p->n_files && bases[g].file + i < s->n_files; i++)
      s->file_events[bases[g].file + i] = p->file_events[i];
    for (size_t i = 0; i < p->n_maps && bases[g].clock_map + i < s->n_maps; i++) {
      s->map_fixed[bases[g].clock_map + i] = p->map_fixed[i];
      s->map_offset[bases[g].clock_map + i] = p->map_offset[i];
    }
  }
  return 0;
}

void lens_validate_job_free(struct lens_validate_job *j) {
  free(j->sum.file_events);
  free(j->sum.map_fixed);
  free(j->sum.map_offset);
  memset(j, 0, sizeof *j);
}
