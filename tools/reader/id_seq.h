/* An id table keyed the way the writer numbers ids: (scope, 64-bit id) ->
 * a value, for the general model's event ids (records.c, resolve.c,
 * find.c), the window's scan (window.c) and the columnar reader
 * (columns.c). The scope is the caller's (a session, or a file and
 * session).
 *
 * The plugin's ids (trace_format.h, LENS_ID_*) are a top byte (tag,
 * REMOTE, type), a thread slot (bits 40..55) and that slot's count of
 * STARTs (the low 40 bits). So each (scope, slot) keeps its ids in runs
 * of consecutive sequence numbers: a dense array of values indexed by
 * sequence number, with each entry's top byte (slot, sequence and top
 * byte are the whole id). A writer's next START is an append; a lookup is
 * an index into an array its slot's recent STARTs just wrote, in cache,
 * where a hash of millions of ids missed the cache on every put and get.
 *
 * Any 64-bit id works. A sequence that jumps back (a restarted writer, a
 * repeated id of another top byte) or far ahead starts a new run; past
 * LENS_IDSEQ_MAX_RUNS runs a slot, past a budget of runs or of holes (in
 * proportion to the ids put), or with a value that does not fit a run's
 * 32 bits, the id goes to a hash (reader_hash.h). So a hostile file costs
 * memory in proportion to its ids, never to the gaps between their
 * numbers (a run fills at most LENS_IDSEQ_GAP holes a put, and no more
 * holes in all than ids).
 *
 * The rule is the hash's: a put of an id already there replaces its
 * value; a get returns the latest put. Runs are searched newest first, and
 * an id put into the hash is removed from every run, so an id has one
 * answer wherever it lives. */
#ifndef NCCL_LENS_READER_ID_SEQ_H
#define NCCL_LENS_READER_ID_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "reader_hash.h"

#define LENS_IDSEQ_GAP 64      /* a put this far past its run's end extends the run (holes stay empty) */
#define LENS_IDSEQ_MAX_RUNS 16 /* runs a (scope, slot) keeps; more ids of it go to the hash */
#define LENS_IDSEQ_EMPTY INT32_MIN

/* Ids first .. first+n-1 of one (scope, slot): val (LENS_IDSEQ_EMPTY: a
 * hole, or an id moved to the hash) and top, the id's top byte. */
struct lens_idseq_run { uint64_t first; uint32_t n, cap; int32_t *val; uint8_t *top; };
struct lens_idseq_slot { struct lens_idseq_run *runs; uint32_t n_runs, cap_runs; };

struct lens_idseq {
  struct lens_idseq_slot *slots; size_t n_slots, cap_slots;
  struct lens_hash slot_of; /* (scope, slot) -> index in slots */
  struct lens_hash other;   /* (scope, id) -> value: the ids no run takes */
  /* The (scope, slot) of the last put or get: most records name an event
   * of the slot the one before named. */
  uint64_t last_scope;
  uint32_t last_slot;
  struct lens_idseq_slot *last;
  size_t puts;  /* puts so far (a replaced id counts again) */
  size_t n_runs, holes; /* runs and holes in all (the budgets) */
  size_t bytes; /* memory held */
};

/* Insert or replace. 0, or -1 when out of memory. */
int lens_idseq_put_slow(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t value);
int lens_idseq_get_slow(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value);
int lens_idseq_peek_slow(const struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value);
/* Every value v becomes inv[v] where 0 <= v < n, else -1 (the model's
 * events renumbered; a folded step found no more). Values an id held
 * before its latest put (unseen, a newer run's value hides them) are
 * renumbered too, so the bound matters. */
void lens_idseq_renumber(struct lens_idseq *t, const int32_t *inv, size_t n);
/* Frees everything; the table is empty and can be used again. */
void lens_idseq_free(struct lens_idseq *t);

static inline uint32_t lens_idseq_slot_of(uint64_t id) { return (uint32_t)(id >> 40) & 0xFFFF; }
static inline uint64_t lens_idseq_seq_of(uint64_t id) { return id & 0xFFFFFFFFFFull; }

/* Insert or replace. 0, or -1 when out of memory. Nearly every put is the
 * next number of its slot's latest run, with room: an append, no call. */
static inline int lens_idseq_put(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t value) {
  struct lens_idseq_slot *s = t->last;
  if (__builtin_expect(s && t->last_scope == scope && t->last_slot == lens_idseq_slot_of(id) && s->n_runs &&
                           value == (int32_t)value && value != LENS_IDSEQ_EMPTY, 1)) {
    struct lens_idseq_run *r = &s->runs[s->n_runs - 1];
    if (__builtin_expect(lens_idseq_seq_of(id) == r->first + r->n && r->n < r->cap, 1)) {
      r->val[r->n] = (int32_t)value;
      r->top[r->n++] = (uint8_t)(id >> 56);
      t->puts++;
      return 0;
    }
  }
  return lens_idseq_put_slow(t, scope, id, value);
}

/* The latest run of the cached slot, where a lookup nearly always hits. */
static inline int lens_idseq_hit(const struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value) {
  const struct lens_idseq_slot *s = t->last;
  if (!s || t->last_scope != scope || t->last_slot != lens_idseq_slot_of(id) || !s->n_runs) return 0;
  const struct lens_idseq_run *r = &s->runs[s->n_runs - 1];
  uint64_t k = lens_idseq_seq_of(id) - r->first;
  if (k >= r->n || r->val[k] == LENS_IDSEQ_EMPTY || r->top[k] != (uint8_t)(id >> 56)) return 0;
  *value = r->val[k];
  return 1;
}

/* 1 and *value if present, else 0. The looked-up slot becomes the cached one. */
static inline int lens_idseq_get(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value) {
  if (__builtin_expect(lens_idseq_hit(t, scope, id, value), 1)) return 1;
  return lens_idseq_get_slow(t, scope, id, value);
}

/* The same on a table that is not changed (a loaded model's, which
 * several threads may read at once): the cache is read, not moved. */
static inline int lens_idseq_peek(const struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value) {
  if (lens_idseq_hit(t, scope, id, value)) return 1;
  return lens_idseq_peek_slow(t, scope, id, value);
}

#endif
