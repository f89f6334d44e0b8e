#define _GNU_SOURCE
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "blobq.h"
#include "lens_pack.h"
#include "lens_index.h"
#include "lens_pack_chunk.h"
#include "clock.h"
#include "clock_evidence.h"
#include "counters.h"
#include "hooks.h"
#include "live.h"
#include "log.h"
#include "regdir.h"
#include "registry_file.h"
#include "recorder.h"
#include "ring.h"
#include "strtab.h"
#include "trace_file.h"
#include "tslot.h"
#include "watchdog.h"

#ifdef MADV_POPULATE_WRITE
#define LENS_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define LENS_MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static int g_cv_ok;
static pthread_t g_thr;
static int g_running; /* the thread exists (under g_mu) */
static uint32_t g_session;
static uint32_t g_period_us;
static uint64_t g_events; /* this session */
static struct lens_drops g_last_drops;
static int g_compress = LENS_COMPRESS_DEFAULT; /* NCCL_LENS_COMPRESS of the open session (config.h) */
static int g_zstd_level = LENS_ZSTD_LEVEL_DEFAULT; /* NCCL_LENS_ZSTD_LEVEL of the open session */

/* ---- records: ring form -> file form ---- */

static inline void intern_field(lens_str_t *f) { *f = lens_strtab_intern(*f); }

/* The payload's string fields hold NCCL pointers in the ring; ids on disk. */
static void intern_payload(unsigned type, void *p) {
  switch (type) {
  case LENS_T_COLL_API: {
    struct lens_p_coll_api *x = p;
    intern_field(&x->func);
    intern_field(&x->datatype);
    break;
  }
  case LENS_T_P2P_API: {
    struct lens_p_p2p_api *x = p;
    intern_field(&x->func);
    intern_field(&x->datatype);
    break;
  }
  case LENS_T_COLL: {
    struct lens_p_coll *x = p;
    intern_field(&x->func);
    intern_field(&x->datatype);
    intern_field(&x->algo);
    intern_field(&x->proto);
    intern_field(&x->kernel_variant);
    break;
  }
  case LENS_T_P2P: {
    struct lens_p_p2p *x = p;
    intern_field(&x->func);
    intern_field(&x->datatype);
    break;
  }
  case LENS_T_KERNEL_PHASE: {
    struct lens_p_kernel_phase *x = p;
    intern_field(&x->name);
    break;
  }
  case LENS_T_CE_COLL: {
    struct lens_p_ce_coll *x = p;
    intern_field(&x->func);
    intern_field(&x->datatype);
    intern_field(&x->sync_strategy);
    break;
  }
  default: break;
  }
}

static void flush_strings(void) {
  uint32_t slen;
  const void *sp = lens_strtab_pending(&slen);
  if (sp) {
    lens_tf_write(LENS_CHUNK_STRINGS, sp, slen);
    lens_strtab_clear_pending();
  }
}

static void frame_write_slot(uint32_t slot); /* compact chunks, below */

static void announce(struct lens_tslot *s) {
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
  uint32_t roles = atomic_load_explicit(&s->roles, memory_order_relaxed);
  if (roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER)) roles &= ~(uint32_t)LENS_ROLE_NET; /* NET: NetPlugin-only threads */
  int32_t rank = atomic_load_explicit(&s->proxy_rank, memory_order_relaxed);
  uint32_t comm = atomic_load_explicit(&s->proxy_comm_index, memory_order_relaxed);
  int fresh = !s->announced || s->ann_gen != gen || s->ann_session != g_session;
  if (!fresh && s->ann_roles == roles && s->ann_rank == rank && s->ann_comm == comm) return;
  if (fresh) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", s->tid);
    memset(s->ann_name, 0, sizeof s->ann_name);
    FILE *f = fopen(path, "re");
    if (f) {
      if (fgets(s->ann_name, sizeof s->ann_name, f)) s->ann_name[strcspn(s->ann_name, "\n")] = 0;
      fclose(f);
    }
    snprintf(path, sizeof path, "/proc/self/task/%u/status", s->tid);
    s->ann_outer_tid = lens_outer_id(path, s->tid);
  }
  struct lens_thread_rec t;
  memset(&t, 0, sizeof t);
  t.slot = s->index;
  t.tid = s->tid;
  t.outer_tid = s->ann_outer_tid;
  t.roles = roles;
  t.proxy_rank = rank;
  t.proxy_comm_index = comm;
  t.first_mono_ns = lens_clock_to_mono(s->first_raw);
  memcpy(t.name, s->ann_name, sizeof t.name);
  t.name[sizeof t.name - 1] = 0;
  frame_write_slot(s->index); /* the records of the slot's previous owner or role go first */
  lens_tf_write(LENS_CHUNK_THREAD, &t, sizeof t);
  s->announced = 1;
  s->ann_gen = gen;
  s->ann_session = g_session;
  s->ann_roles = roles;
  s->ann_rank = rank;
  s->ann_comm = comm;
  atomic_store_explicit(&lens_slots.changed, 1, memory_order_relaxed);
}

/* Converts one published record in place to its file form. The producer
 * never touches bytes between tail and head, and hooks saw the record
 * before it was published (record.h), so the writer owns it now. */
static inline void convert_in_place(struct lens_rec_hdr *h) {
  switch (h->kind) {
  case LENS_REC_START: {
    struct lens_rec_start *r = (struct lens_rec_start *)h;
    r->ts = lens_clock_to_mono(r->ts);
    if (h->type == LENS_T_COLL_API || h->type == LENS_T_P2P_API || h->type == LENS_T_COLL || h->type == LENS_T_P2P ||
        h->type == LENS_T_CE_COLL || h->type == LENS_T_KERNEL_PHASE)
      intern_payload(h->type, r + 1);
    break;
  }
  case LENS_REC_STOP: ((struct lens_rec_stop *)h)->ts = lens_clock_to_mono(((struct lens_rec_stop *)h)->ts); break;
  case LENS_REC_STATE: ((struct lens_rec_state *)h)->ts = lens_clock_to_mono(((struct lens_rec_state *)h)->ts); break;
  default: break;
  }
}

/* ---- compact chunks (NCCL_LENS_COMPRESS=packed|zstd) ----
 * The writer packs the records as it converts them (they are in cache)
 * into its slot's open frame, and writes the frame as one EVENTS_PACKED
 * chunk (one zstd frame) once it holds LENS_FRAME_STREAM_BYTES of stream:
 * a frame a writer pass would be a frame of a few hundred records, which
 * compresses and decodes worse (lens_pack_chunk.h). Frames that fill slowly
 * are written every LENS_FRAME_MAX_AGE_MS (writer_main), and every open
 * frame is written before anything that must follow its records (a THREAD
 * chunk of its slot, a COMM or COMM_FINI, a dump, the end of the session).
 * A frame costs about 100 KiB (LENS_FRAME_CAP), made for each thread slot
 * that writes records (at most NCCL_LENS_MAX_THREADS; each has a 4 MiB
 * ring). Writer thread only: the frames, buffers and the zstd context are
 * its own. */
struct frame {
  struct lens_pack_enc enc;
  struct lens_index_acc idx; /* what the frame holds, for its INDEX chunk */
  uint32_t slot;
  uint8_t buf[]; /* LENS_FRAME_CAP */
};
#define LENS_RUN_SLOTS 256 /* events with an open run per pass (floods, below); a collision ends the older run early */
/* Room for a frame below its size that takes one more record and then every
 * open run (a record packs to at most 2 * size + 16 bytes, lens_pack.c). */
#define LENS_FRAME_CAP                                           \
  (LENS_FRAME_STREAM_BYTES + 2 * LENS_SCRATCH_BYTES + 16 +         \
   LENS_RUN_SLOTS * (2 * sizeof(struct lens_rec_state_run) + 16) + 64)
static struct frame **g_frames; /* by slot index, made at the slot's first packed record */
static uint32_t g_frames_n;
static int g_frames_once;
static struct lens_pack_enc *g_enc; /* the frame records are packed into (pack_collapsing) */
static uint8_t *g_zbuf;
static size_t g_zcap;
static ZSTD_CCtx *g_zctx;
static int g_zstd_once;

/* ---- the index (LENS_CHUNK_INDEX, common/lens_index.h) ----
 * After each events chunk the writer writes what it holds and, every
 * LENS_INDEX_OPEN_EVERY_MS, the process's open events, so that a reader can
 * decode a window of a long run without the rest (docs/trace-format.md,
 * "The index"). Fed every record as it is converted; not in the recorder's
 * store (a dump is read whole). Without memory for its table the writer
 * logs once and writes no index: readers then decode every chunk, as for
 * traces of older plugins. */
static struct lens_openset g_openset;
static int g_index_once;
static uint8_t *g_ibuf; /* the open set's bytes, lens_openset_bound */
static size_t g_ibuf_cap;
static struct lens_index_acc g_eidx; /* NCCL_LENS_COMPRESS=none: the EVENTS chunk being built */

static int index_on(void) {
  if (lens_tf_in_store()) return 0;
  if (g_openset.t) return 1;
  if (g_index_once || !lens_slots.n) return 0;
  g_index_once = 1;
  if (lens_openset_init(&g_openset, lens_slots.n) == 0) {
    g_ibuf_cap = lens_openset_bound(&g_openset);
    g_ibuf = malloc(g_ibuf_cap);
    if (g_ibuf) return 1;
    lens_openset_free(&g_openset);
  }
  lens_log(LENS_LOG_WARN, "nccl-lens: no memory for the trace's index; its chunks are written without one");
  return 0;
}

/* The INDEX of the events chunk just written, records its count. */
static void index_write(struct lens_index_acc *a, uint32_t records) {
  if (!a->h.records || !g_openset.t) return;
  uint64_t now = lens_mono_ns();
  size_t open_len = lens_openset_due(&g_openset, now) ? lens_openset_write(&g_openset, now, g_ibuf, g_ibuf_cap) : 0;
  uint32_t len;
  const void *p = lens_index_payload(a, records, open_len != 0, &len);
  struct iovec parts[2] = {{(void *)p, len}, {g_ibuf, open_len}};
  lens_tf_write_parts(LENS_CHUNK_INDEX, parts, open_len ? 2 : 1);
}

/* The slot's frame, NULL when it cannot be had (no memory: the slot's
 * records are then written as fixed EVENTS chunks, as NCCL_LENS_COMPRESS=none). */
static struct frame *frame_of(uint32_t slot) {
  if (!g_frames) {
    if (g_frames_once || !lens_slots.n) return NULL;
    g_frames = calloc(lens_slots.n, sizeof *g_frames);
    if (!g_frames) {
      g_frames_once = 1;
      return NULL;
    }
    g_frames_n = lens_slots.n;
  }
  if (slot >= g_frames_n) return NULL;
  if (!g_frames[slot]) {
    struct frame *f = malloc(sizeof *f + LENS_FRAME_CAP);
    if (!f) return NULL;
    f->slot = slot;
    lens_pack_begin(&f->enc, f->buf, LENS_FRAME_CAP);
    lens_index_begin(&f->idx, slot);
    g_frames[slot] = f;
  }
  return g_frames[slot];
}

/* Writes the frame when it holds records (as a packed chunk, with zstd when
 * that is smaller) and starts it again. -1 when it could not be written
 * (counted by trace_file.c). */
static int frame_write(struct frame *f) {
  if (!f || !f->enc.count) return 0;
  if (g_compress == LENS_COMPRESS_ZSTD && !g_zctx && !g_zstd_once) {
    g_zctx = ZSTD_createCCtx();
    g_zcap = ZSTD_compressBound(LENS_FRAME_CAP);
    g_zbuf = g_zctx ? malloc(g_zcap) : NULL;
    if (!g_zbuf) {
      g_zstd_once = 1;
      lens_log(LENS_LOG_WARN, "nccl-lens: cannot set up zstd; writing packed chunks without it");
      ZSTD_freeCCtx(g_zctx);
      g_zctx = NULL;
    }
  }
  flush_strings(); /* the strings these records use go first */
  struct lens_packed_hdr ph;
  const void *body;
  size_t body_len;
  lens_pack_chunk(&f->enc, f->buf, f->slot, g_compress == LENS_COMPRESS_ZSTD ? g_zctx : NULL, g_zstd_level, g_zbuf,
                  g_zcap, &ph, &body, &body_len);
  struct iovec parts[2] = {{&ph, sizeof ph}, {(void *)body, body_len}};
  int rc = lens_tf_write_parts(LENS_CHUNK_EVENTS_PACKED, parts, 2);
  if (rc == 0) {
    g_events += f->enc.count;
    index_write(&f->idx, f->enc.count);
  }
  lens_pack_begin(&f->enc, f->buf, LENS_FRAME_CAP);
  lens_index_begin(&f->idx, f->slot);
  return rc;
}

static void frame_write_slot(uint32_t slot) {
  if (g_frames && slot < g_frames_n) frame_write(g_frames[slot]);
}

static void frames_write_all(void) {
  for (uint32_t i = 0; g_frames && i < g_frames_n; i++) frame_write(g_frames[i]);
}

/* A fork's child: the open frames hold the parent's records. */
static void frames_forget(void) {
  for (uint32_t i = 0; g_frames && i < g_frames_n; i++)
    if (g_frames[i]) {
      lens_pack_begin(&g_frames[i]->enc, g_frames[i]->buf, LENS_FRAME_CAP);
      lens_index_begin(&g_frames[i]->idx, g_frames[i]->slot);
    }
  lens_openset_reset(&g_openset); /* the parent's events */
}

/* ---- floods: runs of identical STATEs (compact modes only) ----
 * NCCL records SendPeerWait on a step on every pass of its proxy loop while
 * the send waits for the peer's credit (net.cc sendProxyProgress: isend()
 * gives no request, the loop comes round again): millions of identical
 * records a second in a hang. The writer keeps the first STATE of a run as
 * it is and folds the repeats that follow it on the same event (same state,
 * arg and has_args) into one lens_rec_state_run, written when the run ends
 * (another STATE or the STOP of that event) or at the end of the chunk.
 * Runs never cross chunks (nor a writer pass): each chunk still decodes
 * alone. Off the hot path: NCCL's threads write every record into the ring
 * as before. */
/* A run holds records no further apart than this (else a new one starts):
 * a run is the proxy polling on, and its record says the longest pause in
 * it (max_gap_ns), so the starvation analysis knows how far apart its
 * passes were at most. */
#define LENS_RUN_MAX_GAP_NS 1000000ull
struct run_ent {
  uint64_t id, arg, first_ts, last_ts;
  uint32_t aux, has_args, gen, repeats, max_gap;
  uint8_t type;
};
static struct run_ent g_runs[LENS_RUN_SLOTS];
static uint16_t g_run_used[LENS_RUN_SLOTS];
static uint32_t g_run_nused, g_run_gen = 1; /* an entry is live when its gen is the chunk's */

static inline struct run_ent *run_slot(uint64_t id) {
  return &g_runs[(id * 0x9E3779B97F4A7C15ull) >> 56]; /* 8 bits */
}

static void run_flush(struct run_ent *e) {
  if (!e->repeats) return;
  struct lens_rec_state_run r;
  memset(&r, 0, sizeof r);
  r.s.h = (struct lens_rec_hdr){sizeof r, LENS_REC_STATE, e->type, e->aux};
  r.s.id = e->id;
  r.s.ts = e->first_ts;
  r.s.arg = e->arg;
  r.s.has_args = e->has_args;
  r.last_ts = e->last_ts;
  r.repeats = e->repeats;
  r.max_gap_ns = e->max_gap;
  lens_pack_rec(g_enc, &r.s.h);
  e->repeats = 0;
}

/* Packs one converted record, folding it into its event's run when it
 * repeats that event's previous STATE. */
static inline void pack_collapsing(const struct lens_rec_hdr *h) {
  if (h->kind == LENS_REC_STATE && h->size == sizeof(struct lens_rec_state)) {
    const struct lens_rec_state *r = (const void *)h;
    struct run_ent *e = run_slot(r->id);
    if (e->gen == g_run_gen) {
      if (e->id == r->id && e->aux == h->aux && e->arg == r->arg && e->has_args == r->has_args && !r->reserved &&
          e->type == h->type && e->repeats < UINT32_MAX && r->ts - e->last_ts <= LENS_RUN_MAX_GAP_NS) {
        uint64_t gap = r->ts - e->last_ts;
        if (!e->repeats) {
          e->first_ts = r->ts;
          e->max_gap = 0;
        }
        if (gap > e->max_gap) e->max_gap = (uint32_t)gap; /* at most LENS_RUN_MAX_GAP_NS */
        e->repeats++;
        e->last_ts = r->ts;
        return;
      }
      run_flush(e); /* this event's run ends, or another event's (collision) */
    } else {
      g_run_used[g_run_nused++] = (uint16_t)(e - g_runs);
    }
    *e = (struct run_ent){r->id, r->arg, 0, r->ts, h->aux, r->has_args, g_run_gen, 0, 0, h->type};
  } else if (h->kind == LENS_REC_STOP) {
    const struct lens_rec_stop *r = (const void *)h;
    struct run_ent *e = run_slot(r->id);
    if (e->gen == g_run_gen && e->id == r->id) {
      run_flush(e); /* before the STOP: an event's records stay in order */
      e->id = 0;
    }
  }
  lens_pack_rec(g_enc, h);
}

/* The chunk ends: every open run is written, the table empties. */
static void runs_end_chunk(void) {
  for (uint32_t i = 0; i < g_run_nused; i++) {
    struct run_ent *e = &g_runs[g_run_used[i]];
    if (e->gen == g_run_gen) run_flush(e);
  }
  g_run_nused = 0;
  if (++g_run_gen == 0) g_run_gen = 1;
}

/* How far ahead of the record being converted to prefetch: the producer's
 * core wrote these lines a moment ago, and fetching them one at a time
 * costs a cross-core round trip each. */
#define LENS_DRAIN_PREFETCH 1024

/* Drains one ring; returns bytes consumed. Records are converted in place
 * and written straight from the ring: an EVENTS chunk is its 8-byte header
 * plus one span of the ring, or two when the records wrap (the PAD at the
 * end of the buffer is left out; a record may also end exactly at the end,
 * with no PAD). tail moves only after the chunk is
 * written, so the producer cannot reuse bytes the kernel has yet to copy. */
static uint64_t drain_slot(struct lens_tslot *s) {
  uint64_t head = atomic_load_explicit(&s->prod.head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
  if (head == tail) return 0;
  uint64_t start = tail, cap = s->ring.mask + 1;
  uint8_t *buf = s->ring.buf;
  /* A chunk never covers more than half the ring, so it meets at most one
   * wrap (PAD) and needs at most two spans. */
  uint32_t limit = LENS_EVENTS_CHUNK_MAX < cap / 2 ? LENS_EVENTS_CHUNK_MAX : (uint32_t)(cap / 2);
  int corrupt = 0;
  /* compact modes: the records go into the slot's open frame (copied, so the
   * ring's bytes are free as soon as they are packed) */
  struct frame *f = g_compress ? frame_of(s->index) : NULL;
  g_enc = f ? &f->enc : NULL;
  int indexed = index_on();
  while (tail < head && !corrupt) {
    struct lens_events_hdr eh = {s->index, 0};
    if (!f) lens_index_begin(&g_eidx, s->index);
    struct iovec parts[3] = {{&eh, sizeof eh}};
    int nparts = 1;
    uint32_t bytes = sizeof eh;
    uint64_t span = tail; /* start of the span being built */
    while (tail < head) {
      uint64_t off = tail & s->ring.mask;
      __builtin_prefetch(buf + ((off + LENS_DRAIN_PREFETCH) & s->ring.mask), 1, 3);
      struct lens_rec_hdr *h = (struct lens_rec_hdr *)(buf + off);
      if (off == 0 && tail > span) {
        /* the last record ended exactly at the end of the buffer (no PAD):
         * the span stops there too */
        if (nparts == 2) break;
        parts[nparts++] = (struct iovec){buf + (span & s->ring.mask), (size_t)(tail - span)};
        span = tail;
      }
      if (h->kind == LENS_REC_PAD) {
        /* A PAD is always published with the record after it, at the wrap;
         * one that does not end before head is not ours: stop here rather
         * than move tail past head (the producer would see a full ring for
         * ever). */
        if (tail + (cap - off) >= head) {
          corrupt = 1;
          break;
        }
        if (nparts == 2 && tail > span) break; /* second wrap: next chunk (cannot happen, see limit) */
        if (tail > span) parts[nparts++] = (struct iovec){buf + (span & s->ring.mask), (size_t)(tail - span)};
        tail += cap - off;
        span = tail;
        continue;
      }
      uint32_t size = h->size;
      if (size < sizeof(struct lens_rec_hdr) || (size & 7) || size > LENS_SCRATCH_BYTES || tail + size > head) {
        corrupt = 1; /* cannot happen with a well-behaved producer; never loop on it */
        break;
      }
      if (bytes + size > limit || !lens_strtab_room()) break;
      if (f && (lens_pack_len(&f->enc, f->buf) >= LENS_FRAME_STREAM_BYTES ||
                f->enc.raw_bytes + size > LENS_FRAME_RAW_MAX)) {
        runs_end_chunk(); /* a run stays in the frame of the STATE it repeats */
        frame_write(f);   /* below its size the frame has room for any record (LENS_FRAME_CAP) */
      }
      lens_live_on_record(h); /* live aggregates (live_agg.c): ring form, before conversion */
      if (lens_rec_on()) lens_wd_observe(h, h); /* recorder mode: the hang watchdog's view */
      convert_in_place(h);
      if (indexed) {
        lens_openset_add(&g_openset, h);
        lens_index_add(f ? &f->idx : &g_eidx, h);
      }
      if (f) pack_collapsing(h);
      bytes += size;
      eh.count++;
      tail += size;
    }
    if (tail > span) parts[nparts++] = (struct iovec){buf + (span & s->ring.mask), (size_t)(tail - span)};
    if (f) {
      runs_end_chunk(); /* the run table is the writer's, not the slot's: its runs end with the pass */
      if (lens_pack_len(&f->enc, f->buf) >= LENS_FRAME_STREAM_BYTES) frame_write(f);
      flush_strings(); /* the strings of the records still in the frame go before it */
    } else {
      flush_strings(); /* the strings these records use go first */
      if (eh.count && lens_tf_write_parts(LENS_CHUNK_EVENTS, parts, nparts) == 0) {
        g_events += eh.count;
        if (indexed) index_write(&g_eidx, eh.count);
      }
    }
    atomic_store_explicit(&s->tail, tail, memory_order_release);
  }
  if (corrupt) {
    tail = head;
    atomic_store_explicit(&s->tail, tail, memory_order_release);
  }
  return tail - start;
}

/* A busy ring's pages are faulted in by the writer, so its owner's first
 * pass over the ring does not take a page fault every 4 KiB on NCCL's
 * thread (the pages were given back at the last finalize, or never
 * touched). Only rings with real traffic: an idle thread's ring stays
 * uncommitted. The contents are not changed, so this is safe while the
 * owner writes. Kernels before 5.14 refuse it; the owner then faults the
 * pages in itself, as before. Writer-private: one token per slot. */
static uint64_t *g_populated; /* (session + 1) << 32 | gen of the owner whose ring was populated */
static uint32_t g_populated_n;

static void populate_ring(struct lens_tslot *s) {
  if (!g_populated || s->index >= g_populated_n) return;
  uint64_t token = ((uint64_t)(g_session + 1) << 32) | atomic_load_explicit(&s->gen, memory_order_relaxed);
  if (g_populated[s->index] == token) return;
  g_populated[s->index] = token;
  madvise(s->ring.buf, (size_t)lens_slots.ring_bytes, LENS_MADV_POPULATE_WRITE);
}

/* One pass over all slots; returns the largest amount drained from one ring. */
static uint64_t drain_all(void) {
  uint64_t most = 0;
  struct lens_tslot *slots = __atomic_load_n(&lens_slots.slots, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; slots && i < lens_slots.n; i++) {
    struct lens_tslot *s = &slots[i];
    int st = atomic_load_explicit(&s->state, memory_order_acquire);
    if (st != LENS_SLOT_ACTIVE && st != LENS_SLOT_RETIRING) continue;
    announce(s);
    uint64_t n = drain_slot(s);
    if (n > most) most = n;
    if (n >= lens_slots.ring_bytes / 64) populate_ring(s);
    if (st == LENS_SLOT_RETIRING && atomic_load_explicit(&s->prod.head, memory_order_acquire) ==
                                        atomic_load_explicit(&s->tail, memory_order_relaxed)) {
      frame_write_slot(s->index); /* before the slot can have a new owner */
      lens_tslot_free(s);
    }
  }
  return most;
}

static int drain_blobs(void) {
  struct lens_blob b;
  int n = 0;
  while (lens_blobq_pop(&b)) {
    lens_tf_write(b.type, b.payload, b.len);
    free(b.payload);
    n++;
  }
  return n;
}

static void write_drops(int force) {
  struct lens_drops d;
  lens_counters_snapshot(&d);
  if (lens_rec_on()) {
    struct lens_rec_stats rs;
    lens_rec_stats(&rs);
    d.recorder_evicted = rs.evicted_event_records;
  }
  struct lens_drops cmp = d;
  cmp.at_mono_ns = g_last_drops.at_mono_ns;
  if (!force && memcmp(&cmp, &g_last_drops, sizeof cmp) == 0) return;
  lens_tf_write(LENS_CHUNK_DROPS, &d, sizeof d);
  g_last_drops = d;
}

static void final_pass(uint32_t reason) {
  for (int i = 0; i < 4 && drain_all() > 0; i++) {
  }
  frames_write_all();
  drain_blobs();
  lens_registry_remove();
  lens_clock_evidence_write(0);
  write_drops(1);
  struct lens_fini f;
  memset(&f, 0, sizeof f);
  f.at_mono_ns = lens_mono_ns();
  f.events_written = g_events;
  f.chunks_written = lens_tf_chunks() + 1;
  f.reason = reason;
  lens_tf_write(LENS_CHUNK_FINI, &f, sizeof f);
}

/* ---- the control queue: NCCL's threads ask, the writer does the I/O ----
 *
 * init and finalize never touch the file: opening the trace (mkdir, open,
 * the header), the SESSION/COMM/COMM_FINI chunks, the final drain and FINI
 * all run on the writer thread. A hung NFS or Lustre mount then stalls only
 * the writer; NCCL's threads post here (a short critical section the writer
 * never holds across I/O) and wait for a close at most flush_timeout_ms. */
enum { CTL_OPEN = 1, CTL_CHUNK, CTL_CLOSE, CTL_EXIT };
struct ctl_open {
  char out_dir[512], registry_dir[512], host[64];
  int pid;
  uint32_t period_us;
  int recorder; /* NCCL_LENS_MODE=recorder (recorder.h) */
  uint64_t recorder_bytes;
  uint32_t hang_timeout_s, slow_ms;
  int compress; /* enum lens_compress */
  int zstd_level;
  int live;
  uint32_t live_period_ms, dump_interval_s;
};
struct ctl {
  int kind;
  uint16_t chunk_type;
  uint32_t reason, len;
  void *payload; /* malloc'd; freed by the writer */
  uint64_t ticket;
};
#define CTL_CAP 1024u
#define CTL_RESERVE 16u /* kept for OPEN/CLOSE: a flood of COMM records never blocks a close */
static struct ctl g_ctl[CTL_CAP];
static uint64_t g_ctl_head, g_ctl_tail; /* under g_mu */
static uint64_t g_ticket_next = 1, g_ticket_done; /* under g_mu */
static pthread_cond_t g_done_cv;
static int g_open;     /* writer-private: a session's file is open */
static int g_full_once, g_nothr_once;

/* Lock held. */
static int post_locked(int kind, uint16_t type, uint32_t reason, void *payload, uint32_t len, uint64_t *ticket) {
  uint64_t used = g_ctl_tail - g_ctl_head;
  uint64_t limit = kind == CTL_CHUNK ? CTL_CAP - CTL_RESERVE : CTL_CAP;
  if (!g_running || used >= limit) {
    free(payload);
    atomic_fetch_add_explicit(&lens_cnt.blob_queue_full, 1, memory_order_relaxed);
    return -1;
  }
  struct ctl *c = &g_ctl[g_ctl_tail++ % CTL_CAP];
  *c = (struct ctl){kind, type, reason, len, payload, g_ticket_next++};
  if (ticket) *ticket = c->ticket;
  pthread_cond_signal(&g_cv);
  return 0;
}

static int post(int kind, uint16_t type, uint32_t reason, void *payload, uint32_t len, uint64_t *ticket) {
  pthread_mutex_lock(&g_mu);
  int running = g_running;
  int rc = post_locked(kind, type, reason, payload, len, ticket);
  pthread_mutex_unlock(&g_mu);
  if (rc && running)
    lens_log_once(&g_full_once, LENS_LOG_WARN,
                  "nccl-lens: the writer's control queue is full (is the trace file system stalled?); "
                  "communicator records are dropped, counted");
  return rc;
}

static int ctl_pop(struct ctl *out) {
  pthread_mutex_lock(&g_mu);
  int got = g_ctl_head != g_ctl_tail;
  if (got) *out = g_ctl[g_ctl_head++ % CTL_CAP];
  pthread_mutex_unlock(&g_mu);
  return got;
}

static void ctl_done(uint64_t ticket) {
  pthread_mutex_lock(&g_mu);
  g_ticket_done = ticket;
  pthread_cond_broadcast(&g_done_cv);
  pthread_mutex_unlock(&g_mu);
}

/* The SESSION record and the live COMM records of the open session, kept by
 * the writer so that it can write them again when their chunks were lost
 * (a disk full when the trace was opened, with room later): without them the
 * events that do get written could not be attributed. Writer-private. */
static void *g_sess_rec;
static uint32_t g_sess_len;
static struct lens_comm_rec *g_meta_comms;
static uint32_t g_meta_n, g_meta_cap;
static int g_meta_lost;

static void meta_keep(struct ctl *c) {
  if (c->chunk_type == LENS_CHUNK_SESSION) {
    free(g_sess_rec);
    g_sess_rec = c->payload; /* ownership moves here */
    g_sess_len = c->len;
    c->payload = NULL;
    return;
  }
  if (c->chunk_type != LENS_CHUNK_COMM && c->chunk_type != LENS_CHUNK_COMM_FINI) return;
  if (c->len < sizeof(uint64_t)) return;
  uint64_t ctx;
  memcpy(&ctx, c->payload, sizeof ctx); /* both records start with the context */
  uint32_t i = 0;
  while (i < g_meta_n && g_meta_comms[i].context != ctx) i++;
  if (c->chunk_type == LENS_CHUNK_COMM_FINI) {
    if (i < g_meta_n) g_meta_comms[i] = g_meta_comms[--g_meta_n];
    return;
  }
  if (i == g_meta_n) {
    if (g_meta_n == g_meta_cap) {
      uint32_t cap = g_meta_cap ? g_meta_cap * 2 : 16;
      struct lens_comm_rec *n = cap <= 4096 ? realloc(g_meta_comms, cap * sizeof *n) : NULL;
      if (!n) return; /* only the re-send after a loss would miss it */
      g_meta_comms = n;
      g_meta_cap = cap;
    }
    g_meta_n++;
  }
  memset(&g_meta_comms[i], 0, sizeof g_meta_comms[i]);
  memcpy(&g_meta_comms[i], c->payload, c->len < sizeof g_meta_comms[i] ? c->len : sizeof g_meta_comms[i]);
}

/* Writes SESSION and the live COMMs again after one of them was lost. */
static void meta_resend(void) {
  int ok = !g_sess_rec || lens_tf_write(LENS_CHUNK_SESSION, g_sess_rec, g_sess_len) == 0;
  for (uint32_t i = 0; ok && i < g_meta_n; i++)
    ok = lens_tf_write(LENS_CHUNK_COMM, &g_meta_comms[i], sizeof g_meta_comms[i]) == 0;
  if (ok) g_meta_lost = 0;
}

static void meta_forget(void) {
  free(g_sess_rec);
  g_sess_rec = NULL;
  g_sess_len = 0;
  g_meta_n = 0;
  g_meta_lost = 0;
}

static int g_session_pid;

static void session_begin(const struct ctl_open *o) {
  g_session_pid = o->pid;
  lens_rec_configure(o->recorder, o->recorder_bytes);
  lens_regdir_open(o->registry_dir); /* checked, or none: logged once */
  lens_regdir_sweep();
  if (o->recorder) lens_wd_configure(o->hang_timeout_s, o->slow_ms, o->dump_interval_s, o->pid);
  lens_tf_open(o->out_dir, o->host, o->pid); /* may block on a stalled mount: only this thread waits */
  g_session = lens_tf_session();
  g_period_us = o->period_us;
  g_compress = o->compress;
  g_zstd_level = o->zstd_level;
  g_events = 0;
  lens_openset_reset(&g_openset); /* ids are the session's */
  memset(&g_last_drops, 0, sizeof g_last_drops);
  lens_strtab_reset();
  lens_registry_begin(o->pid, lens_tf_path());
  lens_live_begin(o->live, o->live_period_ms, lens_regdir_fd(), o->pid, o->host);
  atomic_store_explicit(&lens_slots.changed, 1, memory_order_relaxed);
  g_open = 1;
  lens_clock_evidence_write(1);
}

/* Recorder mode: the store, with everything drained so far and a NOTE
 * saying why, written as a .lens file. */
static void recorder_dump(const char *why) {
  for (int i = 0; i < 4 && drain_all() > 0; i++) {
  }
  frames_write_all();
  drain_blobs();
  write_drops(1);
  struct lens_rec_stats rs;
  lens_rec_stats(&rs);
  char text[320];
  /* the store's own figures: what the recorder held (payloads plus the
   * allocator's per-chunk bytes) against its bound (bench/recorder_mem) */
  int len = snprintf(text, sizeof text,
                     "nccl-lens recorder dump: %s (store: %llu bytes, peak %llu, bound %llu; %llu chunks, %llu "
                     "evicted with %llu event records)",
                     why, (unsigned long long)rs.bytes, (unsigned long long)rs.peak_bytes,
                     (unsigned long long)rs.bound, (unsigned long long)rs.chunks,
                     (unsigned long long)rs.evicted_chunks, (unsigned long long)rs.evicted_event_records);
  if (len < 0) len = 0;
  if (len >= (int)sizeof text) len = (int)sizeof text - 1;
  struct {
    struct lens_note_hdr h;
    char t[320];
  } note = {{lens_mono_ns(), LENS_LOG_INFO, (uint32_t)len}, {0}};
  memcpy(note.t, text, (size_t)len);
  lens_tf_write(LENS_CHUNK_NOTE, &note, (uint32_t)(sizeof note.h + (size_t)len));
  char path[1200];
  if (lens_tf_dump(path, sizeof path) == 0) lens_log(LENS_LOG_WARN, "nccl-lens: recorder dump (%s): %s", why, path);
}

static void session_end(uint32_t reason) {
  final_pass(reason); /* drains, removes the registry, DROPS, FINI */
  lens_live_end();     /* the live page keeps the final totals */
  if (lens_rec_on() && reason == 2) recorder_dump("process exit"); /* not at finalize: a healthy job writes nothing */
  lens_tf_close();
  meta_forget();
  g_open = 0;
}

/* Returns 1 when the thread must exit. */
static int handle(struct ctl *c) {
  int quit = 0;
  if (g_open && g_meta_lost) meta_resend(); /* before what refers to them (COMM_FINI, FINI) */
  switch (c->kind) {
  case CTL_OPEN:
    if (g_open) session_end(2); /* a lost CLOSE: end the old session first */
    session_begin(c->payload);
    break;
  case CTL_CHUNK:
    if (!g_open) {
      atomic_fetch_add_explicit(&lens_cnt.write_errors, 1, memory_order_relaxed);
      break;
    }
    /* a COMM_FINI follows its communicator's events (a new communicator may
     * reuse the context): the open frames go first */
    frames_write_all();
    if (lens_tf_write(c->chunk_type, c->payload, c->len) != 0 &&
        (c->chunk_type == LENS_CHUNK_SESSION || c->chunk_type == LENS_CHUNK_COMM))
      g_meta_lost = 1;
    lens_live_on_chunk(c->chunk_type, c->payload, c->len);
    meta_keep(c);
    break;
  case CTL_CLOSE:
    if (g_open) session_end(c->reason);
    break;
  case CTL_EXIT:
    if (g_open) session_end(c->reason);
    quit = 1;
    break;
  }
  free(c->payload);
  ctl_done(c->ticket);
  return quit;
}

static void *writer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "nccl-lens-wr");
  uint64_t idle_us = 1000, last_periodic = lens_mono_ns(), last_removed_check = last_periodic;
  /* A pass that found 1/64 of a ring (64 KiB of 4 MiB: ~1600 events) goes
   * round again at once: the ring fills faster than a sleep allows for, and
   * on a loaded machine a sleeping writer waits for a CPU after every wake.
   * Passes shrink until the writer has caught up, so it never spins on
   * empty rings: its CPU stays proportional to the events it writes. */
  uint64_t busy_bytes = lens_slots.ring_bytes / 64;
  for (;;) {
    struct ctl c;
    int quit = 0;
    while (!quit && ctl_pop(&c)) quit = handle(&c);
    if (quit) break;
    uint64_t most = 0;
    int blobs = 0;
    if (g_open) { /* between sessions the rings belong to nobody: leave them */
      if (g_meta_lost) meta_resend();
      most = drain_all();
      blobs = drain_blobs();
      uint64_t now = lens_mono_ns();
      if (now - last_removed_check >= (uint64_t)LENS_FRAME_MAX_AGE_MS * 1000000ull) {
        last_removed_check = now;
        /* The open frames are written at this pace (a slot's records wait in
         * its frame at most this long), and before the check: their records
         * name strings of the file they were converted for. */
        frames_write_all();
        if (lens_tf_check_removed()) { /* the new file needs SESSION, COMMs and strings again */
          g_meta_lost = 1;
          lens_strtab_reset();
          lens_registry_begin(g_session_pid, lens_tf_path());
          atomic_store_explicit(&lens_slots.changed, 1, memory_order_relaxed);
        }
      }
      if (now - last_periodic >= 1000000000ull) {
        last_periodic = now;
        lens_clock_refine();
        lens_clock_evidence_write(0);
        write_drops(0);
      }
      if (atomic_exchange_explicit(&lens_slots.changed, 0, memory_order_relaxed)) lens_registry_write();
      lens_live_tick(now);
      const char *why = lens_rec_on() ? lens_wd_tick(now) : NULL;
      if (why) recorder_dump(why);
    }
    uint64_t sleep_us;
    if (most >= busy_bytes)
      sleep_us = 0; /* a ring is filling fast: go round again */
    else if (most >= busy_bytes / 4)
      sleep_us = idle_us = 250; /* steady heavy flow: keep the rings short, the slack is for scheduling delays */
    else if (most || blobs)
      sleep_us = idle_us = 1000;
    else
      sleep_us = idle_us = idle_us * 2 > g_period_us ? g_period_us : idle_us * 2;
    pthread_mutex_lock(&g_mu);
    if (sleep_us && g_ctl_head == g_ctl_tail) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t ns = (uint64_t)ts.tv_nsec + sleep_us * 1000;
      ts.tv_sec += (time_t)(ns / 1000000000ull);
      ts.tv_nsec = (long)(ns % 1000000000ull);
      pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    pthread_mutex_unlock(&g_mu);
  }
  return NULL;
}

static void init_cvs(void) {
  if (g_cv_ok) return;
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&g_cv, &a);
  pthread_cond_init(&g_done_cv, &a);
  pthread_condattr_destroy(&a);
  g_cv_ok = 1;
}

/* Lock held. The thread lives until the process exits (the plugin is pinned
 * in memory) or until lens_writer_shutdown. */
static int start_locked(void) {
  if (g_running) return 0;
  if (!g_populated && lens_slots.n) {
    g_populated = calloc(lens_slots.n, sizeof *g_populated); /* NULL: rings fault in on their own */
    g_populated_n = g_populated ? lens_slots.n : 0;
  }
  if (g_period_us == 0) g_period_us = 10000;
  /* The writer must not inherit signals meant for the application. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&g_thr, NULL, writer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return rc;
  g_running = 1;
  return 0;
}

int lens_writer_open_session(const struct lens_config *c, const char *host, int pid, const void *session_rec,
                             uint32_t len) {
  struct ctl_open *o = calloc(1, sizeof *o);
  void *rec = malloc(len ? len : 1);
  if (!o || !rec) {
    free(o);
    free(rec);
    return -1;
  }
  snprintf(o->out_dir, sizeof o->out_dir, "%s", c->out_dir);
  snprintf(o->registry_dir, sizeof o->registry_dir, "%s", c->registry_dir);
  snprintf(o->host, sizeof o->host, "%s", host);
  o->pid = pid;
  o->period_us = c->writer_period_us;
  o->recorder = c->recorder;
  o->recorder_bytes = c->recorder_bytes;
  o->hang_timeout_s = c->hang_timeout_s;
  o->slow_ms = c->slow_ms;
  o->compress = c->compress;
  o->zstd_level = c->zstd_level;
  o->live = c->live;
  o->live_period_ms = c->live_period_ms;
  o->dump_interval_s = c->dump_interval_s;
  memcpy(rec, session_rec, len);
  init_cvs();
  pthread_mutex_lock(&g_mu);
  int rc = start_locked();
  if (rc == 0) {
    if (post_locked(CTL_OPEN, 0, 0, o, 0, NULL) == 0)
      post_locked(CTL_CHUNK, LENS_CHUNK_SESSION, 0, rec, len, NULL);
    else
      free(rec);
  } else {
    free(o);
    free(rec);
  }
  pthread_mutex_unlock(&g_mu);
  if (rc != 0) {
    lens_log_once(&g_nothr_once, LENS_LOG_WARN,
                  "nccl-lens: cannot start the writer thread (%s); events will be dropped, counted", strerror(rc));
    return -1;
  }
  return 0;
}

int lens_writer_post(uint16_t chunk_type, const void *payload, uint32_t len) {
  void *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  memcpy(copy, payload, len);
  return post(CTL_CHUNK, chunk_type, 0, copy, len, NULL);
}

/* How long a finalize or the exit handler waits for the writer: timeout_ms
 * (NCCL_LENS_FLUSH_TIMEOUT_MS) without progress, lens_tf_progress standing
 * still, not in all. A stalled file system (a write blocked in the kernel)
 * costs timeout_ms, as before; a slow one that keeps taking chunks gets the
 * end of the trace written instead of cut, up to FLUSH_WAIT_CAP times
 * timeout_ms in all (the job's threads may go on recording while it ends, so
 * "while progress" alone could wait for ever). */
#define FLUSH_WAIT_CAP 10u
#define FLUSH_WAIT_SLICE_NS 50000000ull /* how often a waiter looks at the progress */

static uint64_t mono_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* g_mu held (and held again on return). 1 when ticket t is done, or, with
 * or_stopped, the writer is gone. */
static int wait_ticket_locked(uint64_t t, unsigned timeout_ms, int or_stopped) {
  const uint64_t timeout = (uint64_t)timeout_ms * 1000000ull, start = mono_now_ns();
  const uint64_t limit = start + FLUSH_WAIT_CAP * timeout;
  uint64_t seen = lens_tf_progress(), quiet_since = start;
  while (!(g_ticket_done >= t || (or_stopped && !g_running))) {
    uint64_t now = mono_now_ns(), p = lens_tf_progress();
    if (p != seen) seen = p, quiet_since = now; /* a chunk got through: the writer moves */
    uint64_t dl = quiet_since + timeout < limit ? quiet_since + timeout : limit;
    if (now >= dl) break;
    uint64_t wake = now + FLUSH_WAIT_SLICE_NS < dl ? now + FLUSH_WAIT_SLICE_NS : dl;
    struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
    pthread_cond_timedwait(&g_done_cv, &g_mu, &ts); /* woken by the writer, or to look again */
  }
  return g_ticket_done >= t || (or_stopped && !g_running);
}

/* Posts kind and waits until the writer has done it (wait_ticket_locked). */
static int post_and_wait(int kind, uint32_t reason, unsigned timeout_ms) {
  init_cvs();
  uint64_t t = 0;
  pthread_mutex_lock(&g_mu);
  if (post_locked(kind, 0, reason, NULL, 0, &t) != 0) {
    pthread_mutex_unlock(&g_mu);
    return -1;
  }
  int done = wait_ticket_locked(t, timeout_ms, 0);
  pthread_mutex_unlock(&g_mu);
  return done ? 0 : -1;
}

/* The ticket of a close that was not done in time: while the writer has
 * not got past it, it is known to be stuck, and a later close does not wait
 * again (a job that creates and destroys communicators in a loop on a
 * stalled file system would otherwise pay the timeout each time). */
static uint64_t g_stuck_ticket; /* under g_mu */

int lens_writer_close_session(uint32_t reason, unsigned timeout_ms) {
  pthread_mutex_lock(&g_mu);
  int stuck = g_stuck_ticket && g_ticket_done < g_stuck_ticket;
  pthread_mutex_unlock(&g_mu);
  int rc = post_and_wait(CTL_CLOSE, reason, stuck ? 0 : timeout_ms);
  if (rc != 0 && !stuck) {
    pthread_mutex_lock(&g_mu);
    g_stuck_ticket = g_ticket_next - 1;
    pthread_mutex_unlock(&g_mu);
  }
  return rc;
}

int lens_writer_wait_done(unsigned timeout_ms) {
  init_cvs();
  pthread_mutex_lock(&g_mu);
  int done = wait_ticket_locked(g_ticket_next - 1, timeout_ms, 1);
  pthread_mutex_unlock(&g_mu);
  return done ? 0 : -1;
}

void lens_writer_shutdown(uint32_t reason, unsigned timeout_ms) {
  pthread_mutex_lock(&g_mu);
  int running = g_running;
  pthread_mutex_unlock(&g_mu);
  if (!running) return;
  if (post_and_wait(CTL_EXIT, reason, timeout_ms) == 0) {
    pthread_join(g_thr, NULL); /* it has left its loop */
  } else {
    lens_log(LENS_LOG_WARN, "nccl-lens: the writer did not stop within %u ms; left running detached", timeout_ms);
    pthread_detach(g_thr);
  }
  pthread_mutex_lock(&g_mu);
  g_running = 0;
  pthread_mutex_unlock(&g_mu);
}

void lens_writer_reset_after_fork(void) {
  /* The child has no writer thread; the parent's queued requests and the
   * parent's file are not the child's. */
  pthread_mutex_init(&g_mu, NULL);
  g_cv_ok = 0;
  init_cvs();
  g_running = 0;
  g_open = 0;
  g_ctl_head = g_ctl_tail = 0;
  g_ticket_next = 1;
  g_ticket_done = 0;
  g_stuck_ticket = 0;
  frames_forget();
}

uint64_t lens_writer_events(void) { return g_events; }

uint64_t lens_writer_drain_once(void) {
  uint64_t n = drain_all();
  frames_write_all(); /* a test reads the file next */
  return n;
}

int lens_writer_submit(uint16_t chunk_type, void *payload, uint32_t payload_len) {
  struct lens_blob b = {chunk_type, payload_len, payload};
  if (lens_blobq_push(&b) == 0) return 0;
  free(payload);
  lens_count(&lens_cnt.blob_queue_full);
  return -1;
}

uint64_t lens_now_mono_ns(void) { return lens_mono_ns(); }
