/* See report_model.h. */
#include "report/report_model.h"

#include <stdlib.h>
#include <string.h>

static void span_of(const struct lens_model *m, struct lens_rep_proc *p) {
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    struct lens_rep_proc *q = &p[e->proc];
    uint64_t end = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    if (!q->first_ns || e->start_mono_ns < q->first_ns) q->first_ns = e->start_mono_ns;
    if (end > q->last_ns) q->last_ns = end;
  }
}

/* One Coll start, keyed for grouping the ranks of one operation. occ tells
 * apart the runs of one seq on one rank (a graph replays the same seq). */
struct arrival { uint64_t comm_id, seq; int32_t host, comm; uint32_t occ; uint64_t start; int32_t thread; };

static int cmp_occ(const void *a, const void *b) {
  const struct arrival *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

static int cmp_arrival(const void *a, const void *b) {
  const struct arrival *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->occ != y->occ) return x->occ < y->occ ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

static struct lens_rep_late *late_of(struct lens_report *r, const struct lens_comm *c, size_t *cap) {
  for (size_t i = 0; i < r->n_late; i++)
    if (r->late[i].comm_id == c->comm_id && r->late[i].rank == c->rank) return &r->late[i];
  if (r->n_late == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(r->late, nc * sizeof *r->late);
    if (!p) return NULL;
    r->late = p;
    *cap = nc;
  }
  struct lens_rep_late *l = &r->late[r->n_late++];
  memset(l, 0, sizeof *l);
  l->comm_id = c->comm_id;
  l->thread = -1;
  l->comm_name = c->name;
  l->rank = c->rank;
  return l;
}

static int cmp_late(const void *a, const void *b) {
  const struct lens_rep_late *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static int lateness(const struct lens_model *m, struct lens_report *r) {
  int32_t *host = malloc((m->n_procs + 1) * sizeof *host);
  struct arrival *a = malloc((m->n_events + 1) * sizeof *a);
  if (!host || !a) {
    free(host);
    free(a);
    return -1;
  }
  for (size_t p = 0; p < m->n_procs; p++) { /* same host name -> same number */
    host[p] = (int32_t)p;
    for (size_t q = 0; q < p; q++)
      if (!strcmp(m->procs[q].host, m->procs[p].host)) {
        host[p] = host[q];
        break;
      }
  }
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_COLL || e->comm < 0 || (e->flags & LENS_EVF_REMOTE)) continue;
    a[n++] = (struct arrival){m->comms[e->comm].comm_id, e->p.coll.seq, host[e->proc], e->comm, 0, e->start_mono_ns,
                              e->thread};
  }
  qsort(a, n, sizeof *a, cmp_occ);
  for (size_t i = 1; i < n; i++)
    if (a[i].comm == a[i - 1].comm && a[i].seq == a[i - 1].seq) a[i].occ = a[i - 1].occ + 1;
  qsort(a, n, sizeof *a, cmp_arrival);
  size_t cap = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc;) {
    size_t j = i + 1;
    while (j < n && a[j].comm_id == a[i].comm_id && a[j].host == a[i].host && a[j].seq == a[i].seq &&
           a[j].occ == a[i].occ)
      j++;
    if (j - i >= 2) { /* sorted by start: a[i] came first, a[j-1] last */
      for (size_t k = i; k < j; k++) {
        struct lens_rep_late *l = late_of(r, &m->comms[a[k].comm], &cap);
        if (!l) {
          rc = -1;
          break;
        }
        uint64_t d = a[k].start - a[i].start;
        l->n++;
        l->sum_ns += d;
        if (d > l->max_ns) l->max_ns = d;
        l->last_n += k == j - 1;
        /* One thread that starts several ranks' Coll of this operation
         * (a process driving several GPUs) starts them one after another:
         * its later ranks arrive late by launch order alone. */
        int shared = 0;
        for (size_t q = i; q < j && !shared; q++) shared = q != k && a[q].thread >= 0 && a[q].thread == a[k].thread;
        if (shared) {
          l->same_thread_n++;
          l->thread = a[k].thread;
        }
      }
    }
    i = j;
  }
  free(host);
  free(a);
  if (r->n_late) qsort(r->late, r->n_late, sizeof *r->late, cmp_late);
  return rc;
}

static int starvation(const struct lens_model *m, struct lens_report *r) {
  if (!m->n_sched) return 0;
  int32_t *slot = malloc((m->n_threads + 1) * sizeof *slot);
  if (!slot) return -1;
  for (size_t t = 0; t < m->n_threads; t++) {
    slot[t] = -1;
    if (!(m->threads[t].roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER))) continue;
    void *p = realloc(r->starve, (r->n_starve + 1) * sizeof *r->starve);
    if (!p) {
      free(slot);
      return -1;
    }
    r->starve = p;
    slot[t] = (int32_t)r->n_starve;
    /* The thread's starved time counted once: summing the events' overlaps
     * counts one wait once per nested ProxyOp, ProxyStep and KernelCh. */
    r->starve[r->n_starve++] = (struct lens_rep_starve){.thread = (int32_t)t, .starved_ns = m->threads[t].starved_ns};
  }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int kch = e->type == LENS_T_KERNEL_CH;
    if (!kch && e->type != LENS_T_PROXY_OP && e->type != LENS_T_PROXY_STEP) continue;
    int starved = (e->acc.flags & LENS_ACC_STARVED) != 0;
    if (kch) {
      r->kernel_ch_starved += starved;
    }
    if (e->thread < 0 || slot[e->thread] < 0) continue;
    struct lens_rep_starve *s = &r->starve[slot[e->thread]];
    if (kch) {
      s->kernel_ch++;
      s->kernel_ch_starved += starved;
    } else {
      s->proxy++;
      s->proxy_starved += starved;
    }
  }
  free(slot);
  return 0;
}

int lens_report_build(const struct lens_model *m, struct lens_report *r, int gpu_ran) {
  memset(r, 0, sizeof *r);
  r->gpu_ran = gpu_ran;
  if (lens_summary_build(m, &r->sum, gpu_ran)) return -1;
  r->procs = calloc(m->n_procs + 1, sizeof *r->procs);
  if (!r->procs) goto oom;
  span_of(m, r->procs);
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    r->kernel_ch++;
    if (e->acc.notice_lag_ns > 0) {
      uint64_t l = (uint64_t)e->acc.notice_lag_ns;
      r->lag_n++;
      r->lag_sum_ns += l;
      if (l > r->lag_max_ns) r->lag_max_ns = l;
    }
  }
  if (lateness(m, r) || starvation(m, r)) goto oom;
  if (!(r->net = lens_net_build(m))) goto oom;
  return 0;
oom:
  lens_report_free(r);
  return -1;
}

void lens_report_free(struct lens_report *r) {
  lens_summary_free(&r->sum);
  free(r->procs);
  free(r->late);
  free(r->starve);
  lens_net_free(r->net);
  memset(r, 0, sizeof *r);
}
