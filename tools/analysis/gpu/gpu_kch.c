/* The KernelCh table built from a model's events (gpu_kch.h). */
#include <stdlib.h>

#include "gpu_analysis.h"
#include "gpu_kch.h"

uint64_t lens_gpu_launch_key(uint64_t launch_id, uint64_t parent_group, int32_t proc) {
  uint64_t id = launch_id ? launch_id : parent_group;
  return id ? id * 1000003u + (uint64_t)proc + 1 : 0;
}

static uint64_t launch_of(const struct lens_model *m, const struct lens_event *e) {
  if (e->parent < 0) return 0;
  const struct lens_event *op = &m->events[e->parent];
  if (op->type == LENS_T_COLL) return lens_gpu_launch_key(op->p.coll.launch_id, op->p.coll.parent_group, op->proc);
  if (op->type == LENS_T_P2P) return lens_gpu_launch_key(op->p.p2p.launch_id, op->p.p2p.parent_group, op->proc);
  return 0;
}

int lens_gpu_kch_from_model(const struct lens_model *m, struct lens_gpu_kch_table *t) {
  if (m->kch_cols) { /* a window's load: every KernelCh of the files, built or not */
    t->n = 0;
    t->v = malloc((m->n_kch_cols ? m->n_kch_cols : 1) * sizeof *t->v);
    if (!t->v) return -1;
    for (size_t i = 0; i < m->n_kch_cols; i++) {
      const struct lens_kch_col *c = &m->kch_cols[i];
      int built = c->ev >= 0 && (size_t)c->ev < m->n_events && m->events[c->ev].type == LENS_T_KERNEL_CH;
      t->v[t->n++] = (struct lens_gpu_kch){
          .ev = built ? c->ev : -1,
          .thread = c->thread,
          .proc = c->proc,
          .channel = c->channel,
          .session = c->session,
          .id = c->id,
          .start_gpu = c->start_gpu,
          .stop_gpu = c->stop_gpu,
          .start_notice = c->start_notice,
          .stop_notice = c->stop_notice,
          .launch = lens_gpu_launch_key(c->launch_id, c->parent_group, c->proc),
          .cupti_kernel = -1,
      };
    }
    return 0;
  }
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == LENS_T_KERNEL_CH;
  t->n = 0;
  t->v = malloc((n ? n : 1) * sizeof *t->v);
  if (!t->v) return -1;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    uint64_t stop = e->p.kernel_ch.stop_gpu_ns;
    t->v[t->n++] = (struct lens_gpu_kch){
        .ev = (int32_t)i,
        .thread = e->thread,
        .proc = e->proc,
        .channel = e->p.kernel_ch.channel,
        .session = e->session,
        .id = e->id,
        .start_gpu = e->p.kernel_ch.start_gpu_ns,
        .stop_gpu = stop,
        .start_notice = e->start_mono_ns,
        .stop_notice = lens_gpu_kch_stop_notice(m, e),
        .launch = launch_of(m, e),
        .cupti_kernel = -1,
    };
  }
  return 0;
}

void lens_gpu_kch_free(struct lens_gpu_kch_table *t) {
  free(t->v);
  t->v = NULL;
  t->n = 0;
}
