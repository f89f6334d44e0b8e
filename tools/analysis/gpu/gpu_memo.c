/* The GPU memo: what a time window of a trace set needs of the whole run's
 * GPU analysis that its own KernelCh cannot give it.
 *
 * The clock maps are fitted on every KernelCh of a GPU, and the sequence
 * flags (a timer equal to another launch's, a start later than a
 * later-noticed one's) compare a KernelCh with the others of its channel:
 * whole-run passes. A window that reads only its chunks would otherwise read
 * every KernelCh of the run for them, light (tools/reader/window.c), which
 * is four fifths of a 1 % window of a 10^8-event job (docs/scale.md). The
 * memo holds the maps (with their exact segments) and the sequence flags of
 * the KernelCh that have any, keyed by (process, session, id); a window
 * applies it to the KernelCh it built, and every other per-KernelCh rule
 * runs as in a full analysis (gpu_flags.c, flag_rows). So the answers are
 * the full analysis's, byte for byte (test_window, window_cli.sh, fuzz_trace).
 *
 * Not memoized: CUPTI evidence (its join walks every launch: a window with
 * it reads every KernelCh, Coll and launch anyway), a sequence-flagged
 * KernelCh whose id is not unique. Native byte order and long double: a
 * memo is read by the binary that wrote it (the cache's key holds the
 * program's identity), and checked against the model it is applied to: its
 * processes' pids and each map's thread (index, slot, tid); a mismatch is
 * not an error, the caller analyses in full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses.h"
#include "gpu_kch.h"
#include "gpu_state.h"

#define MEMO_MAGIC "LENSGPU1"

struct memo_hdr {
  char magic[8];
  uint32_t n_procs, n_maps, n_seq, reserved;
};

struct memo_map {
  int32_t thread;
  uint32_t slot, tid, source;
  uint64_t gpu_from, gpu_to;
  double offset_ns, slope, residual_ns, error_bound_ns;
  uint32_t n_points;
  int32_t slope_fixed;
  uint64_t ref_gpu, ref_host;
  uint8_t a[16], b[16]; /* the segment's long doubles, as this binary holds them */
};

_Static_assert(sizeof(long double) <= 16, "a segment's long double must fit its memo bytes");

int lens_gpu_memo_save(const struct lens_model *m, void **blob, size_t *len) {
  *blob = NULL, *len = 0;
  struct lens_gpu_state *s = lens_gpu_state(m, 0);
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  if (!s || !r || s->seq_ambiguous || m->n_cupti || s->n_extra || m->n_kernels || r->n_segs != m->n_clock_maps)
    return 1;
  size_t n = sizeof(struct memo_hdr) + m->n_procs * sizeof(uint32_t) + m->n_clock_maps * sizeof(struct memo_map) +
             s->n_seq * sizeof(struct lens_gpu_seqflag);
  uint8_t *p = calloc(1, n), *at = p;
  if (!p) return -1;
  struct memo_hdr h = {.n_procs = (uint32_t)m->n_procs, .n_maps = (uint32_t)m->n_clock_maps,
                       .n_seq = (uint32_t)s->n_seq};
  memcpy(h.magic, MEMO_MAGIC, 8);
  memcpy(at, &h, sizeof h), at += sizeof h;
  for (size_t i = 0; i < m->n_procs; i++) {
    uint32_t pid = m->procs[i].pid;
    memcpy(at, &pid, sizeof pid), at += sizeof pid;
  }
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    const struct lens_gpu_seg *g = &r->segs[i];
    if (c->thread < 0 || (size_t)c->thread >= m->n_threads || g->map != (int32_t)i) {
      free(p);
      return 1;
    }
    const struct lens_thread *t = &m->threads[c->thread];
    struct memo_map x = {.thread = c->thread, .slot = t->slot, .tid = t->tid, .source = c->source,
                         .gpu_from = c->gpu_from, .gpu_to = c->gpu_to, .offset_ns = c->offset_ns, .slope = c->slope,
                         .residual_ns = c->residual_ns, .error_bound_ns = c->error_bound_ns,
                         .n_points = c->n_points, .slope_fixed = g->slope_fixed, .ref_gpu = g->ref_gpu,
                         .ref_host = g->ref_host};
    memcpy(x.a, &g->a, sizeof g->a);
    memcpy(x.b, &g->b, sizeof g->b);
    memcpy(at, &x, sizeof x), at += sizeof x;
  }
  if (s->n_seq) memcpy(at, s->seq, s->n_seq * sizeof *s->seq); /* (no padding: the struct's bytes are its fields) */
  *blob = p, *len = n;
  return 0;
}

/* The memo's parts, checked against m: 0, or 1 when it is not m's. */
struct memo_view {
  struct memo_hdr h;
  const uint8_t *pids, *maps, *seq;
};
static int memo_view(const struct lens_model *m, const uint8_t *p, size_t len, struct memo_view *v) {
  if (len < sizeof v->h) return 1;
  memcpy(&v->h, p, sizeof v->h);
  if (memcmp(v->h.magic, MEMO_MAGIC, 8) || v->h.n_procs != m->n_procs) return 1;
  uint64_t need = sizeof v->h + (uint64_t)v->h.n_procs * sizeof(uint32_t) +
                  (uint64_t)v->h.n_maps * sizeof(struct memo_map) +
                  (uint64_t)v->h.n_seq * sizeof(struct lens_gpu_seqflag);
  if (need != len) return 1;
  v->pids = p + sizeof v->h;
  v->maps = v->pids + (size_t)v->h.n_procs * sizeof(uint32_t);
  v->seq = v->maps + (size_t)v->h.n_maps * sizeof(struct memo_map);
  for (size_t i = 0; i < m->n_procs; i++) {
    uint32_t pid;
    memcpy(&pid, v->pids + i * sizeof pid, sizeof pid);
    if (pid != m->procs[i].pid) return 1;
  }
  int32_t last = -1;
  for (size_t i = 0; i < v->h.n_maps; i++) {
    struct memo_map x;
    memcpy(&x, v->maps + i * sizeof x, sizeof x);
    /* a thread's maps together, threads rising (lens_gpu_map_for searches them so) */
    if (x.thread < last || x.thread < 0 || (size_t)x.thread >= m->n_threads) return 1;
    const struct lens_thread *t = &m->threads[x.thread];
    if (t->slot != x.slot || t->tid != x.tid) return 1;
    last = x.thread;
  }
  return 0;
}

int lens_analyze_gpu_memo(struct lens_model *m, const void *blob, size_t len, char *err, size_t err_len) {
  struct memo_view v;
  struct lens_gpu_state *s = lens_gpu_state(m, 1);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  if (m->n_cupti || s->n_extra || memo_view(m, blob, len, &v)) return 1;
  struct lens_gpu_seqflag *seq = malloc((v.h.n_seq ? v.h.n_seq : 1) * sizeof *seq);
  if (!seq) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  if (v.h.n_seq) memcpy(seq, v.seq, v.h.n_seq * sizeof *seq); /* (copied: the blob's bytes may be unaligned) */
  for (size_t i = 1; i < v.h.n_seq; i++)
    if (lens_gpu_seqflag_cmp(&seq[i - 1], &seq[i]) >= 0) { /* strictly rising: looked up by binary search */
      free(seq);
      return 1;
    }
  struct lens_gpu_kch_table t;
  if (lens_gpu_kch_from_model(m, &t)) {
    free(seq);
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  struct lens_gpu_report *r = lens_gpu_begin(m, s, &t);
  int rc = lens_gpu_join(m, r, err, err_len);
  size_t n = v.h.n_maps;
  if (!rc && m->n_kernels) rc = 1; /* CUPTI kernels after all: not what the memo was made without */
  if (!rc && n) {
    m->clock_maps = calloc(n, sizeof *m->clock_maps);
    r->segs = calloc(n, sizeof *r->segs);
    if (!m->clock_maps || !r->segs) {
      snprintf(err, err_len, "out of memory");
      rc = -1;
    }
  }
  for (size_t i = 0; !rc && i < n; i++) { /* as gpu_clock.c's emit makes them, from this model's threads */
    struct memo_map x;
    memcpy(&x, v.maps + i * sizeof x, sizeof x);
    const struct lens_thread *th = &m->threads[x.thread];
    m->clock_maps[i] = (struct lens_clock_map){.proc = th->proc, .thread = x.thread, .rank = th->proxy_rank,
                                               .gpu_from = x.gpu_from, .gpu_to = x.gpu_to, .offset_ns = x.offset_ns,
                                               .slope = x.slope, .residual_ns = x.residual_ns,
                                               .error_bound_ns = x.error_bound_ns, .n_points = x.n_points,
                                               .source = x.source};
    struct lens_gpu_seg *g = &r->segs[i];
    g->map = (int32_t)i, g->ref_gpu = x.ref_gpu, g->ref_host = x.ref_host, g->slope_fixed = x.slope_fixed;
    memcpy(&g->a, x.a, sizeof g->a);
    memcpy(&g->b, x.b, sizeof g->b);
  }
  if (!rc) {
    m->n_clock_maps = n, r->n_segs = n;
    lens_gpu_flag_memo(m, r, &t, seq, v.h.n_seq);
  }
  lens_gpu_kch_free(&t);
  free(seq);
  return rc;
}
