/* See id_seq.h. */
#include "id_seq.h"

#include <stdlib.h>
#include <string.h>

#include "mem_hint.h"

#define FIRST_CAP 16 /* a run's first room */
/* Budgets that bound what a file of ids no writer numbers costs: runs (a
 * writer has a run per slot and session, and one per restart or lost
 * stretch; a file that starts one every few ids sends them to the hash,
 * not to an array each) and holes (numbers of records a writer's ring
 * dropped: a few in a hundred; a file of ids LENS_IDSEQ_GAP apart fills
 * no more holes than it puts ids). */
#define RUN_BUDGET(puts) (4096 + (puts) / 16)
#define HOLE_BUDGET(puts) (65536 + (puts))
#define MAX_RUN ((uint64_t)1 << 30) /* entries in one run (its n and cap are 32 bits) */

static int grow_to(void **p, size_t n, size_t es, size_t old, size_t *bytes) {
  void *q = realloc(*p, n * es);
  if (!q) return -1;
  lens_hugepage_hint(q, n * es);
  *p = q;
  *bytes += (n - old) * es;
  return 0;
}

static struct lens_idseq_slot *find_slot(const struct lens_idseq *t, uint64_t scope, uint32_t slot) {
  if (t->last && t->last_scope == scope && t->last_slot == slot) return t->last;
  int64_t v;
  return t->slot_of.n && lens_hash_get(&t->slot_of, scope, slot, &v) ? &t->slots[v] : NULL;
}

static void cache(struct lens_idseq *t, uint64_t scope, uint32_t slot, struct lens_idseq_slot *s) {
  t->last_scope = scope;
  t->last_slot = slot;
  t->last = s;
}

/* The slot's entry, made if new and within the budget; NULL when over it
 * (*oom 0) or out of memory (*oom 1). */
static struct lens_idseq_slot *make_slot(struct lens_idseq *t, uint64_t scope, uint32_t slot, int *oom) {
  struct lens_idseq_slot *s = find_slot(t, scope, slot);
  *oom = 0;
  if (s) return s;
  if (t->n_runs >= RUN_BUDGET(t->puts)) return NULL; /* a new slot takes a run */
  if (t->n_slots == t->cap_slots) {
    size_t cap = t->cap_slots ? t->cap_slots * 2 : 16;
    if (grow_to((void **)&t->slots, cap, sizeof *t->slots, t->cap_slots, &t->bytes)) goto oom;
    t->cap_slots = cap;
  }
  size_t cap_before = t->slot_of.cap;
  if (lens_hash_put(&t->slot_of, scope, slot, (int64_t)t->n_slots)) goto oom;
  t->bytes += (t->slot_of.cap - cap_before) * sizeof *t->slot_of.slots;
  s = &t->slots[t->n_slots++];
  memset(s, 0, sizeof *s);
  /* the slots array may have moved: the cached pointer with it */
  t->last = NULL;
  return s;
oom:
  *oom = 1;
  return NULL;
}

/* The id is in no run any more (it goes to the hash): every run of its
 * slot that holds it loses it, so a get finds the hash's value. */
static void unrun(struct lens_idseq *t, uint64_t scope, uint64_t id) {
  struct lens_idseq_slot *s = find_slot(t, scope, lens_idseq_slot_of(id));
  uint64_t seq = lens_idseq_seq_of(id);
  for (uint32_t k = 0; s && k < s->n_runs; k++) {
    struct lens_idseq_run *r = &s->runs[k];
    uint64_t i = seq - r->first;
    if (i < r->n && r->top[i] == (uint8_t)(id >> 56)) r->val[i] = LENS_IDSEQ_EMPTY;
  }
}

static int put_other(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t value) {
  unrun(t, scope, id);
  size_t cap_before = t->other.cap;
  if (lens_hash_put(&t->other, scope, id, value)) return -1;
  t->bytes += (t->other.cap - cap_before) * sizeof *t->other.slots;
  t->puts++;
  return 0;
}

static int grow_run(struct lens_idseq *t, struct lens_idseq_run *r, size_t need) {
  size_t cap = r->cap ? r->cap : FIRST_CAP;
  while (cap < need) cap *= 2;
  if (grow_to((void **)&r->val, cap, sizeof *r->val, r->cap, &t->bytes) ||
      grow_to((void **)&r->top, cap, 1, r->cap, &t->bytes))
    return -1;
  r->cap = (uint32_t)cap;
  return 0;
}

int lens_idseq_put_slow(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t value) {
  if (value != (int32_t)value || value == LENS_IDSEQ_EMPTY) return put_other(t, scope, id, value);
  uint32_t slot = lens_idseq_slot_of(id);
  uint64_t seq = lens_idseq_seq_of(id);
  uint8_t top = (uint8_t)(id >> 56);
  int oom;
  struct lens_idseq_slot *s = make_slot(t, scope, slot, &oom);
  if (!s) return oom ? -1 : put_other(t, scope, id, value);
  cache(t, scope, slot, s);
  struct lens_idseq_run *r = s->n_runs ? &s->runs[s->n_runs - 1] : NULL;
  if (r && seq - r->first < r->n) { /* a number the latest run holds */
    uint64_t i = seq - r->first;
    if (r->val[i] == LENS_IDSEQ_EMPTY || r->top[i] == top) { /* a hole, or the same id: replaced */
      r->val[i] = (int32_t)value;
      r->top[i] = top;
      t->puts++;
      return 0;
    }
    r = NULL; /* another id of that number (another top byte): a run of its own */
  } else if (r && (seq < r->first || seq - (r->first + r->n) > LENS_IDSEQ_GAP || seq - r->first >= MAX_RUN ||
                    t->holes + (seq - (r->first + r->n)) > HOLE_BUDGET(t->puts))) {
    r = NULL; /* the sequence restarted, or jumped far ahead */
  }
  if (!r) {
    if (s->n_runs == LENS_IDSEQ_MAX_RUNS || t->n_runs >= RUN_BUDGET(t->puts)) /* not a writer's sequence */
      return put_other(t, scope, id, value);
    if (s->n_runs == s->cap_runs) {
      uint32_t cap = s->cap_runs ? s->cap_runs * 2 : 1;
      if (grow_to((void **)&s->runs, cap, sizeof *s->runs, s->cap_runs, &t->bytes)) return -1;
      s->cap_runs = cap;
    }
    r = &s->runs[s->n_runs++];
    t->n_runs++;
    memset(r, 0, sizeof *r);
    r->first = seq;
  }
  size_t need = (size_t)(seq - r->first) + 1;
  if (need > r->cap && grow_run(t, r, need)) return -1;
  for (; r->n + 1 < need; t->holes++) r->val[r->n++] = LENS_IDSEQ_EMPTY; /* numbers of records the ring dropped */
  r->val[r->n] = (int32_t)value;
  r->top[r->n++] = top;
  t->puts++;
  return 0;
}

static int find(const struct lens_idseq_slot *s, const struct lens_hash *other, uint64_t scope, uint64_t id,
                int64_t *value) {
  uint64_t seq = lens_idseq_seq_of(id);
  for (uint32_t k = s ? s->n_runs : 0; k-- > 0;) { /* newest first */
    const struct lens_idseq_run *r = &s->runs[k];
    uint64_t i = seq - r->first;
    if (i < r->n && r->val[i] != LENS_IDSEQ_EMPTY && r->top[i] == (uint8_t)(id >> 56)) {
      *value = r->val[i];
      return 1;
    }
  }
  return other->n && lens_hash_get(other, scope, id, value);
}

int lens_idseq_get_slow(struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value) {
  uint32_t slot = lens_idseq_slot_of(id);
  struct lens_idseq_slot *s = find_slot(t, scope, slot);
  if (s) cache(t, scope, slot, s);
  return find(s, &t->other, scope, id, value);
}

int lens_idseq_peek_slow(const struct lens_idseq *t, uint64_t scope, uint64_t id, int64_t *value) {
  return find(find_slot(t, scope, lens_idseq_slot_of(id)), &t->other, scope, id, value);
}

void lens_idseq_renumber(struct lens_idseq *t, const int32_t *inv, size_t n) {
  for (size_t i = 0; i < t->n_slots; i++)
    for (uint32_t k = 0; k < t->slots[i].n_runs; k++) {
      struct lens_idseq_run *r = &t->slots[i].runs[k];
      for (uint32_t j = 0; j < r->n; j++)
        if (r->val[j] != LENS_IDSEQ_EMPTY) r->val[j] = r->val[j] >= 0 && (size_t)r->val[j] < n ? inv[r->val[j]] : -1;
    }
  for (size_t x = 0; x < t->other.cap; x++) {
    struct lens_hash_slot *h = &t->other.slots[x];
    if (h->value != INT64_MIN) h->value = h->value >= 0 && (uint64_t)h->value < n ? inv[h->value] : -1;
  }
}

void lens_idseq_free(struct lens_idseq *t) {
  for (size_t i = 0; i < t->n_slots; i++) {
    for (uint32_t k = 0; k < t->slots[i].n_runs; k++) free(t->slots[i].runs[k].val), free(t->slots[i].runs[k].top);
    free(t->slots[i].runs);
  }
  free(t->slots);
  lens_hash_free(&t->slot_of);
  lens_hash_free(&t->other);
  memset(t, 0, sizeof *t);
}
