/* lens_model_keep: a loaded model narrowed to a subset of its events, with
 * every index into the event array renumbered, so that each command's
 * analyses and tables run on the selection unchanged (the CLI's --comm,
 * --rank, --func, --since/--until; what is selected is decided outside the
 * reader, in tools/cli/filter.c). */
#include <stdlib.h>
#include <string.h>

#include "reader_priv.h"

int lens_model_keep(struct lens_model *m, const uint8_t *keep) {
  size_t n = m->n_events, k = 0, ns = 0;
  int32_t *inv = malloc((n ? n : 1) * sizeof *inv);
  /* LENS_LOAD_STEP_FACTS: the kept events before each index (a step's place) */
  uint32_t *before = m->n_step_facts ? malloc((n + 1) * sizeof *before) : NULL;
  if (!inv || (m->n_step_facts && !before)) {
    free(inv), free(before);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    inv[i] = keep[i] ? (int32_t)k++ : -1;
    if (keep[i]) ns += m->events[i].n_states;
  }
  struct lens_state_ev *st = malloc((ns ? ns : 1) * sizeof *st);
  if (!st) {
    free(inv), free(before);
    return -1;
  }
  /* In place: the kept events only move down, and in order. */
  size_t s = 0;
  for (size_t i = 0; i < n; i++) {
    if (!keep[i]) continue;
    struct lens_event e = m->events[i];
    memcpy(st + s, m->states + e.first_state, e.n_states * sizeof *st);
    e.first_state = (uint32_t)s;
    s += e.n_states;
    /* A parent left out is not a missing parent (it was found): the event
     * is a root of the selection, its flags unchanged. */
    e.parent = e.parent >= 0 ? inv[e.parent] : -1;
    e.first_child = e.next_sibling = -1;
    m->events[inv[i]] = e;
  }
  /* Children in start order, as the loader links them. */
  for (size_t j = k; j-- > 0;) {
    int32_t p = m->events[j].parent;
    if (p < 0) continue;
    m->events[j].next_sibling = m->events[p].first_child;
    m->events[p].first_child = (int32_t)j;
  }
  /* LENS_LOAD_FOLD_LATER: a pending step whose parent is left out counts in no op (lens_model_fold) */
  for (size_t i = 0; i < m->n_pending_steps; i++) {
    int32_t p = m->pending_steps[i].parent;
    m->pending_steps[i].parent = p >= 0 && (size_t)p < n ? inv[p] : -1;
  }
  for (size_t i = 0; i < m->n_pending_children; i++) {
    int32_t e = m->pending_children[i].event;
    m->pending_children[i].event = e >= 0 && (size_t)e < n ? inv[e] : -1;
  }
  /* LENS_LOAD_STEP_FACTS: an op left out is none; a step sorts after the kept events that it sorted after */
  if (before) {
    before[0] = 0;
    for (size_t i = 0; i < n; i++) before[i + 1] = before[i] + (inv[i] >= 0);
  }
  for (size_t i = 0; i < m->n_step_facts; i++) {
    struct lens_step_fact *x = &m->step_facts[i];
    x->op = x->op >= 0 && (size_t)x->op < n ? inv[x->op] : -1;
    if (before) x->events_before = before[x->events_before <= n ? x->events_before : n];
  }
  free(before);
  for (size_t i = 0; i < m->n_step_children; i++) {
    int32_t e = m->step_children[i].event;
    m->step_children[i].event = e >= 0 && (size_t)e < n ? inv[e] : -1;
  }
  for (size_t i = 0; i < m->n_kernels; i++)
    if (m->kernels[i].launch_event >= 0) m->kernels[i].launch_event = inv[m->kernels[i].launch_event];
  struct lens_reader_priv *pv = m->priv;
  for (size_t p = 0; pv && p < pv->n_events_hash; p++) /* an id left out finds nothing (-1), as an id never seen */
    lens_idseq_renumber(&pv->events[p], inv, n);
  free(m->states);
  m->states = st;
  m->n_states = ns;
  m->n_events = k;
  free(inv);
  return 0;
}
