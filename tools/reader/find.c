/* Lookups over a loaded model: events by id, a parent's first child of a
 * type, completion of an operation. */
#include "reader_priv.h"

int32_t lens_model_find_in_session(const struct lens_model *m, int32_t proc, uint32_t session, uint64_t id) {
  const struct lens_reader_priv *pv = m->priv;
  int64_t v;
  const struct lens_idseq *t = pv ? lens_proc_events(pv, proc) : NULL;
  if (!t || !lens_idseq_peek(t, session, id, &v)) return -1;
  return (int32_t)v;
}

int32_t lens_model_find(const struct lens_model *m, int32_t proc, uint64_t id) {
  const struct lens_reader_priv *pv = m->priv;
  if (!pv) return -1;
  for (size_t s = 0; s < pv->n_sessions; s++) {
    if (pv->sessions[s].proc != proc) continue;
    int32_t i = lens_model_find_in_session(m, proc, pv->sessions[s].session, id);
    if (i >= 0) return i;
  }
  return -1;
}

/* The GPU finishes a Coll/P2p when its last channel stops; the network part
 * when its last ProxyOp stops. PXN ProxyOps of another process count too
 * (they are children through the cross-process parent link). */
uint64_t lens_event_completion(const struct lens_model *m, const struct lens_event *e, int *source) {
  uint64_t best = 0;
  int src = LENS_TS_HOST_NOTICE;
  if (source) *source = src;
  if (e->type != LENS_T_COLL && e->type != LENS_T_P2P) return 0;
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    uint64_t t = 0;
    int s = LENS_TS_HOST_NOTICE;
    if (x->type == LENS_T_PROXY_OP) {
      t = x->stop_mono_ns;
    } else if (x->type == LENS_T_KERNEL_CH) {
      if (x->acc.gpu_stop_mono_ns) {
        t = x->acc.gpu_stop_mono_ns;
        s = (int)x->acc.time_source;
      } else {
        t = x->stop_mono_ns;
      }
    }
    if (t > best) {
      best = t;
      src = s;
    }
  }
  if (source) *source = src;
  return best;
}

int32_t lens_first_child_of_type(const struct lens_model *m, int32_t parent, int32_t type,
                                 struct lens_child_memo *memo) {
  if (parent < 0 || (size_t)parent >= m->n_events) return -1;
  size_t k = (size_t)parent % LENS_CHILD_MEMO_SLOTS;
  if (memo && memo->parent1[k] == (uint32_t)parent + 1u && memo->type[k] == type) return memo->child[k];
  int32_t c = m->events[parent].first_child;
  while (c >= 0 && m->events[c].type != type) c = m->events[c].next_sibling;
  if (memo) memo->parent1[k] = (uint32_t)parent + 1u, memo->type[k] = type, memo->child[k] = c;
  return c;
}
