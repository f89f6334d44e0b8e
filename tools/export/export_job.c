/* `nccl-lens export --format job|perfetto` on the pass driver (see
 * job_export.h): two readings of the job, each host group by host group.
 * A --since/--until window reads the window once, drawn from the timeline
 * memo (timeline_memo.h) an earlier export left; without one, the first
 * reading stores it and the window is drawn from it (no second whole
 * reading).
 * The first maps each group to the job view's records (lens_job_map, as
 * `nccl-lens job` streams) and each process's first event; their reduce gives
 * the job view, the hosts' alignment from the records' clocks and ends
 * (lens_align_build_ends), the drawn processes and the origin. The second
 * writes each group's tracks and slices on that time base to a spool file
 * as its map runs; the spools are copied in input order between the head
 * (hosts) and the tail (flows, otherData). Memory: one model per thread,
 * the job view's rows and one GPU slice record per drawn (instance, rank). */
#define _GNU_SOURCE /* __fsetlocking */
#include "export/export_job.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/job/job_part.h"
#include "cli/cli.h"
#include "cli/passes.h"
#include "cli/spool.h"
#include "cli/cache.h"
#include "export/chrome_export.h"
#include "export/group_input.h"
#include "export/lanes.h"
#include "export/timeline_memo.h"

#define CMD "export"

/* ---- first reading: the job view's records ---- */

/* A row whose GPU slice is not its mapped kernel span (no clock map): its
 * times from its event, noted by the first reading for the memo it stores
 * (a first window draws itself from that memo, with no second whole
 * reading to take them). */
struct host_time {
  int32_t proc, event; /* the group's */
  struct lens_job_row_time t;
};

struct view_part {
  struct lens_job_part jp;
  uint64_t *min_start; size_t n_procs; /* per proc: its first event's start (MONOTONIC), UINT64_MAX none */
  size_t n_events;                     /* the group's model's */
  struct host_time *ht; size_t n_ht;   /* with note_host_times: by (proc, event) */
};

struct view_ctx {
  int note_host_times;
};

static int cmp_host_time(const void *pa, const void *pb) {
  const struct host_time *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  return (a->event > b->event) - (a->event < b->event);
}

/* The records' host times, before the records are packed. */
static int note_host_times(const struct lens_model *m, struct view_part *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->jp.n_recs; i++) n += !lens_job_rank_kernel_timed(&p->jp.recs[i].r);
  if (!(p->ht = malloc((n + 1) * sizeof *p->ht))) return -1;
  for (size_t i = 0; i < p->jp.n_recs; i++) {
    const struct lens_job_rank *r = &p->jp.recs[i].r;
    if (!lens_job_rank_kernel_timed(r))
      p->ht[p->n_ht++] = (struct host_time){r->proc, r->event, lens_job_export_row_time(m, r)};
  }
  qsort(p->ht, p->n_ht, sizeof *p->ht, cmp_host_time);
  return 0;
}

static void view_free(void *part) {
  struct view_part *p = part;
  if (!p) return;
  lens_job_part_free(&p->jp);
  free(p->min_start);
  free(p->ht);
  free(p);
}

static void *view_map(struct lens_model *m, void *ctx) {
  const struct view_ctx *x = ctx;
  struct view_part *p = calloc(1, sizeof *p);
  if (!p || !(p->min_start = malloc((m->n_procs + 1) * sizeof *p->min_start))) goto oom;
  p->n_procs = m->n_procs, p->n_events = m->n_events;
  for (size_t i = 0; i < m->n_procs; i++) p->min_start[i] = UINT64_MAX;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc >= 0 && (size_t)e->proc < m->n_procs && e->start_mono_ns < p->min_start[e->proc])
      p->min_start[e->proc] = e->start_mono_ns;
  }
  /* packed: the partial waits for the reduce beside every other group's */
  if (lens_job_map(m, &p->jp) || lens_job_part_own_strings(&p->jp) ||
      (x && x->note_host_times && note_host_times(m, p)) || lens_job_part_pack(&p->jp))
    goto oom;
  return p;
oom:
  view_free(p);
  lens_cli_error(CMD, "out of memory");
  return NULL;
}

/* ---- second reading: the slices ---- */

struct draw_ctx {
  const struct lens_trace_cli *c;
  struct lens_spool_dir *spool;
  const long *group_of_input;       /* per input index: its group in the first reading */
  const struct lens_model_base *bases; size_t n_groups;
  size_t n_procs;                   /* skeleton's */
  const struct lens_job *j;
  const struct lens_align *a;
  const struct lens_job_export_opts *o;
  const uint8_t *sel;
  int64_t origin;
  uint32_t track_span;              /* track numbers per input index */
  /* JSON without --force: once the groups spooled pass the limit the
   * document is refused, so the rest are counted, not spooled (a refused
   * timeline of a 10^8-event job would spool about 19 GB). 0: none. */
  uint64_t spool_limit;
  uint64_t *spooled;                /* bytes spooled by every group so far (atomic) */
};

static ssize_t count_write(void *cookie, const char *buf, size_t len) {
  (void)buf;
  *(uint64_t *)cookie += len;
  return (ssize_t)len;
}

static void *draw_map(struct lens_model *m, void *ctx) {
  const struct draw_ctx *x = ctx;
  long key = lens_group_input(m, x->c);
  long g = key >= 0 ? x->group_of_input[key] : -1;
  size_t procs = g < 0 ? 0 : ((size_t)g + 1 < x->n_groups ? x->bases[g + 1].proc : x->n_procs) - x->bases[g].proc;
  if (g < 0 || procs != m->n_procs)
    return lens_cli_error(CMD, "the traces changed between the two readings of the job"), NULL;
  struct lens_job_export_part *p = calloc(1, sizeof *p);
  if (!p) return lens_cli_error(CMD, "out of memory"), NULL;
  uint64_t counted = 0;
  int count_only = x->spool_limit && __atomic_load_n(x->spooled, __ATOMIC_RELAXED) > x->spool_limit;
  FILE *out = count_only ? fopencookie(&counted, "w", (cookie_io_functions_t){.write = count_write})
                         : lens_spool_create(x->spool, p->spool, sizeof p->spool);
  if (!out) {
    free(p);
    return lens_cli_error(CMD, "cannot write a temporary file: %s", strerror(errno)), NULL;
  }
  __fsetlocking(out, FSETLOCKING_BYCALLER); /* this thread's alone */
  int rc = lens_job_export_group(out, m, x->bases[g].proc, (uint32_t)key * x->track_span, (uint64_t)key + 2, x->j,
                                 x->a, x->o, x->sel, x->origin, p);
  long at = ftell(out);
  if (fclose(out)) rc = -1;
  p->bytes = count_only ? counted : at > 0 ? (uint64_t)at : 0;
  if (!count_only) __atomic_add_fetch(x->spooled, p->bytes, __ATOMIC_RELAXED);
  if (rc) {
    lens_job_export_part_free(p);
    return lens_cli_error(CMD, "cannot write a temporary file (disk full?) or out of memory"), NULL;
  }
  return p;
}

static void draw_free(void *part) { lens_job_export_part_free(part); }

/* --comm ID|NAME for the job timeline: whether a communicator of this name
 * or id (hex, 0x optional) is it. */
static int comm_is(const char *want, const char *name, uint64_t comm_id) {
  char *end;
  const char *h = strncasecmp(want, "0x", 2) ? want : want + 2;
  uint64_t id = strtoull(h, &end, 16);
  return (name[0] && !strcmp(name, want)) || (end != h && !*end && id == comm_id);
}

/* --comm's id, from the skeleton's communicators. 0, or 2 after one usage error line. */
static int job_comm(const struct lens_model *m, const struct lens_filter *fl, struct lens_job_export_opts *o) {
  if (!fl->n_comms) return 0;
  for (size_t i = 0; i < m->n_comms; i++)
    if (comm_is(fl->comms[0], m->comms[i].name, m->comms[i].comm_id)) {
      o->have_comm = 1;
      o->comm_id = m->comms[i].comm_id;
      return 0;
    }
  return lens_cli_usage(CMD, "--comm %s: no such communicator in these traces", fl->comms[0]);
}

/* Copies a spool file to f; a JSON group's records each start with ",\n":
 * the document's first loses its comma. */
static int copy_spool(FILE *f, const struct lens_spool_dir *spool, const char *name, int json, int *first) {
  FILE *in = lens_spool_open(spool, name);
  if (!in) return -1;
  char buf[1 << 16];
  size_t n;
  int start = 1;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
    size_t off = 0;
    if (start && json && *first && buf[0] == ',') off = 1;
    if (n > off) *first = 0;
    start = 0;
    fwrite(buf + off, 1, n - off, f);
  }
  int bad = ferror(in);
  fclose(in);
  lens_spool_remove(spool, name);
  return bad ? -1 : 0;
}

/* The JSON document measured before it is written: its head and tail
 * built in memory (buf: the head's head_len bytes, then the tail's), the
 * groups by what their drawings wrote; the document, once it fits, is
 * written from these same bytes. */
struct json_measure {
  char *buf;
  size_t head_len, len;
  int first;                          /* the head's: 1, nothing written yet */
  struct lens_job_export_counts k;    /* the counts once the tail is built (it counts the flows it writes) */
  uint64_t size;                      /* the whole document's bytes, exactly */
};

static int json_measure(const struct lens_model *skel, const struct lens_job *j, const struct lens_align *a,
                        const struct lens_job_export_opts *o, const struct lens_passes_out *p2,
                        const struct lens_job_export_counts *cnt, struct json_measure *ms) {
  struct lens_job_export_part *const *parts = (struct lens_job_export_part *const *)p2->parts;
  *ms = (struct json_measure){.k = *cnt};
  FILE *m = open_memstream(&ms->buf, &ms->len);
  if (!m) return -1;
  int first = ms->first = lens_job_export_head(m, skel, j, a, o, parts, p2->n_groups, &ms->k);
  int bad = first < 0 || fflush(m);
  ms->head_len = ms->len;
  uint64_t spools = 0;
  for (size_t g = 0; g < p2->n_groups; g++) spools += parts[g]->bytes; /* spooled or counted only */
  if (!bad && first == 1 && spools) first = 0; /* the first record loses its comma (copy_spool) */
  if (!bad && (lens_job_export_tail(m, skel, j, a, o, parts, p2->n_groups, first, &ms->k) || fflush(m))) bad = 1;
  if (fclose(m)) bad = 1;
  ms->size = ms->len + spools - (ms->first == 1 && spools ? 1 : 0);
  return bad ? -1 : 0;
}

/* The document from the drawing's parts: head, the groups' spools in input
 * order, tail. 0, 1 after an error line, or LENS_EXPORT_TOO_BIG: JSON over
 * the limit the Perfetto UI opens, not written (said, with what fits). */
static int write_document(struct lens_trace_cli *c, struct lens_job_export_opts *o, const struct lens_model *skel,
                          const struct lens_job *j, const struct lens_align *a, const struct lens_passes_out *p2,
                          const struct lens_spool_dir *spool, struct lens_job_export_counts *cnt) {
  struct lens_job_export_part *const *parts = (struct lens_job_export_part *const *)p2->parts;
  for (size_t g = 0; g < p2->n_groups; g++) {
    const struct lens_job_export_counts *k = &parts[g]->counts;
    cnt->slices += k->slices, cnt->last_marked += k->last_marked, cnt->lanes_extra += k->lanes_extra;
    cnt->crowded += k->crowded;
    if (k->end_ns > cnt->end_ns) cnt->end_ns = k->end_ns;
  }
  uint64_t limit = lens_export_max_bytes();
  int measured = !o->perfetto && !o->force;
  struct json_measure ms = {0};
  if (measured) {
    if (json_measure(skel, j, a, o, p2, cnt, &ms)) {
      free(ms.buf);
      return lens_cli_error(CMD, "out of memory"), 1;
    }
    uint64_t size = ms.size;
    if (size > limit) {
      free(ms.buf);
      char x[32], y[32];
      /* (exact: the groups past the limit were counted as they were drawn, not spooled) */
      fprintf(stderr, "nccl-lens export: the job timeline's JSON would be %s (%" PRIu64 " bytes), more than the "
                      "Perfetto UI opens (%s): not written\n",
              lens_export_size_text(size, x, sizeof x), size, lens_export_size_text(limit, y, sizeof y));
      /* The slices are spread over the time drawn: a window of its share fits, about. */
      double span = (double)cnt->end_ns - (double)(o->have_since ? o->since_ns : 0);
      if (span > 0)
        fprintf(stderr, "nccl-lens export: it draws %.3f s; a --since/--until window of about %.3f s of it fits "
                        "(or a --rank or --comm selection)\n",
                span / 1e9, span / 1e9 * (double)limit / (double)size * 0.9);
      fprintf(stderr, "nccl-lens export: --format perfetto (protobuf) opens whole; --force writes it anyway\n");
      return LENS_EXPORT_TOO_BIG;
    }
  }
  FILE *f = lens_trace_cli_open_out(CMD, c);
  if (!f) {
    free(ms.buf);
    return 1;
  }
  __fsetlocking(f, FSETLOCKING_BYCALLER); /* the pool's threads are gone */
  int first = measured ? ms.first : lens_job_export_head(f, skel, j, a, o, parts, p2->n_groups, cnt), wr = first < 0;
  if (measured && fwrite(ms.buf, 1, ms.head_len, f) != ms.head_len) wr = 1;
  for (size_t g = 0; !wr && g < p2->n_groups; g++)
    if (copy_spool(f, spool, parts[g]->spool, !o->perfetto, &first)) wr = 1;
  if (!wr && measured) {
    if (fwrite(ms.buf + ms.head_len, 1, ms.len - ms.head_len, f) != ms.len - ms.head_len) wr = 1;
    *cnt = ms.k;
  } else if (!wr && lens_job_export_tail(f, skel, j, a, o, parts, p2->n_groups, first, cnt)) {
    wr = 1;
  }
  free(ms.buf);
  if (lens_trace_cli_close_out(CMD, c, f, wr)) {
    struct stat st; /* a half-written trace would load as a broken one: remove a regular file */
    if (lens_trace_cli_out_is_file(c) && lstat(c->out, &st) == 0 && S_ISREG(st.st_mode)) unlink(c->out);
    return 1;
  }
  if (cnt->procs_unaligned)
    fprintf(stderr, "nccl-lens export: %zu processes left out: their host could not be placed on the job time base\n",
            cnt->procs_unaligned);
  if (f != stdout)
    printf("wrote %s: the job on one time base: %zu slices, %zu instances tied by %zu flow events, %zu last ranks "
           "marked\n",
           c->out, cnt->slices, cnt->instances_flowed, cnt->flows, cnt->last_marked);
  return 0;
}

static uint32_t track_span(const struct lens_trace_cli *c) {
  return (uint32_t)(((UINT32_MAX - 1u) / LENS_LANES_MAX) / (c->n + 1));
}

/* ---- a window from the memo ---- */

/* How far past the window, on job time, each group's load reaches: the
 * draw keeps exactly the slices that meet the window; the margin leaves
 * room for the rounding of the drift's correction. */
#define WINDOW_MARGIN_NS 1000000

/* The least MONOTONIC time of process p that the alignment places at or
 * after job time t (the mapping only grows with MONOTONIC). */
static uint64_t mono_at(const struct lens_align *a, int32_t p, int64_t t) {
  uint64_t lo = 0, hi = (uint64_t)INT64_MAX;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    int64_t x;
    lens_align_to_job(a, p, mid, &x, NULL);
    if (x >= t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

struct window_ctx {
  const struct lens_timeline_memo *mm;
  const uint8_t *sel;
  int have_since, have_until;
  int64_t since, until; /* aligned job ns */
};

/* Group g's load: the job window on its drawn processes' MONOTONIC, their union. */
static int group_window(void *ctx, size_t g, struct lens_load_window *w) {
  const struct window_ctx *x = ctx;
  const struct lens_timeline_memo *mm = x->mm;
  if (g >= mm->n_groups) return 0;
  uint64_t since = UINT64_MAX, until = 0;
  int any = 0;
  int64_t lo = x->since > INT64_MIN + WINDOW_MARGIN_NS ? x->since - WINDOW_MARGIN_NS : INT64_MIN;
  int64_t hi = x->until < INT64_MAX - WINDOW_MARGIN_NS ? x->until + WINDOW_MARGIN_NS : INT64_MAX;
  for (uint64_t p = mm->group_proc[g]; p < mm->group_proc[g + 1]; p++) {
    if (!x->sel[p]) continue;
    any = 1;
    uint64_t s = x->have_since ? mono_at(&mm->a, (int32_t)p, lo) : 0;
    uint64_t u = x->have_until ? mono_at(&mm->a, (int32_t)p, hi) : 0;
    if (s < since) since = s;
    if (u > until) until = u;
  }
  w->absolute = 1;
  if (!any) { /* none of it drawn: the least a load reads (what starts by MONOTONIC 0) */
    w->have_until = 1, w->until_ns = 0;
    return 1;
  }
  w->have_since = x->have_since, w->since_ns = x->have_since ? since : 0;
  w->have_until = x->have_until, w->until_ns = x->have_until ? until : 0;
  return 1;
}

/* The window drawn from the memo: 0 or 1 (done, after any error line), 2
 * (a usage error), or -1: no memo, or it does not match these traces
 * (nothing written: the caller reads the job whole). */
static int window_run(struct lens_trace_cli *c, struct lens_job_export_opts *o, long threads,
                      const struct lens_cache_key *key, const struct lens_filter *selection) {
  struct lens_timeline_memo mm;
  if (lens_timeline_memo_load(key, c->n, &mm)) {
    lens_timeline_memo_free(&mm);
    return -1;
  }
  int rc = -1;
  size_t np = mm.n_procs;
  uint8_t *sel = calloc(np + 1, 1), *in_comm = calloc(np + 1, 1);
  struct lens_spool_dir *spool = NULL;
  struct lens_passes_out p2 = {0};
  struct draw_ctx dx = {0};
  struct lens_pass draw = {.map = draw_map, .free = draw_free, .ctx = &dx};
  long *group_of_input = malloc((c->n + 1) * sizeof *group_of_input);
  struct lens_model_base *bases = calloc(mm.n_groups + 1, sizeof *bases);
  uint64_t spooled = 0;
  if (!sel || !in_comm || !group_of_input || !bases) goto out;
  if (selection->n_comms) {
    size_t i = 0;
    while (i < mm.n_comms && !comm_is(selection->comms[0], mm.comms[i].name, mm.comms[i].comm_id)) i++;
    if (i == mm.n_comms) {
      rc = lens_cli_usage(CMD, "--comm %s: no such communicator in these traces", selection->comms[0]);
      goto out;
    }
    o->have_comm = 1;
    o->comm_id = mm.comms[i].comm_id;
  }
  for (size_t i = 0; i < mm.n_comms; i++)
    if (mm.comms[i].proc >= 0 && (!o->have_comm || mm.comms[i].comm_id == o->comm_id)) in_comm[mm.comms[i].proc] = 1;
  if (!o->have_comm) memset(in_comm, 1, np);
  struct lens_job_export_counts cnt = {0};
  lens_job_export_select(np, mm.plugin, in_comm, &mm.a, mm.min_start, sel, &cnt);
  struct window_ctx wx = {.mm = &mm, .sel = sel, .have_since = o->have_since, .have_until = o->have_until,
                          .since = o->have_since ? cnt.origin_job_ns + o->since_ns : INT64_MIN,
                          .until = o->have_until ? cnt.origin_job_ns + o->until_ns : INT64_MAX};
  if (lens_timeline_memo_rows(key, &mm, wx.since, wx.until)) goto out;
  if (!(spool = lens_spool_dir_new(CMD, NULL))) {
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < c->n; i++) group_of_input[i] = mm.group_of_input[i];
  for (size_t g = 0; g < mm.n_groups; g++) bases[g].proc = mm.group_proc[g];
  struct lens_job_export_opts wo = *o;
  wo.row_times = mm.row_times;
  dx = (struct draw_ctx){.c = c, .spool = spool, .group_of_input = group_of_input, .bases = bases,
                         .n_groups = mm.n_groups, .n_procs = np, .j = &mm.j, .a = &mm.a, .o = &wo, .sel = sel,
                         .origin = cnt.origin_job_ns, .track_span = track_span(c),
                         .spool_limit = o->perfetto || o->force ? 0 : lens_export_max_bytes(), .spooled = &spooled};
  struct lens_passes_opts popts = {.threads = threads, .group_window = group_window, .group_window_ctx = &wx};
  c->progress_label = "reading traces (host groups): drawing the window";
  if (lens_passes_run(CMD, c, &draw, 1, &popts, &p2)) {
    rc = 1; /* (its error said) */
    goto out;
  }
  /* The reading's groups and processes must be the memo's, or its rows name others. */
  int same = p2.n_groups == mm.n_groups && p2.skel->n_procs == np;
  for (size_t g = 0; same && g < p2.n_groups; g++) same = p2.bases[g].proc == mm.group_proc[g];
  for (size_t p = 0; same && p < np; p++) same = p2.skel->procs[p].pid == mm.pid[p];
  if (!same) goto out;
  rc = write_document(c, o, p2.skel, &mm.j, &mm.a, &p2, spool, &cnt);
out:
  lens_passes_free(&draw, &p2);
  lens_spool_dir_free(spool);
  lens_timeline_memo_free(&mm);
  free(sel);
  free(in_comm);
  free(group_of_input);
  free(bases);
  return rc;
}

/* ---- the whole job ---- */

/* Every row's GPU times from the first reading (its kernel span, else what
 * its group noted of its event), as the drawing takes them: the memo's
 * rows. NULL when out of memory. */
static struct lens_job_row_time *rows_from_view(const struct lens_job *j, const struct lens_passes_out *p1) {
  size_t n = p1->n_groups;
  size_t *group_proc = malloc((n + 1) * sizeof *group_proc);
  struct lens_job_row_time *rt = malloc((j->n_ranks + 1) * sizeof *rt);
  if (!group_proc || !rt) {
    free(group_proc);
    free(rt);
    return NULL;
  }
  for (size_t g = 0; g < n; g++) group_proc[g] = p1->bases[g].proc;
  group_proc[n] = p1->skel->n_procs;
  for (size_t k = 0; k < j->n_ranks; k++) {
    const struct lens_job_rank *r = &j->ranks[k];
    long g = lens_job_group_of_proc(group_proc, n, r->proc);
    const struct view_part *vp = g >= 0 ? p1->parts[g] : NULL;
    rt[k] = (struct lens_job_row_time){UINT64_MAX, 0};
    if (!vp || r->event < 0 || (size_t)r->event >= vp->n_events) continue; /* (as the drawing skips it) */
    if (lens_job_rank_kernel_timed(r)) {
      rt[k] = (struct lens_job_row_time){r->kstart_mono_ns, r->kstop_mono_ns};
      continue;
    }
    struct host_time want = {(int32_t)((size_t)r->proc - group_proc[g]), r->event, {0, 0}};
    const struct host_time *h = bsearch(&want, vp->ht, vp->n_ht, sizeof *vp->ht, cmp_host_time);
    if (h) rt[k] = h->t;
  }
  free(group_proc);
  return rt;
}

int lens_job_export_run(struct lens_trace_cli *c, struct lens_job_export_opts *o, long threads) {
  if (lens_trace_cli_expand_dirs(CMD, c)) return 1;
  /* The selection is the timeline's own (on job time): the driver reads
   * everything (c's selection set aside while it runs). */
  struct lens_filter selection = c->filter;
  memset(&c->filter, 0, sizeof c->filter);
  struct lens_cache_key key = {0};
  int keyed = lens_cache_key_make("timeline", (const char *const *)c->paths, c->n, &key) == 0;
  if (keyed && (o->have_since || o->have_until)) {
    int rc = window_run(c, o, threads, &key, &selection);
    if (rc >= 0) {
      lens_cache_key_free(&key);
      c->filter = selection;
      c->progress_label = NULL;
      return rc;
    }
    o->have_comm = 0; /* (the memo's was not used) */
  }
  /* A window without a memo: one whole reading (the job view, noting the
   * rows' host times for the memo), the memo stored, and the window drawn
   * from it. */
  int first_window = keyed && (o->have_since || o->have_until);
  struct view_ctx vx = {.note_host_times = keyed};
  struct lens_passes_opts popts = {.threads = threads};
  struct lens_pass view = {.map = view_map, .free = view_free, .ctx = &vx};
  struct lens_passes_out p1, p2 = {0};
  struct lens_spool_dir *spool = NULL;
  struct lens_job_part *jps = NULL;
  struct lens_job j;
  int have_j = 0, have_a = 0;
  struct lens_align a;
  uint64_t *min_start = NULL;
  uint8_t *sel = NULL, *plugin = NULL, *in_comm = NULL;
  long *group_of_input = NULL;
  struct lens_job_row_time *rt = NULL;
  uint64_t spooled = 0;
  struct draw_ctx dx = {0};
  struct lens_pass draw = {.map = draw_map, .free = draw_free, .ctx = &dx};
  struct lens_job_export_counts cnt = {0};
  c->progress_label = "reading traces (host groups), 1 of 2: the job view";
  int rc = lens_passes_run(CMD, c, &view, 1, &popts, &p1);
  if (rc) goto out;
  if ((rc = job_comm(p1.skel, &selection, o))) goto out;
  rc = 1;
  size_t n = p1.n_groups, np = p1.skel->n_procs;
  jps = calloc(n + 1, sizeof *jps);
  min_start = malloc((np + 1) * sizeof *min_start);
  sel = calloc(np + 1, 1), plugin = calloc(np + 1, 1), in_comm = calloc(np + 1, 1);
  group_of_input = lens_groups_of_inputs(c, &p1);
  if (!jps || !min_start || !sel || !plugin || !in_comm || !group_of_input) goto oom;
  for (size_t i = 0; i < np; i++) min_start[i] = UINT64_MAX;
  for (size_t g = 0; g < n; g++) {
    struct view_part *vp = p1.parts[g];
    jps[g] = vp->jp; /* moved: freed with jps */
    memset(&vp->jp, 0, sizeof vp->jp);
    for (size_t i = 0; i < vp->n_procs && p1.bases[g].proc + i < np; i++)
      min_start[p1.bases[g].proc + i] = vp->min_start[i];
  }
  if (lens_job_reduce_consume(jps, n, &j, 0)) goto oom;
  have_j = 1;
  size_t n_clocks;
  struct lens_align_proc_clock *clocks = lens_job_parts_clocks(jps, n, &n_clocks);
  int bad = !clocks || lens_align_build_ends(clocks, n_clocks, &j, NULL, &a);
  free(clocks);
  if (bad) goto oom;
  have_a = 1;
  lens_job_export_proc_facts(p1.skel, o, plugin, in_comm); /* o as job_comm left it (a fallback restores it) */
  if (first_window && (rt = rows_from_view(&j, &p1)) &&
      lens_timeline_memo_save(&key, c->n, group_of_input, p1.skel, p1.bases, n, min_start, &a, &j, rt, plugin) == 0) {
    free(rt);
    rt = NULL;
    int wrc = window_run(c, o, threads, &key, &selection);
    if (wrc >= 0) {
      rc = wrc;
      goto out;
    }
    o->have_comm = 0; /* (job_comm's again below) */
    if ((rc = job_comm(p1.skel, &selection, o))) goto out;
    rc = 1;
  }
  free(rt);
  rt = NULL;
  lens_job_export_select(np, plugin, in_comm, &a, min_start, sel, &cnt);
  if (!(spool = lens_spool_dir_new(CMD, NULL))) goto out;
  dx = (struct draw_ctx){.c = c, .spool = spool, .group_of_input = group_of_input, .bases = p1.bases,
                         .n_groups = n, .n_procs = np, .j = &j, .a = &a, .o = o, .sel = sel,
                         .origin = cnt.origin_job_ns, .track_span = track_span(c),
                         .spool_limit = o->perfetto || o->force ? 0 : lens_export_max_bytes(), .spooled = &spooled};
  c->progress_label = "reading traces (host groups), 2 of 2: drawing";
  if (lens_passes_run(CMD, c, &draw, 1, &popts, &p2)) goto out;
  rc = write_document(c, o, p1.skel, &j, &a, &p2, spool, &cnt);
  /* The memo a window of these traces reads next (a document refused for
   * its size leaves it too: the window it suggests reads about itself);
   * a first window stored it already (or could not). */
  if (keyed && !first_window && (rt = rows_from_view(&j, &p1)))
    lens_timeline_memo_save(&key, c->n, group_of_input, p1.skel, p1.bases, n, min_start, &a, &j, rt, plugin);
  goto out;
oom:
  lens_cli_error(CMD, "out of memory");
out:
  free(rt);
  lens_passes_free(&draw, &p2);
  if (have_a) lens_align_free(&a);
  if (have_j) lens_job_free(&j);
  for (size_t g = 0; jps && g < p1.n_groups; g++) lens_job_part_free(&jps[g]);
  free(jps);
  lens_passes_free(&view, &p1);
  free(min_start);
  free(sel);
  free(plugin);
  free(in_comm);
  free(group_of_input);
  lens_spool_dir_free(spool);
  lens_cache_key_free(&key);
  c->filter = selection;
  c->progress_label = NULL; /* the caller's c, as it came */
  return rc;
}
