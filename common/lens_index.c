/* See lens_index.h. */
#include "lens_index.h"

#include <stdlib.h>
#include <string.h>

void lens_index_begin(struct lens_index_acc *a, uint32_t slot) {
  memset(&a->h, 0, sizeof a->h);
  a->h.slot = slot;
}

void lens_index_touch(struct lens_index_acc *a, uint64_t id) {
  uint32_t slot = LENS_ID_SLOT(id);
  uint64_t seq = LENS_ID_SEQ(id);
  if (a->h.flags & LENS_INDEX_F_TOUCH_ANY) return;
  for (uint32_t i = 0; i < a->h.n_touch; i++) {
    struct lens_index_touch *t = &a->touch[i];
    if (t->slot != slot) continue;
    if (seq < t->seq_lo) t->seq_lo = seq;
    if (seq > t->seq_hi) t->seq_hi = seq;
    return;
  }
  if (a->h.n_touch == LENS_INDEX_TOUCH_MAX) {
    a->h.flags |= LENS_INDEX_F_TOUCH_ANY;
    return;
  }
  a->touch[a->h.n_touch++] = (struct lens_index_touch){slot, 0, seq, seq};
}

const void *lens_index_payload(struct lens_index_acc *a, uint32_t records, int open, uint32_t *len) {
  _Static_assert(offsetof(struct lens_index_acc, touch) == sizeof(struct lens_index_hdr),
                 "the touches follow the header in the payload");
  a->h.records = records;
  if (open) a->h.flags |= LENS_INDEX_F_OPEN;
  else a->h.flags &= (uint16_t)~LENS_INDEX_F_OPEN;
  *len = (uint32_t)(sizeof a->h + a->h.n_touch * sizeof a->touch[0]);
  return a;
}

/* ---- the open set ----
 * A thread's STARTs come in sequence order, so each slot keeps its recent
 * events as bits: started and stopped, over a window of LENS_INDEX_WINDOW
 * sequence numbers that moves with its STARTs. A START and a STOP are a
 * bit set each, on a line the slot's last START made hot. An event still
 * open when the window moves past it (a ProxyOp that runs long, one whose
 * STOP was lost) goes to a small hash table of long-open events. A STOP
 * drained before its START (another thread's ring drained first) sets its
 * stopped bit, and the START then finds it stopped; a STOP whose START was
 * lost leaves a stopped bit that no START follows: nothing to forget. */

static inline uint32_t home(uint64_t key, uint32_t cap) {
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1);
}

static long find(const struct lens_openset *o, uint64_t key) {
  for (uint32_t i = home(key, o->cap);; i = (i + 1) & (o->cap - 1)) {
    if (!o->t[i]) return -1;
    if (o->t[i] == key) return i;
  }
}

/* Linear probing's deletion: the entries after the hole that would not be
 * found past it move back into it. */
static void erase(struct lens_openset *o, uint32_t i) {
  uint32_t mask = o->cap - 1;
  for (uint32_t j = (i + 1) & mask; o->t[j]; j = (j + 1) & mask) {
    uint32_t h = home(o->t[j], o->cap);
    /* j's entry may fill the hole at i when its home is not in (i, j] */
    if (((j - h) & mask) >= ((j - i) & mask)) {
      o->t[i] = o->t[j];
      i = j;
    }
  }
  o->t[i] = 0;
  o->n--;
}

static void long_insert(struct lens_openset *o, uint64_t key) {
  if (o->n >= o->cap / 4 * 3) {
    o->incomplete = 1;
    return;
  }
  uint32_t i = home(key, o->cap);
  while (o->t[i] && o->t[i] != key) i = (i + 1) & (o->cap - 1);
  if (!o->t[i]) o->t[i] = key, o->n++;
}

#define KEY(slot, seq) ((uint64_t)(slot) << 40 | (seq))
#define WORDS (LENS_INDEX_WINDOW / 64)

int lens_openset_init(struct lens_openset *o, uint32_t n_slots) {
  memset(o, 0, sizeof *o);
  o->cap = LENS_INDEX_LONG_CAP;
  o->n_slots = n_slots ? n_slots : 1;
  o->t = calloc(o->cap, sizeof *o->t);
  o->slot = calloc(o->n_slots, sizeof *o->slot);
  o->drained = calloc(o->n_slots, sizeof *o->drained);
  o->snap = malloc(LENS_INDEX_OPEN_MAX * sizeof *o->snap);
  if (!o->t || !o->slot || !o->drained || !o->snap) {
    lens_openset_free(o);
    return -1;
  }
  return 0;
}

void lens_openset_free(struct lens_openset *o) {
  for (uint32_t s = 0; o->slot && s < o->n_slots; s++) free(o->slot[s]);
  free(o->t), free(o->slot), free(o->drained), free(o->snap);
  memset(o, 0, sizeof *o);
}

void lens_openset_reset(struct lens_openset *o) {
  if (!o->t) return;
  memset(o->t, 0, o->cap * sizeof *o->t);
  for (uint32_t s = 0; s < o->n_slots; s++)
    if (o->slot[s]) memset(o->slot[s], 0, sizeof *o->slot[s]);
  memset(o->drained, 0, o->n_slots * sizeof *o->drained);
  o->n = o->incomplete = 0;
  o->last_taken_ns = 0;
}

/* The window's oldest word leaves it: its open events become long-open. */
static void advance(struct lens_openset *o, uint32_t slot, struct lens_open_slot *w) {
  uint32_t i = (uint32_t)(w->base / 64) % WORDS;
  for (uint64_t open = w->started[i] & ~w->stopped[i]; open; open &= open - 1)
    long_insert(o, KEY(slot, w->base + (uint64_t)__builtin_ctzll(open)));
  w->started[i] = w->stopped[i] = 0;
  w->base += 64;
}

/* The slot's window, made and moved on so that it holds seq; NULL when seq is
 * older than the window (or no memory: the open sets are then incomplete). */
static struct lens_open_slot *window_to(struct lens_openset *o, uint32_t slot, uint64_t seq) {
  struct lens_open_slot *w = o->slot[slot];
  if (!w) {
    w = o->slot[slot] = calloc(1, sizeof *w);
    if (!w) {
      o->incomplete = 1;
      return NULL;
    }
    w->base = seq / 64 * 64;
  }
  if (seq < w->base) return NULL;
  if (seq - w->base >= 2 * (uint64_t)LENS_INDEX_WINDOW) { /* a jump: the whole window leaves */
    for (uint32_t k = 0; k < WORDS; k++) advance(o, slot, w);
    w->base = seq / 64 * 64 - (LENS_INDEX_WINDOW - 64);
  }
  while (seq - w->base >= LENS_INDEX_WINDOW) advance(o, slot, w);
  return w;
}

void lens_openset_add_slow(struct lens_openset *o, const struct lens_rec_hdr *h) {
  if (!o->t || (h->kind != LENS_REC_START && h->kind != LENS_REC_STOP)) return;
  uint64_t id = ((const struct lens_rec_stop *)h)->id; /* START and STOP both have it after the header */
  uint32_t slot = LENS_ID_SLOT(id);
  uint64_t seq = LENS_ID_SEQ(id);
  if (!id || slot >= o->n_slots) return;
  if (h->kind == LENS_REC_START && seq > o->drained[slot]) o->drained[slot] = seq;
  struct lens_open_slot *w = window_to(o, slot, seq);
  uint64_t bit = 1ull << (seq % 64);
  if (h->kind == LENS_REC_START) {
    if (w) w->started[(seq / 64) % WORDS] |= bit;
    else if (o->slot[slot]) long_insert(o, KEY(slot, seq)); /* older than the window (not in order): long-open */
    return;
  }
  if (w) {
    w->stopped[(seq / 64) % WORDS] |= bit; /* before its START too: that START finds it stopped */
  } else { /* long-open, or never started here */
    long i = find(o, KEY(slot, seq)); /* o->t checked above */
    if (i >= 0) erase(o, (uint32_t)i);
  }
}

int lens_openset_due(const struct lens_openset *o, uint64_t now_ns) {
  return o->t && (!o->last_taken_ns || now_ns - o->last_taken_ns >= LENS_INDEX_OPEN_EVERY_MS * 1000000ull);
}

size_t lens_openset_bound(const struct lens_openset *o) {
  return sizeof(struct lens_index_open) + o->n_slots * sizeof(struct lens_index_drained) +
         (size_t)LENS_INDEX_OPEN_MAX * sizeof(uint64_t);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

size_t lens_openset_write(struct lens_openset *o, uint64_t taken_ns, void *out, size_t cap) {
  if (!o->t) return 0;
  o->last_taken_ns = taken_ns; /* one that cannot be written is not tried again at once */
  size_t n_open = 0;
  uint32_t n_slots = 0;
  for (uint32_t s = 0; s < o->n_slots; s++) {
    n_slots += o->drained[s] != 0;
    const struct lens_open_slot *w = o->slot[s];
    for (uint32_t k = 0; w && k < WORDS; k++) {
      uint64_t first = w->base + 64ull * k;
      uint32_t i = (uint32_t)(first / 64) % WORDS;
      for (uint64_t open = w->started[i] & ~w->stopped[i]; open; open &= open - 1) {
        if (n_open == LENS_INDEX_OPEN_MAX) return 0; /* no set this time: a reader takes an earlier one */
        o->snap[n_open++] = KEY(s, first + (uint64_t)__builtin_ctzll(open));
      }
    }
  }
  if (n_open + o->n > LENS_INDEX_OPEN_MAX) return 0;
  for (uint32_t i = 0; i < o->cap; i++)
    if (o->t[i]) o->snap[n_open++] = o->t[i];
  size_t len = sizeof(struct lens_index_open) + n_slots * sizeof(struct lens_index_drained) + n_open * sizeof(uint64_t);
  if (len > cap) return 0;
  qsort(o->snap, n_open, sizeof *o->snap, cmp_u64);
  struct lens_index_open hdr = {taken_ns, n_slots, (uint32_t)n_open, o->incomplete ? LENS_INDEX_OPEN_F_INCOMPLETE : 0,
                                0};
  uint8_t *p = out;
  memcpy(p, &hdr, sizeof hdr), p += sizeof hdr;
  for (uint32_t s = 0; s < o->n_slots; s++) {
    if (!o->drained[s]) continue;
    struct lens_index_drained d = {s, 0, o->drained[s]};
    memcpy(p, &d, sizeof d), p += sizeof d;
  }
  memcpy(p, o->snap, n_open * sizeof *o->snap);
  return len;
}
