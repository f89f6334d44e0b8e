/* lens_model_load_window: a load that builds only the events a time window
 * (the CLI's --since/--until) keeps, and what decides their fields, so that
 * a window of a huge job costs about the window (docs/scale.md, "A time
 * window").
 *
 * The selection's rule (tools/cli/filter.c): an event is in the window if
 * start <= origin + until and (never stopped or stop >= origin + since),
 * origin the earliest event start of its host (0 for an absolute window:
 * since and until on the host's MONOTONIC). Two reads of the same bytes:
 *   1. the scan, file by file: its earliest START (the origin), what kinds
 *      of event it holds, and its columns: its STARTs and, per STOP/STATE
 *      record, the START it applies to, resolved as the loader resolves
 *      them (chunk by chunk: a record goes to the latest START of its id
 *      read by the end of its chunk, else, with every later record of the
 *      id, to the id's latest START at the end of the file; a START's
 *      children to the latest START of its parent id; its first STOP is
 *      its stop). Then, from the columns, the
 *      decisions: the STARTs in the window, and to those the events that
 *      decide their fields in the model: every ancestor (communicator,
 *      graph mark, missing-parent flag, the selection's groups), every
 *      ProxyStep with the same parent and step (the superseded mark), the
 *      file's earliest event (the origin), the types the caller keeps whole
 *      (with every ancestor, or with their parent only); a PXN ProxyOp's
 *      parent in another process is asked of that process's files (decided
 *      again from their columns if they were already); with kch_columns,
 *      the columns of every KernelCh too (what the GPU analysis reads of
 *      it: m->kch_cols), so that it is not built whole for that analysis;
 *   2. the load, building those STARTs only and dropping the STOP and STATE
 *      records of the others (they are no orphans); a packed chunk of which
 *      nothing is built or kept is not decoded again (what a read of it
 *      leaves in the model, its bad records and its thread, comes from the
 *      scan's note of it: lens_win_chunk_scanned, lens_win_chunk_skip).
 * The model is then a superset of the window's events whose events are
 * exactly as a full load makes them; the selection narrows it as it
 * narrows a full model. One reach differs: a STATE run record joins its
 * event's previous STATE if that is among the last 65,536 states read
 * (records.c); with fewer events built, a crafted run record farther than
 * that from its first record can join where a full load's would not. A
 * writer puts both in one chunk (at most 8,192 records), so never there.
 * Memory beyond the model: the files' bytes (a full load holds them too),
 * the columns of every file until the decisions are taken (48 bytes a
 * START, 4 a STOP/STATE record), two bits per record, and while one file
 * is scanned its id table, the STOP/STATE records of the chunk being read
 * (24 bytes each) and those that wait for a later START (32); with
 * kch_columns, 88 bytes a KernelCh of the group (its columns, until the
 * model takes them: 80 there), and while a file is scanned 24 bytes a
 * KernelCh, a Coll or P2p and a STOP/STATE record of a KernelCh id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_read.h"
#include "lens_unpack.h"
#include "reader_priv.h"
#include "window_plan.h"

/* A START as the decisions read it, resolved within its file at the end of
 * the scan: up is its parent's START (the latest of that id in the same
 * session), NONE when the parent is not in the file. 48 bytes. */
struct dstart {
  uint64_t id, parent, ts, stop;
  uint32_t session, up;
  int32_t aux;
  uint16_t type;
  uint8_t remote, stopped;
};
struct dpend { uint64_t id, ts; uint32_t session, kind; };
/* A STOP/STATE record of an id not started by the end of its chunk: it
 * waits to the end of the file (ord: its number in the file). */
struct dcarry { struct dpend q; uint32_t ord; };
/* kch_columns: what the scan keeps of the file being scanned for the
 * KernelCh columns: each KernelCh START (ord: its number in the file; its
 * dstart's aux is its index here), each Coll/P2p START's launch, each
 * STOP/STATE record of an id of KernelCh type (ord: its number). */
struct kstart { uint32_t ord; int32_t thread, channel; uint64_t start_gpu; };
struct kop { uint32_t ord; uint64_t launch_id, parent_group; };
struct kpend { uint32_t ord, state, has_args; uint64_t arg, ts; };
/* The GPU table of a planned file (its KernelCh columns when the plan left
 * KernelCh chunks to a light read: table_columns): each KernelCh START,
 * each Coll/P2p launch, each STOP/STATE record of a KernelCh id, in file
 * order with its chunk (walk number), from the full reads and the light. */
struct tstart { uint32_t session, chunk; int32_t thread, channel; uint64_t id, parent, ts, start_gpu; };
struct tlaunch { uint32_t session; uint64_t id, launch_id, parent_group; };
struct trec { uint32_t session, chunk, kind, state, has_args; uint64_t id, ts, arg; };
/* A column with what orders it as a full model orders its event. */
struct kcol { struct lens_kch_col c; uint32_t ord; };
struct req { uint32_t pid; uint64_t id; };
#define NONE UINT32_MAX
#define CARRIED (NONE - 1) /* pend_of: waits to the end of the file */
#define UNREAD (NONE - 2)  /* pend_of: its START is in a chunk the plan leaves out (dropped, no orphan) */

struct win_file {
  uint8_t *bytes; size_t size;     /* read on the scan; handed to the model by the load */
  int has_proc;
  uint32_t pid;
  char host[64];
  uint64_t min_start, min_ord;     /* earliest nonzero START time and its START number */
  uint64_t max_start, min_stop;    /* latest START time, earliest nonzero STOP time */
  uint64_t origin;                 /* of its host: UINT64_MAX none */
  int gpu;                         /* holds a START of w->o.keep_types_if, or a CUPTI chunk */
  int cupti;                       /* holds CUPTI evidence: a CUPTI chunk, a KernelLaunch that pushed an id */
  uint64_t n_starts, n_pends;      /* records of the scan */
  /* The scan's columns, kept until every decision is taken (a PXN ask may
   * decide a file again): its STARTs, and per STOP/STATE record the START
   * it applies to (the latest of its id; NONE: an orphan). */
  struct dstart *t;
  uint32_t *pend_of;
  uint8_t *keep, *drop;            /* bits: STARTs built, STOP/STATE records dropped */
  /* Its EVENTS_PACKED chunks as the scan read them, in file order, so the
   * load can skip one the decisions keep nothing of (lens_win_chunk_skip). */
  struct win_chunk { uint32_t chunk, n_starts, n_pends, opened; uint64_t bad; } *ck;
  size_t n_ck, cap_ck, ck_next;    /* ck_next: the load's cursor */
  size_t req_seen;                 /* requests there were when it was decided */
  /* The plan (plan_files): the events chunks the window leaves out, by
   * file offset, never decoded; the STARTs and event types they hold; the
   * index (where a START is, for a record whose START is left out) and the
   * events the plan wants (the only ones the decisions may keep: another
   * event the plan reads may miss its STOP). planned: it leaves one out. */
  int can_plan, planned;
  /* The bytes the plan's index walk found whole (every payload's CRC checked on them): the scan and the
   * load walk the same bytes and check only their headers (lens_win_payloads_checked). */
  const uint8_t *checked_bytes;
  size_t checked_size;
  int light;                       /* its KernelCh come from the GPU table (light reads of the chunks left out) */
  int kch_cols_only;               /* the plan left out KernelCh for the columns alone (light or kch_no_light) */
  struct win_unread { uint64_t offset, seq; uint32_t session, slot, light; } *unread;
  size_t n_unread, cap_unread, unread_next; /* unread_next: each read's cursor */
  uint64_t unread_starts;
  uint32_t unread_types;
  struct lens_trace_index ix;
  struct lens_start_groups sg;
  uint8_t *in;                     /* per ix chunk: read */
  struct lens_idseq wanted;        /* (session, LENS_INDEX_KEY) */
  uint64_t first_ts;               /* its earliest nonzero START, found from the index (plan_files) */
  struct lens_wplan_seed *seeds; size_t n_seeds, cap_seeds; /* the STARTs at first_ts */
};

struct lens_win {
  struct lens_load_window o;
  struct win_file *f; size_t n;
  int keep_on;         /* keep_types apply to this load */
  uint32_t keep;       /* the types built whole: keep_types, and keep_types_cupti with CUPTI evidence */
  uint32_t keep_parent; /* the types built whole with their parent only: keep_types_parent */
  int all;             /* the window holds every event: the load builds all, decides nothing */
  int too_many;        /* a file of 2^32 records or more: everything is built */
  int replan;          /* a decision needs an event its file's plan did not want: loaded again without plans */
  uint64_t skipped;    /* packed chunks the load skipped (lens_win_chunk_skip) */
  /* kch_columns: asked, and no file has given a reason against yet (an id
   * started twice, an id that does not say KernelCh); the file's parts and
   * every file's columns. */
  int cols;
  struct kstart *ks; size_t n_ks, cap_ks;
  struct kop *ko; size_t n_ko, cap_ko;
  struct kpend *kp; size_t n_kp, cap_kp;
  struct kcol *kc; size_t n_kc, cap_kc;
  struct tstart *ts; size_t n_ts, cap_ts;   /* the GPU table of the file being scanned (light files) */
  struct tlaunch *tl; size_t n_tl, cap_tl;
  struct trec *tr; size_t n_tr, cap_tr;
  /* The file being scanned: its STARTs; its STOP/STATE records so far
   * (np), those of the chunk being read (p: resolved at the chunk's end,
   * from p_base on), what each applies to (pend_of, np of them) and those
   * that wait to the end of the file (cw, their bits in cbits); the STARTs
   * entered in the id table (t_put). */
  struct dstart *t; size_t nt, cap_t, t_put;
  struct dpend *p; size_t n_p, cap_p, np, p_base;
  uint32_t *pend_of; size_t cap_pend_of;
  struct dcarry *cw; size_t n_cw, cap_cw;
  uint8_t *cbits; size_t cap_cbits;
  struct lens_idseq ids, carried; /* (session, id) -> its latest START; the carried ids */
  /* PXN parents asked of other processes: (pid, id), each once. */
  struct req *rq; size_t n_rq, cap_rq;
  struct lens_hash rq_set;
};

#define BIT(v, i) ((v)[(i) >> 3] >> ((i) & 7) & 1)
#define SET(v, i) ((v)[(i) >> 3] |= (uint8_t)(1u << ((i) & 7)))

int lens_win_payloads_checked(const struct lens_builder *b, const uint8_t *base, size_t size) {
  const struct win_file *f = b->win_file < b->win->n ? &b->win->f[b->win_file] : NULL;
  return f && f->checked_bytes && f->checked_bytes == base && f->checked_size == size;
}

int lens_win_bytes(struct lens_builder *b, const char *path, uint8_t **addr, size_t *size) {
  struct lens_win *w = b->win;
  if (b->win_file >= w->n) return lens_builder_oom(b); /* not reached: the scan reads the same list */
  struct win_file *f = &w->f[b->win_file];
  f->unread_next = 0;
  if (!f->bytes && lens_read_regular_file(path, UINT64_MAX, "trace", &f->bytes, &f->size, b->err, b->err_len))
    return -1;
  *addr = f->bytes;
  *size = f->size;
  if (b->win_mode == LENS_WIN_BUILD) f->bytes = NULL; /* the model's now */
  return 0;
}

/* A Coll's or P2p's launch id and group, read as records.c reads its
 * payload (a short one zero-extended). */
static void launch_of(unsigned type, const uint8_t *payload, size_t payload_len, uint64_t *launch, uint64_t *group) {
  if (type == LENS_T_COLL) {
    struct lens_p_coll p = {0};
    memcpy(&p, payload, payload_len < sizeof p ? payload_len : sizeof p);
    *launch = p.launch_id, *group = p.parent_group;
  } else {
    struct lens_p_p2p p = {0};
    memcpy(&p, payload, payload_len < sizeof p ? payload_len : sizeof p);
    *launch = p.launch_id, *group = p.parent_group;
  }
}

/* A KernelCh's payload, read as records.c reads it (a short one zero-extended). */
static struct lens_p_kernel_ch kernel_ch_of(const uint8_t *payload, size_t payload_len) {
  struct lens_p_kernel_ch p = {0};
  memcpy(&p, payload, payload_len < sizeof p ? payload_len : sizeof p);
  return p;
}

/* The scan's part of a KernelCh's columns, or a Coll/P2p's launch (read as
 * records.c reads the payload: a short one zero-extended). 0 or -1. */
static int kch_start(struct lens_win *w, struct dstart *d, int32_t thread, const struct lens_rec_start *s,
                     const uint8_t *payload, size_t payload_len) {
  if (s->h.type == LENS_T_KERNEL_CH) {
    if (LENS_ID_TYPE(s->id) != LENS_T_KERNEL_CH) { /* its STOP and STATE records would not be noted */
      w->cols = 0;
      return 0;
    }
    struct lens_p_kernel_ch p = kernel_ch_of(payload, payload_len);
    d->aux = (int32_t)w->n_ks;
    struct kstart *k = LENS_VEC_PUSH(w, w->ks, w->n_ks, cap_ks);
    if (!k) return -1;
    *k = (struct kstart){(uint32_t)(w->nt - 1), thread, p.channel, p.start_gpu_ns};
  } else if (s->h.type == LENS_T_COLL || s->h.type == LENS_T_P2P) {
    struct kop *k = LENS_VEC_PUSH(w, w->ko, w->n_ko, cap_ko);
    if (!k) return -1;
    *k = (struct kop){(uint32_t)(w->nt - 1), 0, 0};
    launch_of(s->h.type, payload, payload_len, &k->launch_id, &k->parent_group);
  }
  return 0;
}

/* The GPU table's part of a START (read as records.c reads the payload: a
 * short one zero-extended). 0 or -1. */
static int table_start(struct lens_win *w, uint32_t session, uint32_t chunk, int32_t thread,
                       const struct lens_rec_start *s, const uint8_t *payload, size_t payload_len) {
  if (s->h.type == LENS_T_KERNEL_CH) {
    if (LENS_ID_TYPE(s->id) != LENS_T_KERNEL_CH) { /* its records would not be known for a KernelCh's */
      w->replan = 1;
      return 0;
    }
    struct lens_p_kernel_ch p = kernel_ch_of(payload, payload_len);
    struct tstart *t = LENS_VEC_PUSH(w, w->ts, w->n_ts, cap_ts);
    if (!t) return -1;
    *t = (struct tstart){session, chunk, thread, p.channel, s->id, s->parent, s->ts, p.start_gpu_ns};
  } else if (s->h.type == LENS_T_COLL || s->h.type == LENS_T_P2P) {
    struct tlaunch *t = LENS_VEC_PUSH(w, w->tl, w->n_tl, cap_tl);
    if (!t) return -1;
    *t = (struct tlaunch){session, s->id, 0, 0};
    launch_of(s->h.type, payload, payload_len, &t->launch_id, &t->parent_group);
  }
  return 0;
}

static int table_rec(struct lens_win *w, uint32_t session, uint32_t chunk, uint32_t kind, uint64_t id, uint64_t ts,
                     uint32_t state, uint64_t arg, uint32_t has_args) {
  struct trec *t = LENS_VEC_PUSH(w, w->tr, w->n_tr, cap_tr);
  if (!t) return -1;
  *t = (struct trec){session, chunk, kind, kind == LENS_REC_STATE ? state : UINT32_MAX, has_args, id, ts, arg};
  return 0;
}

int lens_win_start(struct lens_builder *b, uint32_t session, int32_t thread, const struct lens_rec_start *s,
                   const uint8_t *payload, size_t payload_len) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  uint64_t ord = b->win_starts++;
  if (b->win_mode != LENS_WIN_SCAN) /* the load: a START the window leaves out is counted, not built */
    return w->all || ord >= f->n_starts || BIT(f->keep, ord); /* more than the scan saw: built */
  if (s->ts && s->ts < f->min_start) f->min_start = s->ts, f->min_ord = ord;
  if (s->ts > f->max_start) f->max_start = s->ts;
  if (w->o.keep_types_if >> s->h.type & 1) f->gpu = 1;
  if (s->h.type == LENS_T_KERNEL_LAUNCH && !f->cupti) { /* read as records.c reads it: a short one zero-extended */
    struct lens_p_kernel_launch kl = {0};
    memcpy(&kl, payload, payload_len < sizeof kl ? payload_len : sizeof kl);
    f->cupti = kl.ext_corr_id != 0;
  }
  if (w->too_many) return 0;
  if (w->nt >= UNREAD) { /* its numbers would not fit the columns */
    w->too_many = 1;
    return 0;
  }
  struct dstart *d = LENS_VEC_PUSH(w, w->t, w->nt, cap_t);
  if (!d) return lens_builder_oom(b);
  *d = (struct dstart){.id = s->id, .parent = s->parent, .ts = s->ts, .session = session, .up = NONE,
                       .type = (uint16_t)s->h.type,
                       .remote = (s->h.aux & LENS_START_F_REMOTE) || (s->id & LENS_ID_REMOTE)};
  /* ProxyOp: the pid a PXN parent lives in; ProxyStep: its step (both int32 first in the payload). */
  if ((s->h.type == LENS_T_PROXY_OP || s->h.type == LENS_T_PROXY_STEP) && payload_len >= 4)
    memcpy(&d->aux, payload, 4);
  if (f->light) {
    if (table_start(w, session, (uint32_t)b->chunk, thread, s, payload, payload_len)) return lens_builder_oom(b);
  } else if (w->cols && kch_start(w, d, thread, s, payload, payload_len)) {
    return lens_builder_oom(b);
  }
  return 0;
}

int lens_win_pend(struct lens_builder *b, uint32_t session, uint32_t kind, uint64_t id, uint64_t ts, uint32_t state,
                  uint64_t arg, uint32_t has_args) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  uint64_t ord = b->win_pends++;
  if (b->win_mode != LENS_WIN_SCAN) return w->all || ord >= f->n_pends || !BIT(f->drop, ord);
  if (kind == LENS_REC_STOP && ts && ts < f->min_stop) f->min_stop = ts;
  if (w->too_many) return 0;
  if (w->np >= UNREAD) {
    w->too_many = 1;
    return 0;
  }
  struct dpend *q = LENS_VEC_PUSH(w, w->p, w->n_p, cap_p);
  if (!q) return lens_builder_oom(b);
  *q = (struct dpend){id, ts, session, kind};
  w->np++;
  if (f->light) {
    if (LENS_ID_TYPE(id) == LENS_T_KERNEL_CH &&
        table_rec(w, session, (uint32_t)b->chunk, kind, id, ts, state, arg, has_args))
      return lens_builder_oom(b);
  } else if (w->cols && LENS_ID_TYPE(id) == LENS_T_KERNEL_CH) {
    struct kpend *k = LENS_VEC_PUSH(w, w->kp, w->n_kp, cap_kp);
    if (!k) return lens_builder_oom(b);
    *k = (struct kpend){(uint32_t)(w->np - 1), kind == LENS_REC_STATE ? state : UINT32_MAX, has_args, arg, ts};
  }
  return 0;
}

static int grow_to(void **v, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 1024;
  while (n < need) n *= 2;
  void *x = realloc(*v, n * size);
  if (!x) return -1;
  *v = x, *cap = n;
  return 0;
}

/* STOP/STATE record k of the scanned file goes to START v: the first STOP
 * a START gets is its stop. */
static void pend_to(struct lens_win *w, size_t k, uint32_t kind, uint64_t ts, int64_t v) {
  struct dstart *d = &w->t[v];
  w->pend_of[k] = (uint32_t)v;
  if (kind == LENS_REC_STOP && !d->stopped) d->stopped = 1, d->stop = ts;
}

/* A chunk of the scanned file ends: the loader applies that chunk's records
 * then (records.c, lens_apply_chunk), and the scan resolves them as it
 * does, while they are in cache: the chunk's STARTs entered, then each of
 * its STOP/STATE records applied, in file order, to the latest START of its
 * id entered so far; a record of an id not started yet, and every later
 * record of that id, waits to the end of the file (lens_win_end_file). */
int lens_win_chunk_end(struct lens_builder *b) {
  struct lens_win *w = b->win;
  if (w->too_many) return 0;
  for (; w->t_put < w->nt; w->t_put++)
    if (lens_idseq_put(&w->ids, w->t[w->t_put].session, w->t[w->t_put].id, (int64_t)w->t_put))
      return lens_builder_oom(b);
  if (!w->n_p) return 0;
  if (grow_to((void **)&w->pend_of, &w->cap_pend_of, w->np, sizeof *w->pend_of) ||
      (w->cols && grow_to((void **)&w->cbits, &w->cap_cbits, w->np / 8 + 1, 1)))
    return lens_builder_oom(b);
  int64_t v;
  for (size_t i = 0; i < w->n_p; i++) {
    const struct dpend *q = &w->p[i];
    size_t k = w->p_base + i;
    if (!(w->n_cw && lens_idseq_get(&w->carried, q->session, q->id, &v)) &&
        lens_idseq_get(&w->ids, q->session, q->id, &v)) {
      pend_to(w, k, q->kind, q->ts, v);
      continue;
    }
    w->pend_of[k] = CARRIED;
    if (w->cols) SET(w->cbits, k);
    struct dcarry *c = LENS_VEC_PUSH(w, w->cw, w->n_cw, cap_cw);
    if (!c || lens_idseq_put(&w->carried, q->session, q->id, 1)) return lens_builder_oom(b);
    *c = (struct dcarry){*q, (uint32_t)k};
  }
  w->p_base = w->np;
  w->n_p = 0;
  return 0;
}

int lens_win_chunk_scanned(struct lens_builder *b, uint64_t starts0, uint64_t pends0, uint64_t bad, int opened) {
  struct win_file *f = &b->win->f[b->win_file];
  uint64_t ns = b->win_starts - starts0, np = b->win_pends - pends0;
  if (ns > UINT32_MAX || np > UINT32_MAX) return 0; /* not reached (a chunk holds 2^32 records at most); not skipped */
  struct win_chunk *c = LENS_VEC_PUSH(f, f->ck, f->n_ck, cap_ck);
  if (!c) return lens_builder_oom(b);
  *c = (struct win_chunk){b->chunk, (uint32_t)ns, (uint32_t)np, (uint32_t)!!opened, bad};
  return 0;
}

/* Whether any bit (want 1) or any clear bit (want 0) lies in [lo, hi) of v. */
static int any_bit(const uint8_t *v, uint64_t lo, uint64_t hi, int want) {
  uint8_t flip = want ? 0 : 0xff;
  for (; lo < hi && (lo & 7); lo++)
    if (BIT(v, lo) == want) return 1;
  for (; lo + 8 <= hi; lo += 8)
    if ((uint8_t)(v[lo >> 3] ^ flip)) return 1;
  for (; lo < hi; lo++)
    if (BIT(v, lo) == want) return 1;
  return 0;
}

int lens_win_chunk_skip(struct lens_builder *b, uint64_t *bad, int *opened) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  if (w->all || !f->keep || !f->drop) return 0; /* everything built, or nothing decided */
  while (f->ck_next < f->n_ck && f->ck[f->ck_next].chunk < b->chunk) f->ck_next++;
  if (f->ck_next >= f->n_ck || f->ck[f->ck_next].chunk != b->chunk) return 0; /* not reached: the scan read it */
  const struct win_chunk *c = &f->ck[f->ck_next++];
  uint64_t s0 = b->win_starts, s1 = s0 + c->n_starts, p0 = b->win_pends, p1 = p0 + c->n_pends;
  if (s1 > f->n_starts || p1 > f->n_pends) return 0;
  if (any_bit(f->keep, s0, s1, 1) || any_bit(f->drop, p0, p1, 0)) return 0;
  b->win_starts = s1, b->win_pends = p1;
  w->skipped++;
  *bad = c->bad;
  *opened = (int)c->opened;
  return 1;
}

/* Whether the START of (session, id) is in a chunk the file's plan leaves
 * out (session UINT32_MAX: any). */
struct unread_q { const struct win_file *f; int hit; };
static void unread_cb(void *ctx, size_t k) {
  struct unread_q *q = ctx;
  if (!q->f->in[k]) q->hit = 1;
}
static int start_unread(const struct win_file *f, uint32_t session, uint64_t id) {
  struct unread_q q = {f, 0};
  if (session != UINT32_MAX) {
    lens_start_groups_find(&f->sg, session, LENS_ID_SLOT(id), LENS_ID_SEQ(id), unread_cb, &q);
    return q.hit;
  }
  for (size_t g = 0; g < f->sg.ng && !q.hit; g++)
    if (f->sg.g[g].slot == LENS_ID_SLOT(id))
      lens_start_groups_find(&f->sg, f->sg.g[g].session, LENS_ID_SLOT(id), LENS_ID_SEQ(id), unread_cb, &q);
  return q.hit;
}

/* Whether the plan of d's file wants it (a file without a plan: all). */
static int plan_wants(struct win_file *f, const struct dstart *d) {
  int64_t v;
  return !f->planned || lens_idseq_get(&f->wanted, d->session, LENS_INDEX_KEY(d->id), &v);
}

/* The end of a file's scan (its chunks resolved: lens_win_chunk_end): the
 * records that waited go, in file order, to their id's latest START (none:
 * an orphan), and each START's parent is the latest START of that id in the
 * file. The file keeps its columns; the scan's tables start empty for the
 * next file. */
static int resolve_file(struct lens_win *w, struct win_file *f) {
  size_t n = w->nt;
  int64_t v;
  for (size_t c = 0; c < w->n_cw; c++) {
    const struct dcarry *x = &w->cw[c];
    w->pend_of[x->ord] = NONE;
    if (lens_idseq_get(&w->ids, x->q.session, x->q.id, &v)) pend_to(w, x->ord, x->q.kind, x->q.ts, v);
    else if (f->planned && start_unread(f, x->q.session, x->q.id)) w->pend_of[x->ord] = UNREAD;
  }
  for (size_t i = 0; i < n; i++) {
    struct dstart *d = &w->t[i];
    if (d->parent && lens_idseq_get(&w->ids, d->session, d->parent, &v)) d->up = (uint32_t)v;
  }
  /* The columns are the file's (at their size); the next file's tables are
   * as large as this one's (the files of a job are alike): not grown from
   * nothing by copies (at 10^8 events the copies were 9 % of a window). */
  uint32_t *po = realloc(w->pend_of, (w->np ? w->np : 1) * sizeof *po);
  f->pend_of = po ? po : w->pend_of;
  w->pend_of = malloc((w->np ? w->np : 1) * sizeof *w->pend_of);
  w->cap_pend_of = w->pend_of ? (w->np ? w->np : 1) : 0;
  if (!f->pend_of) return -1;
  if (n) {
    struct dstart *t = realloc(w->t, n * sizeof *t);
    f->t = t ? t : w->t;
    w->t = malloc(n * sizeof *w->t);
    w->cap_t = w->t ? n : 0;
  }
  return 0;
}

static int ask_parent(struct lens_win *w, uint32_t pid, uint64_t id) {
  int64_t v;
  if (lens_hash_get(&w->rq_set, pid, id, &v)) return 0;
  if (lens_hash_put(&w->rq_set, pid, id, 1)) return -1;
  struct req *q = LENS_VEC_PUSH(w, w->rq, w->n_rq, cap_rq);
  if (!q) return -1;
  *q = (struct req){pid, id};
  return 0;
}

/* A ProxyStep's (parent, step), one key: a collision only keeps more. */
static uint64_t step_key(const struct dstart *d) {
  return d->parent * 0x9E3779B97F4A7C15ull ^ (uint32_t)d->aux;
}

/* The decisions of one file, from its columns (see the top of the file);
 * taken again when another process asks it for a PXN parent. 0 or -1. */
static int decide(struct lens_win *w, struct win_file *f) {
  const struct lens_load_window *o = &w->o;
  size_t n = f->n_starts, np = f->n_pends;
  int rc = -1;
  uint8_t *keep = calloc(n / 8 + 1, 1), *drop = calloc(np / 8 + 1, 1);
  uint8_t *with_parent = w->keep_parent ? calloc(n / 8 + 1, 1) : NULL;
  /* The parents (up) of the steps in the window: a twin has the same
   * session and parent id, so the same up, and a step whose up is not
   * among them is no twin (the steps' hash is asked only of the others). */
  uint8_t *step_up = calloc(n / 8 + 1, 1);
  uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
  struct lens_hash steps = {0};
  if (!keep || !drop || !stack || !step_up || (w->keep_parent && !with_parent)) goto out;
  int64_t v;
  size_t top = 0, n_steps = 0, n_steps_no_up = 0;
  uint64_t og = f->origin;
  for (size_t i = 0; i < n; i++) {
    const struct dstart *d = &f->t[i];
    int in = 1;
    if (og != UINT64_MAX) { /* filter.c's rule, to the letter */
      if (o->have_until && d->ts > og + o->until_ns) in = 0;
      if (o->have_since && d->stop && d->stop < og + o->since_ns) in = 0;
    }
    /* An event the plan read without wanting it may miss its STOP: it
     * stopped before the window (or it would be wanted). */
    int wanted = plan_wants(f, d);
    if (!wanted) in = 0;
    if (in && d->type == LENS_T_PROXY_STEP && d->parent) {
      if (lens_hash_put(&steps, d->session, step_key(d), 1)) goto out;
      n_steps++;
      if (d->up != NONE) SET(step_up, d->up);
      else n_steps_no_up++;
    }
    if (!in && (w->keep >> d->type & 1)) in = 1;
    if (!in && (w->keep_parent >> d->type & 1)) SET(with_parent, i);
    if (!in && f->min_start != UINT64_MAX && i == f->min_ord) in = 1;
    if (in && !wanted) w->replan = 1; /* not reached: the plan wants these types and the earliest START */
    if (in) SET(keep, i), stack[top++] = (uint32_t)i;
  }
  /* Parents other processes asked for: every START of the id, any session. */
  int asked = 0;
  for (size_t r = 0; r < w->n_rq && !asked; r++) asked = w->rq[r].pid == f->pid;
  for (size_t i = 0; i < n && (asked || n_steps); i++) {
    const struct dstart *d = &f->t[i];
    if (BIT(keep, i)) continue;
    int in = asked && lens_hash_get(&w->rq_set, f->pid, d->id, &v);
    if (!in && n_steps && d->type == LENS_T_PROXY_STEP && d->parent &&
        (d->up != NONE ? BIT(step_up, d->up) : n_steps_no_up != 0))
      in = lens_hash_get(&steps, d->session, step_key(d), &v);
    if (in && !plan_wants(f, d)) w->replan = 1; /* a PXN parent or a twin the plan did not want */
    if (in) SET(keep, i), stack[top++] = (uint32_t)i;
  }
  /* A parent asked for whose START the plan left unread: read again, without plans. */
  for (size_t r = 0; asked && f->planned && r < w->n_rq; r++)
    if (w->rq[r].pid == f->pid && start_unread(f, UINT32_MAX, w->rq[r].id)) w->replan = 1;
  /* Every ancestor, to any depth. */
  while (top) {
    const struct dstart *d = &f->t[stack[--top]];
    if (!d->parent) continue;
    if (d->type == LENS_T_PROXY_OP && d->remote && (uint32_t)d->aux != f->pid) {
      if (ask_parent(w, (uint32_t)d->aux, d->parent)) goto out;
      continue;
    }
    if (d->up == NONE || BIT(keep, d->up)) continue;
    if (!plan_wants(f, &f->t[d->up])) w->replan = 1; /* not reached: the plan wants every ancestor */
    SET(keep, d->up);
    stack[top++] = d->up;
  }
  /* The types built with their parent only (after the walk: a parent kept
   * so is not walked from, and one the walk reaches gets every ancestor). */
  for (size_t i = 0; with_parent && i < n; i++) {
    if (!BIT(with_parent, i) || BIT(keep, i)) continue;
    SET(keep, i);
    if (f->t[i].up != NONE) SET(keep, f->t[i].up);
    if (!plan_wants(f, &f->t[i]) || (f->t[i].up != NONE && !plan_wants(f, &f->t[f->t[i].up]))) w->replan = 1;
  }
  /* STOP and STATE records of the STARTs left out: dropped (no orphans). */
  for (size_t k = 0; k < np; k++)
    if (f->pend_of[k] == UNREAD || (f->pend_of[k] != NONE && !BIT(keep, f->pend_of[k]))) SET(drop, k);
  free(f->keep);
  free(f->drop);
  f->keep = keep, f->drop = drop;
  keep = drop = NULL;
  f->req_seen = w->n_rq;
  rc = 0;
out:
  free(keep);
  free(drop);
  free(with_parent);
  free(step_up);
  free(stack);
  lens_hash_free(&steps);
  return rc;
}

/* kch_columns: the KernelCh columns of the file just resolved (its STARTs
 * in f->t, its records in w->p), as a full load's events would hold them
 * (records.c): its stop pTimer and stop notice from its STOP and STATE
 * records in the load's order of applying them (the file's, the carried
 * ones after the rest: carried), its launch from its parent (up). A
 * KernelCh id started twice in a session turns the columns off (which of
 * the STARTs a record goes to is then the load's to say). 0 or -1. */
static int kch_columns(struct lens_win *w, struct win_file *f, int32_t proc) {
  const uint8_t *carried = w->n_cw ? w->cbits : NULL;
  int64_t v;
  size_t base = w->n_kc;
  for (size_t i = 0; i < w->n_ks; i++) {
    const struct kstart *k = &w->ks[i];
    const struct dstart *d = &f->t[k->ord];
    if (!lens_idseq_get(&w->ids, d->session, d->id, &v) || (uint64_t)v != k->ord) {
      w->cols = 0;
      return 0;
    }
    struct kcol *c = LENS_VEC_PUSH(w, w->kc, w->n_kc, cap_kc);
    if (!c) return -1;
    *c = (struct kcol){{.ev = -1, .proc = proc, .thread = k->thread, .channel = k->channel, .session = d->session,
                        .id = d->id, .start_gpu = k->start_gpu, .start_notice = d->ts},
                       k->ord};
    if (d->up != NONE && (f->t[d->up].type == LENS_T_COLL || f->t[d->up].type == LENS_T_P2P)) {
      size_t lo = 0, hi = w->n_ko; /* the Coll/P2p launches are in START order */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->ko[mid].ord < d->up) lo = mid + 1;
        else hi = mid;
      }
      if (lo < w->n_ko && w->ko[lo].ord == d->up)
        c->c.launch_id = w->ko[lo].launch_id, c->c.parent_group = w->ko[lo].parent_group;
    }
  }
  /* The first KernelChStop (22) applied: its time is the stop notice (seen:
   * one was); the first nonzero arg of one with args is the stop pTimer. A
   * STATE run record is one record here: folded, it repeats an earlier
   * record of the same state and arg, which decided both already. */
  uint8_t *seen = calloc(w->n_ks / 8 + 1, 1);
  if (!seen) return -1;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < w->n_kp; i++) {
      const struct kpend *q = &w->kp[i];
      if ((carried && BIT(carried, q->ord)) != pass) continue;
      uint32_t to = f->pend_of[q->ord];
      if (to >= UNREAD || f->t[to].type != LENS_T_KERNEL_CH || !lens_gpu_stop_state(LENS_T_KERNEL_CH, q->state))
        continue;
      size_t r = (size_t)f->t[to].aux;
      struct lens_kch_col *c = &w->kc[base + r].c;
      if (!BIT(seen, r)) SET(seen, r), c->stop_notice = q->ts;
      c->stop_gpu = lens_gpu_stop_timer(LENS_T_KERNEL_CH, q->state, q->has_args, q->arg, c->stop_gpu);
    }
  for (size_t i = 0; i < w->n_ks; i++) {
    const struct dstart *d = &f->t[w->ks[i].ord];
    if (!BIT(seen, i)) w->kc[base + i].c.stop_notice = d->stopped ? d->stop : 0;
  }
  free(seen);
  return 0;
}

/* A light file's KernelCh columns from its GPU table, as kch_columns makes
 * them from the scan's (the same rules, in the same order): each chunk's
 * KernelCh STARTs entered at its end, then its records applied, in file
 * order, to the latest START of their id; a record of an id not started
 * yet, and every later one of that id, waits to the end of the file; a
 * KernelCh id started twice, read again without plans (which START a record
 * goes to is the load's to say). Its launch: the latest Coll/P2p START of
 * its parent id. 0 or -1. */
struct trow { uint64_t stop, stop_gpu, stop_notice; uint8_t stopped, seen; };
static void trow_apply(struct trow *r, const struct trec *q) {
  if (q->kind == LENS_REC_STOP && !r->stopped) r->stopped = 1, r->stop = q->ts;
  if (q->kind != LENS_REC_STATE || !lens_gpu_stop_state(LENS_T_KERNEL_CH, q->state)) return;
  if (!r->seen) r->seen = 1, r->stop_notice = q->ts;
  r->stop_gpu = lens_gpu_stop_timer(LENS_T_KERNEL_CH, q->state, q->has_args, q->arg, r->stop_gpu);
}
static int table_columns(struct lens_win *w, int32_t proc) {
  struct lens_idseq ids = {0}, carried = {0}, launches = {0};
  struct trow *row = calloc(w->n_ts ? w->n_ts : 1, sizeof *row);
  uint8_t *late = calloc(w->n_tr / 8 + 1, 1);
  int rc = -1;
  int64_t v;
  if (!row || !late) goto out;
  size_t i = 0, j = 0;
  while (i < w->n_ts || j < w->n_tr) {
    uint32_t c = i < w->n_ts ? w->ts[i].chunk : UINT32_MAX;
    if (j < w->n_tr && w->tr[j].chunk < c) c = w->tr[j].chunk;
    for (; i < w->n_ts && w->ts[i].chunk == c; i++)
      if (lens_idseq_put(&ids, w->ts[i].session, w->ts[i].id, (int64_t)i)) goto out;
    for (; j < w->n_tr && w->tr[j].chunk == c; j++) {
      const struct trec *q = &w->tr[j];
      if (!(carried.puts && lens_idseq_get(&carried, q->session, q->id, &v)) &&
          lens_idseq_get(&ids, q->session, q->id, &v)) {
        trow_apply(&row[v], q);
        continue;
      }
      SET(late, j);
      if (lens_idseq_put(&carried, q->session, q->id, 1)) goto out;
    }
  }
  for (j = 0; j < w->n_tr; j++)
    if (BIT(late, j) && lens_idseq_get(&ids, w->tr[j].session, w->tr[j].id, &v)) trow_apply(&row[v], &w->tr[j]);
  for (size_t k = 0; k < w->n_tl; k++)
    if (lens_idseq_put(&launches, w->tl[k].session, w->tl[k].id, (int64_t)k)) goto out;
  for (i = 0; i < w->n_ts; i++) {
    const struct tstart *t = &w->ts[i];
    if (!lens_idseq_get(&ids, t->session, t->id, &v) || (size_t)v != i) { /* started twice */
      w->replan = 1;
      break;
    }
    struct kcol *c = LENS_VEC_PUSH(w, w->kc, w->n_kc, cap_kc);
    if (!c) goto out;
    *c = (struct kcol){{.ev = -1, .proc = proc, .thread = t->thread, .channel = t->channel, .session = t->session,
                        .id = t->id, .start_gpu = t->start_gpu, .start_notice = t->ts, .stop_gpu = row[i].stop_gpu,
                        .stop_notice = row[i].seen ? row[i].stop_notice : row[i].stopped ? row[i].stop : 0},
                       (uint32_t)i};
    if (t->parent && lens_idseq_get(&launches, t->session, t->parent, &v))
      c->c.launch_id = w->tl[v].launch_id, c->c.parent_group = w->tl[v].parent_group;
  }
  rc = 0;
out:
  free(row);
  free(late);
  lens_idseq_free(&ids);
  lens_idseq_free(&carried);
  lens_idseq_free(&launches);
  return rc;
}

int lens_win_end_file(struct lens_builder *b) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  f->has_proc = b->proc >= 0;
  if (b->proc >= 0) {
    const struct lens_proc *p = &b->m->procs[b->proc];
    f->pid = p->pid;
    memcpy(f->host, p->host, sizeof f->host);
  }
  if (b->m->n_cupti && w->o.keep_types_if) f->gpu = 1;
  if (b->m->n_cupti) f->cupti = 1;
  f->n_starts = b->win_starts, f->n_pends = b->win_pends;
  int rc = 0;
  if (w->too_many) w->cols = 0;
  if (!w->too_many && b->proc >= 0) { /* what the last chunk left (not reached: each chunk's end resolves it) */
    if (lens_win_chunk_end(b)) return -1;
    rc = resolve_file(w, f);
  }
  if (!rc && w->cols && b->proc >= 0) rc = f->light ? table_columns(w, b->proc) : kch_columns(w, f, b->proc);
  /* The next file's tables start empty (their memory is the largest file's). */
  if (w->cbits) memset(w->cbits, 0, w->cap_cbits);
  w->nt = w->np = w->n_p = w->p_base = w->t_put = w->n_cw = 0;
  w->n_ks = w->n_ko = w->n_kp = 0;
  w->n_ts = w->n_tl = w->n_tr = 0;
  lens_idseq_free(&w->ids);
  lens_idseq_free(&w->carried);
  return rc ? lens_builder_oom(b) : 0;
}

static void free_columns(struct lens_win *w) {
  for (size_t i = 0; i < w->n; i++) {
    free(w->f[i].t);
    free(w->f[i].pend_of);
    w->f[i].t = NULL, w->f[i].pend_of = NULL;
  }
}

static void plan_free_file(struct win_file *f);

static void win_free(struct lens_win *w) {
  free_columns(w);
  for (size_t i = 0; i < w->n; i++) {
    plan_free_file(&w->f[i]);
    free(w->f[i].bytes);
    free(w->f[i].keep);
    free(w->f[i].drop);
    free(w->f[i].ck);
  }
  free(w->f);
  free(w->t);
  free(w->p);
  free(w->pend_of);
  free(w->cw);
  free(w->cbits);
  free(w->rq);
  free(w->ks);
  free(w->ko);
  free(w->kp);
  free(w->kc);
  free(w->ts);
  free(w->tl);
  free(w->tr);
  lens_idseq_free(&w->ids);
  lens_idseq_free(&w->carried);
  lens_hash_free(&w->rq_set);
}

/* Whether v (n items of size bytes) is already in cmp's order. */
static int sorted(const void *v, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  const char *p = v;
  for (size_t i = 1; i < n; i++)
    if (cmp(p + (i - 1) * size, p + i * size) > 0) return 0;
  return 1;
}

static int cmp_kcol(const void *pa, const void *pb) { /* a full model's event order: (proc, start, number) */
  const struct kcol *a = pa, *b = pb;
  if (a->c.proc != b->c.proc) return a->c.proc < b->c.proc ? -1 : 1;
  if (a->c.start_notice != b->c.start_notice) return a->c.start_notice < b->c.start_notice ? -1 : 1;
  return (a->ord > b->ord) - (a->ord < b->ord);
}

/* A column's identity: (proc, session, id), unique in a file (kch_columns). */
struct kid { int32_t proc; uint32_t session; uint64_t id; uint32_t col; };

static int cmp_kid(const void *pa, const void *pb) {
  const struct kid *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  if (a->session != b->session) return a->session < b->session ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* The columns to the model: in a full model's order, each built KernelCh's
 * event named (ev). 0, -1 out of memory, 1 when a KernelCh built has no
 * column (not reached). */
static int kch_give(struct lens_win *w, struct lens_model *m) {
  size_t n = w->n_kc;
  /* (w->kc NULL when no file held a KernelCh.) A GPU's KernelCh come from one thread, mostly in time order
   * already: sorted only when they are not (a check is a pass; the sort, of every KernelCh, was 3 % of a
   * window). */
  if (n && !sorted(w->kc, n, sizeof *w->kc, cmp_kcol)) qsort(w->kc, n, sizeof *w->kc, cmp_kcol);
  struct lens_kch_col *c = malloc((n ? n : 1) * sizeof *c);
  struct kid *ids = malloc((n ? n : 1) * sizeof *ids);
  if (!c || !ids || n >= UINT32_MAX) {
    free(c), free(ids);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    c[i] = w->kc[i].c;
    ids[i] = (struct kid){c[i].proc, c[i].session, c[i].id, (uint32_t)i};
  }
  if (!sorted(ids, n, sizeof *ids, cmp_kid)) qsort(ids, n, sizeof *ids, cmp_kid);
  int rc = 0;
  for (size_t i = 0; i < m->n_events && !rc; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    struct kid key = {e->proc, e->session, e->id, 0};
    const struct kid *hit = n ? bsearch(&key, ids, n, sizeof *ids, cmp_kid) : NULL;
    struct lens_kch_col *x = hit ? &c[hit->col] : NULL;
    if (!x || x->ev >= 0 || x->start_notice != e->start_mono_ns || x->thread != e->thread ||
        x->channel != e->p.kernel_ch.channel || x->stop_gpu != e->p.kernel_ch.stop_gpu_ns)
      rc = 1; /* not the event the column says: built whole after all */
    else x->ev = (int32_t)i;
  }
  free(ids);
  if (rc) {
    free(c);
    return rc;
  }
  free(m->kch_cols);
  m->kch_cols = c, m->n_kch_cols = n;
  return 0;
}

/* ---- The plan: which events chunks the window reads ----
 * From each file's INDEX chunks (window_plan.h), before the scan: the
 * chunks the window's events (and their ancestors, the types kept whole,
 * the file's earliest START, the twins of its steps) are in; the others
 * are never decoded, by the scan nor the load. What a full load would
 * count in them is known without decoding them only when the file is
 * clean there, so a chunk is left out only when its index says: every
 * START its records touch is in the file (no orphan among them), its
 * types are known ones (no bad START), and the file lost no START (no
 * ring_full drops: its STARTs are every sequence number of their range,
 * which gives their count for "keeps N of M"). Not planned (read whole, as
 * before): a group with CUPTI evidence or a probe trace, and every file
 * of a host one of whose files has no complete index or lost a START. */

struct plan_dec {
  struct win_file *f;
  int lie;             /* a chunk decoded disagrees with its index (a START of another slot, or out of its range) */
  struct lens_unpacker u;
  struct lens_wplan_rec *r;
  size_t cap;
};

/* One fixed record's fields (records.c's layouts; a short START's payload is not read here). */
static int fixed_rec(const uint8_t *p, size_t size, struct lens_wplan_rec *r) {
  struct lens_rec_hdr h;
  memcpy(&h, p, sizeof h);
  *r = (struct lens_wplan_rec){.kind = (uint8_t)h.kind, .type = (uint8_t)h.type};
  if (h.kind == LENS_REC_START && size >= sizeof(struct lens_rec_start)) {
    struct lens_rec_start s;
    memcpy(&s, p, sizeof s);
    r->id = s.id, r->ts = s.ts, r->parent = s.parent, r->flags = h.aux;
  } else if ((h.kind == LENS_REC_STOP || h.kind == LENS_REC_STATE) && size >= sizeof(struct lens_rec_stop)) {
    struct lens_rec_stop s;
    memcpy(&s, p, sizeof s);
    r->id = s.id, r->ts = s.ts;
  } else {
    return 0;
  }
  if (r->id & LENS_ID_REMOTE) r->flags |= LENS_START_F_REMOTE; /* as the scan reads it */
  return 1;
}

/* lens_wplan_decode_fn over the file's bytes: chunk k's records. */
static int plan_decode(void *ctx, size_t k, const struct lens_wplan_rec **out, size_t *n) {
  struct plan_dec *d = ctx;
  const struct win_file *f = d->f;
  const struct lens_chunk_ix *c = &f->ix.c[k];
  struct lens_chunk_hdr h;
  *n = 0;
  if (c->offset > f->size || f->size - c->offset < sizeof h) return -1;
  memcpy(&h, f->bytes + c->offset, sizeof h);
  const uint8_t *p = f->bytes + c->offset + sizeof h;
  if (h.payload_len > f->size - c->offset - sizeof h || h.seq != c->seq) return -1;
  uint64_t bad = 0;
  size_t m = 0;
  if (h.type == LENS_CHUNK_EVENTS_PACKED) {
    struct lens_packed_hdr ph;
    const uint8_t *body;
    size_t blen;
    int r = lens_unpack_body(&d->u, p, h.payload_len, &bad, &ph, &body, &blen);
    if (r <= 0) return -1;
    if (lens_vec_reserve((void **)&d->r, &d->cap, ph.count, sizeof *d->r)) return -1;
    struct lens_unpack_cur cur;
    struct lens_unpacked u = {0};
    lens_unpack_init(&cur, body, blen, ph.raw_bytes);
    for (uint32_t i = 0; i < ph.count && lens_unpack_next(&cur, &u); i++) {
      struct lens_wplan_rec *r = &d->r[m];
      if (!u.kind) {
        m += u.size >= sizeof(struct lens_rec_hdr) && fixed_rec(u.raw, u.size, r);
        continue;
      }
      *r = (struct lens_wplan_rec){.kind = (uint8_t)u.kind, .type = (uint8_t)u.type, .id = u.id, .ts = u.ts};
      if (u.kind == LENS_REC_START) {
        r->parent = u.parent, r->flags = u.aux;
        if (u.id & LENS_ID_REMOTE) r->flags |= LENS_START_F_REMOTE;
      }
      m++;
    }
  } else {
    struct lens_events_hdr eh;
    if (h.payload_len < sizeof eh) return -1;
    memcpy(&eh, p, sizeof eh);
    if (lens_vec_reserve((void **)&d->r, &d->cap, eh.count, sizeof *d->r)) return -1;
    size_t off = sizeof eh;
    for (uint32_t i = 0; i < eh.count && h.payload_len - off >= sizeof(struct lens_rec_hdr); i++) {
      struct lens_rec_hdr rh;
      memcpy(&rh, p + off, sizeof rh);
      if (rh.size < sizeof rh || (rh.size & 7) || rh.size > h.payload_len - off) break;
      m += fixed_rec(p + off, rh.size, &d->r[m]);
      off += rh.size;
    }
  }
  /* What the plan trusts of the index, checked where it decodes: a chunk's STARTs are of its slot and in its
   * range (a forged index could otherwise hide a START from the lookups). */
  for (size_t i = 0; i < m; i++) {
    const struct lens_wplan_rec *r = &d->r[i];
    if (r->kind == LENS_REC_START &&
        (LENS_ID_SLOT(r->id) != c->slot || LENS_ID_SEQ(r->id) < c->start_lo || LENS_ID_SEQ(r->id) > c->start_hi))
      d->lie = 1;
  }
  *out = d->r, *n = m;
  return 0;
}

/* The file's earliest nonzero START time and its STARTs at that time (the
 * scan's min_start and min_ord; ties: every one, the plan wants them all):
 * the chunks holding STARTs, by their first record's time, decoded until
 * the next one begins after the earliest found. 0, or -1 (no memory, or a
 * chunk that does not decode: not planned). */
struct by_first { uint64_t ts; uint32_t k; };
static int cmp_by_first(const void *a, const void *b) {
  const struct by_first *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->k > y->k) - (x->k < y->k);
}
static int first_start(struct win_file *f, struct plan_dec *d) {
  const struct lens_trace_index *ix = &f->ix;
  struct by_first *o = malloc((ix->n ? ix->n : 1) * sizeof *o);
  if (!o) return -1;
  size_t n = 0;
  for (size_t k = 0; k < ix->n; k++)
    if (ix->c[k].start_hi) o[n++] = (struct by_first){ix->c[k].first_ts, (uint32_t)k};
  qsort(o, n, sizeof *o, cmp_by_first);
  f->first_ts = UINT64_MAX;
  f->n_seeds = 0;
  int rc = 0;
  for (size_t i = 0; i < n && o[i].ts <= f->first_ts && !rc; i++) {
    const struct lens_wplan_rec *r;
    size_t m;
    if (plan_decode(d, o[i].k, &r, &m)) {
      rc = -1;
      break;
    }
    for (size_t j = 0; j < m; j++) {
      if (r[j].kind != LENS_REC_START || !r[j].ts || r[j].ts > f->first_ts) continue;
      if (r[j].ts < f->first_ts) f->first_ts = r[j].ts, f->n_seeds = 0;
      struct lens_wplan_seed *sd = LENS_VEC_PUSH(f, f->seeds, f->n_seeds, cap_seeds);
      if (!sd) {
        rc = -1;
        break;
      }
      *sd = (struct lens_wplan_seed){ix->c[o[i].k].session, r[j].id};
    }
  }
  free(o);
  return rc;
}

static void plan_wanted(void *ctx, uint32_t session, uint64_t id) {
  struct win_file *f = ctx;
  if (lens_idseq_put(&f->wanted, session, LENS_INDEX_KEY(id), 1)) f->can_plan = 0;
}

/* Whether chunk k may be left out: what a read of it counts is known
 * without it (above). */
static int clean_chunk(const struct win_file *f, size_t k) {
  const struct lens_chunk_ix *c = &f->ix.c[k];
  if (!(c->flags & LENS_CIX_INDEXED) || (c->flags & LENS_CIX_TOUCH_ANY)) return 0;
  if (c->types >> LENS_T_COUNT) return 0; /* a START of a type this reader does not know: a bad record */
  if (c->offset > f->size || f->size - c->offset < c->bytes) return 0; /* (not reached: indexed from these bytes) */
  for (uint32_t t = 0; t < c->n_touch; t++) { /* every sequence number it touches started in the file */
    const struct lens_index_touch *x = &f->ix.touch[c->touch + t];
    const struct lens_start_groups *sg = &f->sg;
    const struct lens_start_group *g = lens_start_groups_group(sg, c->session, x->slot);
    if (!g) return 0;
    uint64_t reach = x->seq_lo - 1; /* covered up to here (seq_lo >= 1: 0 is no event's) */
    if (!x->seq_lo) return 0;
    for (size_t i = 0; i < g->n && reach < x->seq_hi; i++) {
      const struct lens_chunk_ix *y = &f->ix.c[sg->order[g->first + i]];
      if (y->start_hi <= reach) continue;
      if (y->start_lo > reach + 1) return 0; /* a gap: a touched id no START has */
      reach = y->start_hi;
    }
    if (reach < x->seq_hi) return 0;
  }
  return 1;
}

static void plan_drop(struct win_file *f) {
  f->can_plan = f->planned = f->light = f->kch_cols_only = 0;
  free(f->unread), f->unread = NULL, f->n_unread = 0, f->unread_starts = 0, f->unread_types = 0;
  free(f->in), f->in = NULL;
  lens_idseq_free(&f->wanted);
}

static void plan_free_file(struct win_file *f) {
  plan_drop(f);
  lens_start_groups_free(&f->sg);
  lens_trace_index_free(&f->ix);
  free(f->seeds), f->seeds = NULL, f->n_seeds = f->cap_seeds = 0;
}

/* A host is planned whole or not at all (its origin is every file's). */
static void hosts_whole(struct lens_win *w, size_t n) {
  for (size_t k = 0; k < n; k++)
    for (size_t j = 0; j < n && w->f[k].can_plan; j++)
      if (!w->f[j].can_plan && !strcmp(w->f[j].ix.host, w->f[k].ix.host)) w->f[k].can_plan = 0;
}

/* Plans the window's files (the top of this part). Nothing planned leaves
 * every file read whole. Reads each file's bytes (kept for the scan). */
static void plan_files(struct lens_win *w, const char *const *paths, size_t n) {
  const struct lens_load_window *o = &w->o;
  if (o->no_plan || !(o->have_since || o->have_until) || o->cupti_given) return;
  char err[256];
  uint32_t types = 0;
  int any_unplannable = 0;
  for (size_t k = 0; k < n; k++) {
    struct win_file *f = &w->f[k];
    if (!f->bytes && lens_read_regular_file(paths[k], UINT64_MAX, "trace", &f->bytes, &f->size, err, sizeof err))
      goto none; /* the scan says why */
    if (lens_trace_index_read_mem(f->bytes, f->size, paths[k], &f->ix, err, sizeof err)) goto none;
    if (f->ix.payloads_checked) f->checked_bytes = f->bytes, f->checked_size = f->size;
    const struct lens_trace_index *ix = &f->ix;
    if (ix->producer == LENS_PRODUCER_SCHED || ix->cupti_chunks || (ix->session_flags & LENS_SESSION_F_CUPTI))
      goto none; /* starvation and CUPTI read every event: loaded whole anyway */
    f->can_plan = ix->has_session && ix->n && ix->indexed == ix->n && !ix->bad && !ix->ring_full;
    any_unplannable |= !f->can_plan;
    for (size_t c = 0; c < ix->n; c++) types |= ix->c[c].types;
  }
  hosts_whole(w, n);
  /* The types built whole: every event of them (the GPU clock maps are whole-run fits). */
  int keep_on = !o->keep_types_if || (types & o->keep_types_if) || any_unplannable;
  uint32_t need = keep_on ? o->keep_types | o->keep_types_parent : 0;
  /* The KernelCh read as columns (kch_columns) need not be events: the
   * chunks left out that hold some are read light, for the GPU table. */
  const uint32_t gpu_types = 1u << LENS_T_KERNEL_CH | 1u << LENS_T_COLL | 1u << LENS_T_P2P;
  int cols_only = o->kch_columns && keep_on && (o->keep_types_parent >> LENS_T_KERNEL_CH & 1) &&
                  !(o->keep_types >> LENS_T_KERNEL_CH & 1);
  if (cols_only) need &= ~(1u << LENS_T_KERNEL_CH);
  int light = cols_only && !o->kch_no_light; /* (else the caller has the rest from a memo) */
  struct plan_dec d = {0}; /* one decoder for every file (its zstd context made once) */
  for (size_t k = 0; k < n; k++) {
    struct win_file *f = &w->f[k];
    if (!f->can_plan) continue;
    d.f = f;
    d.lie = 0;
    if (lens_start_groups_make(&f->ix, &f->sg) || first_start(f, &d) || f->first_ts == UINT64_MAX || d.lie)
      f->can_plan = 0;
  }
  hosts_whole(w, n); /* again: a host's file found unplannable */
  uint64_t *origin = malloc((n ? n : 1) * sizeof *origin);
  if (!origin) {
    lens_unpacker_release(&d.u);
    free(d.r);
    goto none;
  }
  for (size_t k = 0; k < n; k++) { /* each host's origin: its files' earliest START (filter.c's) */
    origin[k] = UINT64_MAX;
    for (size_t j = 0; j < n && w->f[k].can_plan; j++)
      if (w->f[j].can_plan && !strcmp(w->f[j].ix.host, w->f[k].ix.host) && w->f[j].first_ts < origin[k])
        origin[k] = w->f[j].first_ts;
    if (o->absolute && origin[k] != UINT64_MAX) origin[k] = 0; /* the window is on MONOTONIC itself */
  }
  for (size_t k = 0; k < n; k++) {
    struct win_file *f = &w->f[k];
    if (!f->can_plan) continue;
    uint64_t og = origin[k];
    struct lens_wplan_opts po = {
        .since = o->have_since ? (og > UINT64_MAX - o->since_ns ? UINT64_MAX - 1 : og + o->since_ns) : 0,
        .until = UINT64_MAX,
        .need_types = need,
        .need_margin = UINT64_MAX,
        .seeds = f->seeds,
        .n_seeds = f->n_seeds,
        .step_siblings = 1,
        .wanted = plan_wanted,
        .wanted_ctx = f,
        .give_up_pct = 75};
    if (o->have_until && og < UINT64_MAX - 1 - o->until_ns) po.until = og + o->until_ns + 1; /* the rule's <= */
    if (po.since >= po.until) po.since = po.until - 1;
    struct lens_wplan_stats st;
    d.f = f;
    d.lie = 0;
    f->in = calloc(f->ix.n ? f->ix.n : 1, 1);
    int rc = f->in ? lens_wplan_make(&f->ix, &po, plan_decode, &d, f->in, &st) : -1;
    if (rc || !f->can_plan || d.lie) {
      plan_drop(f);
      continue;
    }
    for (size_t c = 0; c < f->ix.n; c++) {
      if (f->in[c] || (!clean_chunk(f, c) && (f->in[c] = 1))) continue;
      const struct lens_chunk_ix *x = &f->ix.c[c];
      struct win_unread *u = LENS_VEC_PUSH(f, f->unread, f->n_unread, cap_unread);
      if (!u) {
        plan_drop(f);
        break;
      }
      *u = (struct win_unread){x->offset, x->seq, x->session, x->slot, light && (x->types & gpu_types)};
      f->unread_starts += x->start_hi ? x->start_hi - x->start_lo + 1 : 0;
      f->unread_types |= x->types;
    }
    f->planned = f->n_unread > 0;
    f->light = f->planned && light;
    f->kch_cols_only = f->planned && cols_only;
    if (!f->planned) plan_drop(f);
  }
  free(origin);
  lens_unpacker_release(&d.u);
  free(d.r);
  return;
none:
  for (size_t k = 0; k < n; k++) plan_free_file(&w->f[k]);
}

/* The light read of a chunk left out whose KernelCh (and Coll/P2p
 * launches) the GPU table needs: decoded, and only those records kept
 * (table_start, table_rec); nothing else of it is counted or built. */
static int light_rec(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, size_t size) {
  struct lens_win *w = b->win;
  struct lens_rec_hdr h;
  if (size < sizeof h) return 0;
  memcpy(&h, r, sizeof h);
  if (h.kind == LENS_REC_START && size >= sizeof(struct lens_rec_start)) {
    struct lens_rec_start st;
    memcpy(&st, r, sizeof st);
    return table_start(w, session, (uint32_t)b->chunk, thread, &st, r + sizeof st, size - sizeof st);
  }
  if ((h.kind == LENS_REC_STOP || h.kind == LENS_REC_STATE) && size >= sizeof(struct lens_rec_stop)) {
    struct lens_rec_state q = {0};
    memcpy(&q, r, size < sizeof q ? size : sizeof q);
    if (LENS_ID_TYPE(q.id) != LENS_T_KERNEL_CH) return 0;
    return table_rec(w, session, (uint32_t)b->chunk, h.kind, q.id, q.ts, h.aux, q.arg, q.has_args);
  }
  return 0;
}

static int light_read(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len,
                      int32_t thread) {
  struct lens_win *w = b->win;
  if (h->type == LENS_CHUNK_EVENTS) {
    struct lens_events_hdr eh;
    if (len < sizeof eh) return 0;
    memcpy(&eh, p, sizeof eh);
    size_t off = sizeof eh;
    for (uint32_t i = 0; i < eh.count && len - off >= sizeof(struct lens_rec_hdr); i++) {
      struct lens_rec_hdr rh;
      memcpy(&rh, p + off, sizeof rh);
      if (rh.size < sizeof rh || (rh.size & 7) || rh.size > len - off) break;
      if (light_rec(b, h->session, thread, p + off, rh.size)) return lens_builder_oom(b);
      off += rh.size;
    }
    return 0;
  }
  uint64_t bad = 0; /* (a clean chunk: counted nowhere) */
  struct lens_packed_hdr ph;
  const uint8_t *body;
  size_t blen;
  int r = lens_unpack_body(&b->unpacker, p, len, &bad, &ph, &body, &blen);
  if (r <= 0) return r < 0 ? lens_builder_oom(b) : 0;
  struct lens_unpack_cur c;
  struct lens_unpacked u = {0};
  lens_unpack_init(&c, body, blen, ph.raw_bytes);
  for (uint32_t n = 0; n < ph.count && lens_unpack_next(&c, &u); n++) {
    int rc = 0;
    if (!u.kind) {
      rc = light_rec(b, h->session, thread, u.raw, u.size);
    } else if (u.kind == LENS_REC_START) {
      if (u.type != LENS_T_KERNEL_CH && u.type != LENS_T_COLL && u.type != LENS_T_P2P) continue;
      struct lens_rec_start st = {.h = {.size = (uint16_t)u.size, .kind = LENS_REC_START, .type = (uint8_t)u.type,
                                        .aux = u.aux},
                                  .id = u.id, .parent = u.parent, .ts = u.ts};
      rc = table_start(w, h->session, (uint32_t)b->chunk, thread, &st, (const uint8_t *)u.payload, u.pbytes);
    } else if (LENS_ID_TYPE(u.id) == LENS_T_KERNEL_CH) {
      rc = table_rec(w, h->session, (uint32_t)b->chunk, u.kind, u.id, u.ts, u.aux, u.arg, u.has_args);
    }
    if (rc) return lens_builder_oom(b);
  }
  return 0;
}

/* The scan's and the load's hook for every events chunk (load.c): 1 when
 * the plan leaves it out (its thread is found as a read finds it), 0 to
 * read it, -1 out of memory. */
int lens_win_chunk_unread(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *payload,
                          uint32_t len, uint64_t offset) {
  struct win_file *f = &b->win->f[b->win_file];
  if (!f->planned) return 0;
  while (f->unread_next < f->n_unread && f->unread[f->unread_next].offset < offset) f->unread_next++;
  if (f->unread_next == f->n_unread || f->unread[f->unread_next].offset != offset) return 0;
  const struct win_unread *u = &f->unread[f->unread_next++];
  if (u->seq != h->seq || u->session != h->session) return 0; /* not the chunk the index saw: read */
  int32_t thread = lens_chunk_thread(b, h->session, u->slot);
  if (thread < 0) return lens_builder_oom(b);
  if (u->light && b->win_mode == LENS_WIN_SCAN && light_read(b, h, payload, len, thread)) return -1;
  return 1;
}

struct lens_model *lens_model_load_window(const char *const *paths, size_t n_paths, uint32_t flags,
                                          struct lens_load_window *win, char *err, size_t err_len,
                                          void (*progress)(uint64_t done, uint64_t total)) {
  /* a window may keep single steps: folded only when their caller counts
   * the ones it keeps (LENS_LOAD_FOLD_LATER) */
  if (!(flags & LENS_LOAD_FOLD_LATER)) flags &= ~LENS_LOAD_FOLD_STEPS;
  if (err && err_len) err[0] = 0;
  struct lens_win w = {.o = *win, .cols = win->kch_columns};
  int again = 0; /* the KernelCh columns did not fit the events built: loaded again, KernelCh built whole */
  win->chunks_skipped = win->chunks_unread = 0;
  size_t *keep = malloc((n_paths ? n_paths : 1) * sizeof *keep), n_keep = 0, n_dups = 0;
  struct lens_same_trace *dups = calloc(n_paths ? n_paths : 1, sizeof *dups);
  const char **kp = malloc((n_paths ? n_paths : 1) * sizeof *kp);
  struct lens_model *m = NULL;
  if (!keep || !dups || !kp || lens_same_trace_select(paths, n_paths, keep, &n_keep, dups, &n_dups)) goto oom;
  for (size_t k = 0; k < n_keep; k++) kp[k] = paths[keep[k]];
  if (!(w.f = calloc(n_keep ? n_keep : 1, sizeof *w.f))) goto oom;
  w.n = n_keep;
  for (size_t k = 0; k < n_keep; k++) w.f[k].min_start = w.f[k].min_stop = UINT64_MAX;
  if (!n_keep) { /* the load says why */
    m = lens_load_files(paths, n_paths, flags, NULL, LENS_WIN_OFF, err, err_len, progress);
    goto out;
  }
  plan_files(&w, kp, n_keep); /* the chunks it reads */
  /* The one scan: each file's origin evidence and its columns. */
  struct lens_model *scanned = lens_load_files(kp, n_keep, flags, &w, LENS_WIN_SCAN, err, err_len, NULL);
  if (!scanned) goto out;
  lens_model_free(scanned);
  free(w.p), free(w.pend_of), free(w.cw), free(w.cbits); /* the scan's scratch */
  w.p = NULL, w.pend_of = NULL, w.cw = NULL, w.cbits = NULL;
  w.cap_p = w.cap_pend_of = w.cap_cw = w.cap_cbits = 0;
  /* Each file's origin: the earliest of its host's files (filter.c's). */
  for (size_t k = 0; k < n_keep; k++) {
    w.f[k].origin = UINT64_MAX;
    if (w.f[k].gpu || (w.f[k].unread_types & w.o.keep_types_if)) w.keep_on = 1;
    if (!w.f[k].has_proc) continue;
    for (size_t j = 0; j < n_keep; j++)
      if (w.f[j].has_proc && !strcmp(w.f[j].host, w.f[k].host) && w.f[j].min_start < w.f[k].origin)
        w.f[k].origin = w.f[j].min_start;
    if (w.o.absolute && w.f[k].origin != UINT64_MAX) w.f[k].origin = 0;
  }
  if (!w.o.keep_types_if) w.keep_on = 1;
  int cupti = w.o.cupti_given;
  for (size_t k = 0; k < n_keep; k++) cupti |= w.f[k].cupti;
  if (w.keep_on) w.keep = w.o.keep_types | (cupti ? w.o.keep_types_cupti : 0), w.keep_parent = w.o.keep_types_parent;
  /* The KernelCh the caller reads as columns are not built whole (with
   * CUPTI evidence they are: its join walks their events). */
  int use_cols = w.cols && !cupti && (w.keep_parent >> LENS_T_KERNEL_CH & 1);
  if (use_cols) w.keep_parent &= ~(1u << LENS_T_KERNEL_CH);
  /* A light file's KernelCh are columns only: without them (a file gave a
   * reason against, or too many records) it is read again without plans. */
  for (size_t k = 0; k < n_keep; k++)
    if ((w.f[k].kch_cols_only && (!use_cols || !w.keep_on)) || (w.f[k].planned && w.too_many)) w.replan = 1;
  if (w.replan) goto out;
  /* A window that holds every START and every stop (--since 0, an --until
   * past the end): nothing to decide, the load builds all. */
  w.all = 1;
  for (size_t k = 0; k < n_keep; k++) {
    const struct win_file *f = &w.f[k];
    if (f->origin == UINT64_MAX) continue;
    if (w.o.have_until && f->max_start > f->origin + w.o.until_ns) w.all = 0;
    if (w.o.have_since && f->min_stop != UINT64_MAX && f->min_stop < f->origin + w.o.since_ns) w.all = 0;
  }
  for (size_t k = 0; k < n_keep; k++) w.all &= !w.f[k].planned; /* what it did not read is not all */
  if (w.too_many) w.all = 1;
  for (size_t k = 0; k < n_keep && !w.all; k++)
    if (w.f[k].has_proc && decide(&w, &w.f[k])) goto oom;
  /* A process asked for PXN parents after its files were decided: again,
   * until no file is asked for anything new (the asks only grow). A chain
   * of PXN parents deeper than any NCCL makes (crafted input) would take a
   * round a link: past 16 rounds the load builds every event instead. */
  for (int again = 1, rounds = 0; again && !w.all; rounds++) {
    again = 0;
    if (rounds == 16) {
      w.all = 1;
      break;
    }
    for (size_t k = 0; k < n_keep; k++) {
      struct win_file *f = &w.f[k];
      int asked = 0;
      for (size_t r = f->req_seen; r < w.n_rq && !asked; r++) asked = f->has_proc && w.rq[r].pid == f->pid;
      if (!asked) {
        f->req_seen = w.n_rq;
        continue;
      }
      if (decide(&w, f)) goto oom;
      again = 1;
    }
  }
  free_columns(&w);
  free(w.t), free(w.rq);
  w.t = NULL, w.rq = NULL;
  w.cap_t = w.cap_rq = w.n_rq = 0;
  lens_hash_free(&w.rq_set);
  if (w.replan) goto out; /* loaded again below, without plans */
  uint64_t total = 0, unread = 0;
  for (size_t k = 0; k < n_keep; k++) total += w.f[k].n_starts + w.f[k].unread_starts, unread += w.f[k].n_unread;
  win->events_total = total;
  win->chunks_unread = unread;
  m = lens_load_files(paths, n_paths, flags, &w, LENS_WIN_BUILD, err, err_len, progress);
  win->chunks_skipped = w.skipped;
  if (m && use_cols && !w.all) { /* (all: every KernelCh built, the analysis reads the events) */
    int rc = kch_give(&w, m);
    if (rc) lens_model_free(m), m = NULL;
    if (rc < 0) goto oom;
    again = rc > 0; /* not reached: the columns name every KernelCh built; if not, built whole after all */
  }
  goto out;
oom:
  if (err && err_len) snprintf(err, err_len, "out of memory while loading traces");
out:
  win_free(&w);
  free(keep);
  free(dups);
  free(kp);
  if (w.replan && !m) { /* a decision needed an event a plan left out (a PXN parent): without plans */
    struct lens_load_window whole = *win;
    whole.no_plan = 1;
    m = lens_model_load_window(paths, n_paths, flags, &whole, err, err_len, progress);
    whole.no_plan = win->no_plan;
    *win = whole;
    win->replanned = 1;
    return m;
  }
  if (again) {
    struct lens_load_window whole = *win;
    whole.kch_columns = 0;
    m = lens_model_load_window(paths, n_paths, flags, &whole, err, err_len, progress);
    *win = whole;
    win->kch_columns = 1;
    win->columns_refused = 1;
  }
  return m;
}
