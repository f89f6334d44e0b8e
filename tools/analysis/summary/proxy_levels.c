/* See proxy_levels.h. */
#include "proxy_levels.h"

#include <stdlib.h>

struct lvl { int level; uint64_t since, last; };

int lens_proxy_levels(const struct lens_model *m, lens_proxy_level_cb cb, void *arg) {
  struct lvl *t = calloc(m->n_threads + 1, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; i <= m->n_threads; i++) t[i].level = -1;
  for (size_t i = 0; i < m->n_events; i++) { /* sorted by start within each process */
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_PROXY_CTRL || e->thread < 0) continue;
    struct lvl *th = &t[e->thread];
    uint64_t stop = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    for (uint32_t k = 0; k < e->n_states; k++) {
      const struct lens_state_ev *s = &m->states[e->first_state + k];
      uint64_t next = k + 1 < e->n_states ? m->states[e->first_state + k + 1].ts_mono_ns : stop;
      if (s->state == 13 || s->state == 14) {
        if (th->level >= 0 && s->ts_mono_ns > th->since) cb(arg, e->thread, th->level, th->since, s->ts_mono_ns);
        th->level = s->state == 14 ? LENS_PL_ACTIVE : LENS_PL_IDLE;
        th->since = s->ts_mono_ns;
      } else if (s->state == 15 && next > s->ts_mono_ns) {
        /* Asleep is neither active nor idle-awake, whatever the last 13/14
         * said (a proxy may sleep without recording Idle first): the sleep
         * cuts the level, which goes on after the wakeup. */
        if (th->level >= 0 && s->ts_mono_ns > th->since) cb(arg, e->thread, th->level, th->since, s->ts_mono_ns);
        cb(arg, e->thread, LENS_PL_SLEEP, s->ts_mono_ns, next);
        if (next > th->since) th->since = next;
      } else if (s->state == 17 && next > s->ts_mono_ns) {
        cb(arg, e->thread, LENS_PL_APPEND, s->ts_mono_ns, next);
      }
    }
    if (stop > th->last) th->last = stop;
  }
  for (size_t i = 0; i < m->n_threads; i++)
    if (t[i].level >= 0 && t[i].last > t[i].since) cb(arg, (int32_t)i, t[i].level, t[i].since, t[i].last);
  free(t);
  return 0;
}
