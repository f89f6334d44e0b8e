/* The INDEX chunk's two builders (LENS_CHUNK_INDEX, trace_format.h), shared
 * by the plugin's writer and lens-gen-job so that both write one index:
 *
 *   lens_index_acc   what one events chunk holds (time range, its STARTs'
 *                    sequence numbers, event types, the ids its STOP/STATE
 *                    records touch), fed each record as it goes into the
 *                    chunk;
 *   lens_openset     the process's open events (a START seen, its STOP not),
 *                    fed every record in drain order, written as a
 *                    lens_index_open now and then: per thread slot, bits
 *                    over its latest sequence numbers, and a small table
 *                    for the events open longer than that.
 *
 * Writer side only (the writer thread, never NCCL's): no locks, memory
 * allocated once per session and bounded; a table that fills says so in
 * what it writes (LENS_INDEX_OPEN_F_INCOMPLETE) instead of growing. */
#ifndef NCCL_LENS_COMMON_INDEX_H
#define NCCL_LENS_COMMON_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_INDEX_TOUCH_MAX 8        /* slots an INDEX lists touches of; past them LENS_INDEX_F_TOUCH_ANY */
#define LENS_INDEX_OPEN_EVERY_MS 50   /* the open set rides on an INDEX at most this often */
#define LENS_INDEX_WINDOW 4096    /* per thread slot: its latest sequence numbers kept as bits (1 KiB) */
#define LENS_INDEX_LONG_CAP 4096  /* events open past their slot's window (8 bytes each), 3/4 used at most */
#define LENS_INDEX_OPEN_MAX 16384 /* keys an open set lists at most; with more open, none is written then */

struct lens_index_acc {
  struct lens_index_hdr h;
  struct lens_index_touch touch[LENS_INDEX_TOUCH_MAX];
};

void lens_index_begin(struct lens_index_acc *a, uint32_t slot);
/* A STOP or STATE of id whose START is not in the chunk: its slot's touch range takes it. */
void lens_index_touch(struct lens_index_acc *a, uint64_t id);
/* One record as it is written (converted: ts on CLOCK_MONOTONIC). Inline:
 * the writer calls it for every record. */
static inline void lens_index_add(struct lens_index_acc *a, const struct lens_rec_hdr *h) {
  uint64_t id, ts, last;
  switch (h->kind) {
  case LENS_REC_START: {
    const struct lens_rec_start *r = (const struct lens_rec_start *)h;
    id = r->id, ts = last = r->ts;
    uint64_t seq = LENS_ID_SEQ(id);
    if (!a->h.start_hi || seq < a->h.start_lo) a->h.start_lo = seq;
    if (seq > a->h.start_hi) a->h.start_hi = seq;
    break;
  }
  case LENS_REC_STOP: {
    const struct lens_rec_stop *r = (const struct lens_rec_stop *)h;
    id = r->id, ts = last = r->ts;
    break;
  }
  case LENS_REC_STATE: {
    const struct lens_rec_state *r = (const struct lens_rec_state *)h;
    id = r->id, ts = last = r->ts;
    if (h->size >= sizeof(struct lens_rec_state_run)) {
      const struct lens_rec_state_run *run = (const struct lens_rec_state_run *)h;
      if (run->last_ts > last) last = run->last_ts;
    }
    break;
  }
  default: return;
  }
  if (!a->h.records++) a->h.first_ts = ts, a->h.last_ts = last; /* counts what was added until the payload */
  if (ts < a->h.first_ts) a->h.first_ts = ts;
  if (last > a->h.last_ts) a->h.last_ts = last;
  if (h->type < 32) a->h.types |= 1u << h->type;
  if (h->kind == LENS_REC_START || !id) return;
  /* a slot's STARTs come in sequence order, so an id of its own in the
   * chunk's range started here: the reader finds it decoding the chunk */
  uint64_t seq = LENS_ID_SEQ(id);
  if (LENS_ID_SLOT(id) == a->h.slot && a->h.start_hi && seq >= a->h.start_lo && seq <= a->h.start_hi) return;
  lens_index_touch(a, id);
}
/* The INDEX payload's header and touches: *len bytes at a (the header, then
 * the touches right after it in struct lens_index_acc). records: the events
 * chunk's count (its header's: folded runs are one). open != 0 sets
 * LENS_INDEX_F_OPEN (the caller appends lens_openset_write's bytes). A
 * chunk whose records were none has nothing to index (a->h.records == 0
 * before this call). */
const void *lens_index_payload(struct lens_index_acc *a, uint32_t records, int open, uint32_t *len);

struct lens_open_slot {
  uint64_t base; /* the window's first sequence number (a multiple of 64) */
  uint64_t started[LENS_INDEX_WINDOW / 64], stopped[LENS_INDEX_WINDOW / 64]; /* a ring of words */
};
struct lens_openset {
  struct lens_open_slot **slot; /* by slot, made at its first START */
  uint64_t *drained;            /* per slot: the highest START sequence number drained */
  uint32_t n_slots;
  uint64_t *t;                  /* long-open events: keys (slot << 40 | seq), open addressing, 0 empty */
  uint32_t cap, n;
  uint32_t incomplete;          /* an open event could not be kept once this session */
  uint64_t *snap;               /* the open set's keys, sorted (LENS_INDEX_OPEN_MAX) */
  uint64_t last_taken_ns;
};

/* 0, or -1 without memory (then every call is a no-op and nothing is written). */
int lens_openset_init(struct lens_openset *o, uint32_t n_slots);
void lens_openset_free(struct lens_openset *o);
/* A new session (or a fork's child): nothing open. */
void lens_openset_reset(struct lens_openset *o);
void lens_openset_add_slow(struct lens_openset *o, const struct lens_rec_hdr *h);
/* Inline: the writer calls it for every record. A START or STOP within its
 * slot's window is one bit; the rest (a new slot, the window moving on, a
 * long-open event) is lens_openset_add_slow. */
static inline void lens_openset_add(struct lens_openset *o, const struct lens_rec_hdr *h) {
  if (h->kind != LENS_REC_START && h->kind != LENS_REC_STOP) return;
  uint64_t id = ((const struct lens_rec_stop *)h)->id; /* START and STOP both have it after the header */
  uint32_t slot = LENS_ID_SLOT(id);
  uint64_t seq = LENS_ID_SEQ(id);
  struct lens_open_slot *w = o->t && id && slot < o->n_slots ? o->slot[slot] : NULL;
  if (w && seq >= w->base && seq - w->base < LENS_INDEX_WINDOW) {
    uint64_t bit = 1ull << (seq % 64);
    if (h->kind == LENS_REC_START) {
      if (seq > o->drained[slot]) o->drained[slot] = seq;
      w->started[(seq / 64) % (LENS_INDEX_WINDOW / 64)] |= bit;
    } else {
      w->stopped[(seq / 64) % (LENS_INDEX_WINDOW / 64)] |= bit; /* before its START too: it finds it stopped */
    }
    return;
  }
  lens_openset_add_slow(o, h);
}
/* 1 when an open set is due at now_ns (every LENS_INDEX_OPEN_EVERY_MS). */
int lens_openset_due(const struct lens_openset *o, uint64_t now_ns);
/* The lens_index_open (header, drained[], ids) into out; its length, 0 when
 * it does not fit in cap, more than LENS_INDEX_OPEN_MAX events are open
 * (a reader then takes an earlier set), or the table is not there. Marks
 * it taken. */
size_t lens_openset_write(struct lens_openset *o, uint64_t taken_ns, void *out, size_t cap);
/* The most bytes lens_openset_write needs. */
size_t lens_openset_bound(const struct lens_openset *o);

#endif
