/* See report_model.h. */
#include "report/report_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gpu/gpu_analysis.h"

struct lens_report_part {
  struct lens_rep_proc *procs; size_t n_procs;    /* the group's procs */
  struct lens_rep_late *late; size_t n_late;      /* sorted by (comm_id, rank); thread: the group's */
  struct lens_rep_starve *starve; size_t n_starve; /* thread: the group's */
  uint64_t kernel_ch, kernel_ch_starved, lag_n, lag_sum_ns, lag_max_ns;
  uint64_t lag_hist[LENS_REPORT_LAG_BINS];
  size_t n_sched, n_kernels;
  struct lens_rep_start *starts; size_t n_starts;  /* by event */
};

int lens_report_lag_bin(uint64_t lag_ns) {
  if (!lag_ns) return 0; /* log2(0) is -inf, no int */
  double us = (double)lag_ns / 1e3;
  int b = (int)floor(log2(us)) + 3;
  if (b < 0) b = 0;
  if (b >= LENS_REPORT_LAG_BINS) b = LENS_REPORT_LAG_BINS - 1;
  return b;
}

/* A process's span: its earliest start and latest end, events and folded
 * ProxySteps alike. UINT64_MAX marks "no start yet" while scanning, so a
 * start of 0 (a hostile or damaged record) is a start like any other and the
 * answer does not depend on the order of the events; a process without
 * events keeps 0, 0. */
static void span_of(const struct lens_model *m, struct lens_rep_proc *p) {
  for (size_t k = 0; k < m->n_procs; k++) p[k].first_ns = UINT64_MAX;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc < 0 || (size_t)e->proc >= m->n_procs) continue;
    struct lens_rep_proc *q = &p[e->proc];
    uint64_t end = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    if (e->start_mono_ns < q->first_ns) q->first_ns = e->start_mono_ns;
    if (end > q->last_ns) q->last_ns = end;
  }
  for (size_t i = 0; i < m->n_step_facts; i++) { /* folded ProxySteps (LENS_LOAD_STEP_FACTS): as their events */
    const struct lens_step_fact *x = &m->step_facts[i];
    if (x->proc < 0 || (size_t)x->proc >= m->n_procs) continue;
    struct lens_rep_proc *q = &p[x->proc];
    uint64_t end = x->stop_mono_ns > x->start_mono_ns ? x->stop_mono_ns : x->start_mono_ns;
    if (x->start_mono_ns < q->first_ns) q->first_ns = x->start_mono_ns;
    if (end > q->last_ns) q->last_ns = end;
  }
  for (size_t k = 0; k < m->n_procs; k++)
    if (p[k].first_ns == UINT64_MAX) p[k].first_ns = 0;
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

/* The row of (comm_id, rank), appended when new. */
static struct lens_rep_late *late_of(struct lens_rep_late **rows, size_t *n, size_t *cap, uint64_t comm_id, int rank,
                                     const char *name) {
  for (size_t i = 0; i < *n; i++)
    if ((*rows)[i].comm_id == comm_id && (*rows)[i].rank == rank) return &(*rows)[i];
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*rows, nc * sizeof **rows);
    if (!p) return NULL;
    *rows = p;
    *cap = nc;
  }
  struct lens_rep_late *l = &(*rows)[(*n)++];
  memset(l, 0, sizeof *l);
  l->comm_id = comm_id;
  l->thread = -1;
  snprintf(l->comm_name, sizeof l->comm_name, "%s", name ? name : "");
  l->rank = rank;
  return l;
}

static int cmp_late(const void *a, const void *b) {
  const struct lens_rep_late *x = a, *y = b;
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static int lateness(const struct lens_model *m, struct lens_report_part *r) {
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
        const struct lens_comm *c = &m->comms[a[k].comm];
        struct lens_rep_late *l = late_of(&r->late, &r->n_late, &cap, c->comm_id, c->rank, c->name);
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

/* Every proxy and profiler thread's row (the printers show them only when
 * the job has scheduler samples: a thread of a host without a probe trace
 * then shows none starved). */
static int starvation(const struct lens_model *m, struct lens_report_part *r) {
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
    /* its folded ProxySteps (superseded or not, as the step events): none
     * starved, the steps are folded only where no starvation is analysed */
    r->starve[r->n_starve++] = (struct lens_rep_starve){.thread = (int32_t)t, .starved_ns = m->threads[t].starved_ns,
                                                        .proxy = m->threads[t].folded_starts};
  }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int kch = e->type == LENS_T_KERNEL_CH;
    if (!kch && e->type != LENS_T_PROXY_OP && e->type != LENS_T_PROXY_STEP) continue;
    int starved = (e->acc.flags & LENS_ACC_STARVED) != 0;
    if (kch) r->kernel_ch_starved += starved;
    if (e->thread < 0 || (size_t)e->thread >= m->n_threads || slot[e->thread] < 0) continue;
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

void lens_report_pass_free(void *part) {
  struct lens_report_part *p = part;
  if (!p) return;
  free(p->procs);
  free(p->late);
  free(p->starve);
  free(p->starts);
  free(p);
}

void *lens_report_pass_map(struct lens_model *m, void *ctx) {
  (void)ctx;
  struct lens_report_part *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->n_procs = m->n_procs;
  r->n_sched = m->n_sched;
  r->n_kernels = m->n_kernels;
  size_t n_starts = 0;
  for (size_t i = 0; i < m->n_events; i++)
    n_starts += m->events[i].type == LENS_T_COLL || m->events[i].type == LENS_T_P2P;
  r->procs = calloc(m->n_procs + 1, sizeof *r->procs);
  r->starts = malloc((n_starts + 1) * sizeof *r->starts);
  if (!r->procs || !r->starts) goto oom;
  span_of(m, r->procs);
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_COLL || e->type == LENS_T_P2P)
      r->starts[r->n_starts++] = (struct lens_rep_start){i, e->start_mono_ns};
    if (e->type != LENS_T_KERNEL_CH) continue;
    r->kernel_ch++;
    /* Every known lag, 0 included (the clock fit touches its points). One
     * below 0 (a notice before the mapped time: within the map's error, or a
     * point kept out of the fit) counts as 0, in the first bin. */
    if (lens_gpu_notice_lag_known(m, e)) {
      uint64_t l = e->acc.notice_lag_ns > 0 ? (uint64_t)e->acc.notice_lag_ns : 0;
      r->lag_n++;
      r->lag_sum_ns += l;
      if (l > r->lag_max_ns) r->lag_max_ns = l;
      r->lag_hist[lens_report_lag_bin(l)]++;
    }
  }
  if (lateness(m, r) || starvation(m, r)) goto oom;
  return r;
oom:
  lens_report_pass_free(r);
  return NULL;
}

int lens_report_merge(struct lens_report *r, const struct lens_model *skel, struct lens_report_part *const *parts,
                      size_t n, const struct lens_model_base *bases) {
  size_t n_late = 0, n_starve = 0, n_starts = 0;
  for (size_t g = 0; g < n; g++) {
    n_late += parts[g]->n_late;
    n_starve += parts[g]->n_starve;
    n_starts += parts[g]->n_starts;
  }
  r->n_procs = skel->n_procs;
  r->procs = calloc(skel->n_procs + 1, sizeof *r->procs);
  r->late = malloc((n_late + 1) * sizeof *r->late);
  r->starve = malloc((n_starve + 1) * sizeof *r->starve);
  r->starts = malloc((n_starts + 1) * sizeof *r->starts);
  r->group_first = malloc((n + 1) * sizeof *r->group_first);
  r->group_proc = malloc((n + 1) * sizeof *r->group_proc);
  if (!r->procs || !r->late || !r->starve || !r->starts || !r->group_first || !r->group_proc) return -1;
  r->n_groups = n;
  size_t at = 0;
  for (size_t g = 0; g < n; g++) {
    const struct lens_report_part *p = parts[g];
    size_t pb = bases[g].proc, tb = bases[g].thread;
    for (size_t i = 0; i < p->n_procs && pb + i < r->n_procs; i++) r->procs[pb + i] = p->procs[i];
    /* a rank's arrivals on its host: one group's, or (a host split past
     * LENS_PASS_GROUP_MAX traces) the sum of its groups' */
    for (size_t i = 0; i < p->n_late; i++) {
      const struct lens_rep_late *x = &p->late[i];
      struct lens_rep_late *l = NULL;
      for (size_t k = 0; k < r->n_late && !l; k++)
        if (r->late[k].comm_id == x->comm_id && r->late[k].rank == x->rank) l = &r->late[k];
      if (!l) {
        l = &r->late[r->n_late++];
        *l = *x;
        l->n = l->sum_ns = l->max_ns = l->last_n = l->same_thread_n = 0;
        l->thread = -1;
      }
      l->n += x->n;
      l->sum_ns += x->sum_ns;
      if (x->max_ns > l->max_ns) l->max_ns = x->max_ns;
      l->last_n += x->last_n;
      l->same_thread_n += x->same_thread_n;
      if (x->thread >= 0) l->thread = (int32_t)(x->thread + (int64_t)tb);
    }
    for (size_t i = 0; i < p->n_starve; i++) {
      struct lens_rep_starve s = p->starve[i];
      s.thread = (int32_t)(s.thread + (int64_t)tb);
      r->starve[r->n_starve++] = s;
    }
    r->kernel_ch += p->kernel_ch;
    r->kernel_ch_starved += p->kernel_ch_starved;
    r->lag_n += p->lag_n;
    r->lag_sum_ns += p->lag_sum_ns;
    if (p->lag_max_ns > r->lag_max_ns) r->lag_max_ns = p->lag_max_ns;
    for (int b = 0; b < LENS_REPORT_LAG_BINS; b++) r->lag_hist[b] += p->lag_hist[b];
    r->n_sched += p->n_sched;
    r->n_kernels += p->n_kernels;
    r->group_first[g] = at;
    r->group_proc[g] = pb;
    memcpy(r->starts + at, p->starts, p->n_starts * sizeof *p->starts);
    at += p->n_starts;
  }
  r->group_first[n] = at;
  r->group_proc[n] = r->n_procs;
  if (r->n_late) qsort(r->late, r->n_late, sizeof *r->late, cmp_late);
  return 0;
}

int lens_report_rank_start(const struct lens_report *r, const struct lens_job_rank *rk, uint64_t *start_ns) {
  long gl = rk->event < 0 ? -1 : lens_job_group_of_proc(r->group_proc, r->n_groups, rk->proc);
  if (gl < 0) return 0;
  size_t g = (size_t)gl, lo = r->group_first[g], hi = r->group_first[g + 1];
  uint64_t ev = (uint64_t)rk->event;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->starts[mid].event < ev) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= r->group_first[g + 1] || r->starts[lo].event != ev) return 0;
  *start_ns = r->starts[lo].start_ns;
  return 1;
}

void lens_report_free(struct lens_report *r) {
  lens_summary_free(&r->sum);
  free(r->procs);
  free(r->late);
  free(r->starve);
  free(r->starts);
  free(r->group_first);
  free(r->group_proc);
  lens_net_free(r->net);
  memset(r, 0, sizeof *r);
}
