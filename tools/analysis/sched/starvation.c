/* Starvation flags and per-thread starvation report. See starvation.h. */
#include "starvation.h"

#include <stdlib.h>
#include <string.h>

#include "analyses.h"

static int is_wait(const struct lens_sched_sample *s) {
  return (s->kind == LENS_SCHED_RUNQ_WAIT || s->kind == LENS_SCHED_PREEMPT) && s->end_mono_ns > s->start_mono_ns;
}

int lens_starvation_sample_matches(const struct lens_model *m, const struct lens_sched_sample *s, int32_t t) {
  const struct lens_thread *th = &m->threads[t];
  const struct lens_proc *p = th->proc >= 0 && (size_t)th->proc < m->n_procs ? &m->procs[th->proc] : NULL;
  if (s->host_tid == th->outer_tid && (!p || s->host_pid == p->outer_pid)) return 1;
  /* Plugin inside a pid namespace: it knew only its own tids; the loader
   * translated them (registry) and recorded them as ns_tid. Both ids must
   * differ from the direct case, or the first test would have matched. */
  return s->ns_tid != 0 && s->ns_tid == th->tid && (!p || p->outer_pid != s->host_pid);
}

/* Wait samples of one thread, sorted by start, and the times of every
 * callback the thread made (its polls), sorted. */
struct tsamples {
  int32_t *idx;
  size_t n;
  uint64_t max_len; /* longest wait: bounds the backward search */
  uint64_t *polls;
  size_t n_polls;
};

/* Callbacks of one progress pass come microseconds apart; a larger gap
 * separates passes (the proxy slept, yielded, or could not run). */
#define PASS_GAP_NS 10000ull

static _Thread_local const struct lens_model *sort_model; /* per thread: job maps run in parallel */
static int by_start(const void *a, const void *b) {
  uint64_t x = sort_model->sched[*(const int32_t *)a].s.start_mono_ns;
  uint64_t y = sort_model->sched[*(const int32_t *)b].s.start_mono_ns;
  return x < y ? -1 : x > y;
}

static int collect(const struct lens_model *m, int32_t t, uint64_t min_wait_ns, struct tsamples *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    if (!is_wait(s) || s->end_mono_ns - s->start_mono_ns < min_wait_ns) continue;
    if (!lens_starvation_sample_matches(m, s, t)) continue;
    if (!(out->n & (out->n + 1))) { /* grow at 0, 1, 3, 7, ... */
      int32_t *g = realloc(out->idx, (out->n * 2 + 2) * sizeof *g);
      if (!g) return -1;
      out->idx = g;
    }
    out->idx[out->n++] = (int32_t)i;
    if (s->end_mono_ns - s->start_mono_ns > out->max_len) out->max_len = s->end_mono_ns - s->start_mono_ns;
  }
  sort_model = m;
  if (out->n > 1) qsort(out->idx, out->n, sizeof *out->idx, by_start);
  return 0;
}

static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Callback times a folded run of STATEs (lens_state_ev.count > 1) stands
 * for beyond its first: its last, and one every max(max_gap_ns,
 * PASS_GAP_NS) in between: no two of its records were further apart than
 * max_gap_ns, so at any time inside the run the proxy had polled at most
 * that long before (passes denser than PASS_GAP_NS read as one pass, as
 * the records would). */
static uint64_t run_step(const struct lens_state_ev *st) {
  return st->max_gap_ns > PASS_GAP_NS ? st->max_gap_ns : PASS_GAP_NS;
}
static uint64_t run_points(const struct lens_state_ev *st) {
  if (st->count <= 1 || st->last_mono_ns <= st->ts_mono_ns) return 0;
  uint64_t n = (st->last_mono_ns - st->ts_mono_ns) / run_step(st) + 1;
  return n < st->count - 1 ? n : st->count - 1;
}

/* Every callback time of thread t: event starts, stops and states. */
static int collect_polls(const struct lens_model *m, int32_t t, struct tsamples *out) {
  size_t cap = 0;
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].thread == t) {
      cap += 2 + m->events[i].n_states;
      for (uint32_t k = 0; k < m->events[i].n_states && m->events[i].first_state + k < m->n_states; k++)
        cap += run_points(&m->states[m->events[i].first_state + k]);
    }
  if (!cap) return 0;
  out->polls = malloc(cap * sizeof *out->polls);
  if (!out->polls) return -1;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->thread != t) continue;
    out->polls[out->n_polls++] = e->start_mono_ns;
    if (e->stop_mono_ns) out->polls[out->n_polls++] = e->stop_mono_ns;
    for (uint32_t k = 0; k < e->n_states && e->first_state + k < m->n_states; k++) {
      const struct lens_state_ev *st = &m->states[e->first_state + k];
      out->polls[out->n_polls++] = st->ts_mono_ns;
      uint64_t np = run_points(st); /* a run folded by the writer (run_points) */
      for (uint64_t j = 1; j <= np; j++)
        out->polls[out->n_polls++] = j == np ? st->last_mono_ns : st->ts_mono_ns + j * run_step(st);
    }
  }
  qsort(out->polls, out->n_polls, sizeof *out->polls, by_u64);
  return 0;
}

/* The proxy's previous pass before time s: walk back over the callbacks of
 * the pass that made the notice at s (each within PASS_GAP_NS of the next)
 * and return the last callback before it; 0 if there is none. */
static uint64_t prev_pass(const struct tsamples *ts, uint64_t s) {
  size_t lo = 0, hi = ts->n_polls;
  while (lo < hi) { /* lo = number of callbacks at or before s */
    size_t mid = (lo + hi) / 2;
    if (ts->polls[mid] <= s)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint64_t cur = s;
  for (size_t k = lo; k > 0; k--) {
    uint64_t t = ts->polls[k - 1];
    if (cur - t > PASS_GAP_NS) return t;
    cur = t;
  }
  return 0;
}

/* The host intervals over which starvation of its thread distorts what the
 * event reports, at most two (merged when they touch).
 * ProxyOp, ProxyStep: start..stop notice.
 * KernelCh: its host times are only notices of GPU events, so what a wait
 * distorts is the lag of each notice: [GPU start .. start notice] and
 * [GPU stop .. stop notice], with the GPU times mapped by the GPU analysis.
 * Without them: from the proxy's previous pass before the start notice to the
 * stop notice (a channel that ran while the proxy could not is noticed, start
 * and stop together, in the first pass after). */
static int event_spans(const struct lens_event *e, const struct tsamples *ts, uint64_t from[2], uint64_t to[2]) {
  uint64_t start = e->start_mono_ns, stop = e->stop_mono_ns > start ? e->stop_mono_ns : start;
  if (e->type != LENS_T_KERNEL_CH) {
    from[0] = start, to[0] = stop;
    return 1;
  }
  uint64_t gstart = e->acc.gpu_start_mono_ns, gstop = e->acc.gpu_stop_mono_ns;
  if (!gstart && !gstop) {
    uint64_t prev = prev_pass(ts, start);
    from[0] = prev && prev < start ? prev : start, to[0] = stop;
    return 1;
  }
  int n = 0;
  if (gstart && gstart < start) from[n] = gstart, to[n++] = start;
  if (!gstop || gstop >= stop) return n;
  if (n && gstop <= to[0]) { /* the two lags overlap: one interval */
    to[0] = stop;
    return 1;
  }
  from[n] = gstop, to[n++] = stop;
  return n;
}

/* Overlap of [from, to] with the thread's waits; *best_i: the sample that overlaps most. */
static uint64_t overlap(const struct lens_model *m, const struct tsamples *ts, uint64_t from, uint64_t to,
                        uint64_t *best, int32_t *best_i) {
  /* First sample that can reach `from`: starts no earlier than from - max_len. */
  uint64_t lo_start = from > ts->max_len ? from - ts->max_len : 0;
  size_t lo = 0, hi = ts->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->sched[ts->idx[mid]].s.start_mono_ns < lo_start)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint64_t total = 0;
  for (size_t k = lo; k < ts->n; k++) {
    const struct lens_sched_sample *s = &m->sched[ts->idx[k]].s;
    if (s->start_mono_ns > to || (s->start_mono_ns == to && to > from)) break;
    uint64_t a = s->start_mono_ns > from ? s->start_mono_ns : from;
    uint64_t b = s->end_mono_ns < to ? s->end_mono_ns : to;
    /* An instant event (from == to) inside a wait counts as overlapping it. */
    uint64_t ov = b > a ? b - a : (from == to && s->start_mono_ns <= from && from < s->end_mono_ns) ? 1 : 0;
    if (!ov) continue;
    total += ov;
    if (ov > *best) {
      *best = ov;
      *best_i = ts->idx[k];
    }
  }
  return total;
}

/* Windows of a thread's events (what starvation can distort), kept to count
 * the thread's starved time once: nested ProxyOp, ProxyStep and KernelCh
 * windows cover the same wait many times over. */
struct windows { uint64_t (*w)[2]; size_t n, cap; };

static int add_window(struct windows *ws, uint64_t from, uint64_t to) {
  if (ws->n == ws->cap) {
    size_t c = ws->cap ? ws->cap * 2 : 64;
    void *g = realloc(ws->w, c * sizeof *ws->w);
    if (!g) return -1;
    ws->w = g;
    ws->cap = c;
  }
  ws->w[ws->n][0] = from;
  ws->w[ws->n][1] = to;
  ws->n++;
  return 0;
}

static int by_from(const void *a, const void *b) {
  uint64_t x = (*(const uint64_t(*)[2])a)[0], y = (*(const uint64_t(*)[2])b)[0];
  return x < y ? -1 : x > y;
}

/* |union of the thread's waits ∩ union of its event windows|: sweeps both
 * sorted lists once, merging each as it goes. */
static uint64_t union_starved(const struct lens_model *m, const struct tsamples *ts, struct windows *ws) {
  if (!ws->n || !ts->n) return 0;
  qsort(ws->w, ws->n, sizeof *ws->w, by_from);
  size_t n = 0; /* merge windows in place */
  for (size_t i = 0; i < ws->n; i++) {
    if (n && ws->w[i][0] <= ws->w[n - 1][1]) {
      if (ws->w[i][1] > ws->w[n - 1][1]) ws->w[n - 1][1] = ws->w[i][1];
    } else {
      ws->w[n][0] = ws->w[i][0];
      ws->w[n][1] = ws->w[i][1];
      n++;
    }
  }
  uint64_t total = 0, covered_to = 0; /* waits may overlap: count each ns once */
  size_t k = 0;
  for (size_t i = 0; i < ts->n; i++) {
    const struct lens_sched_sample *s = &m->sched[ts->idx[i]].s;
    uint64_t a = s->start_mono_ns > covered_to ? s->start_mono_ns : covered_to, b = s->end_mono_ns;
    if (b <= a) continue;
    covered_to = b;
    while (k < n && ws->w[k][1] <= a) k++;
    for (size_t j = k; j < n && ws->w[j][0] < b; j++) {
      uint64_t x = ws->w[j][0] > a ? ws->w[j][0] : a, y = ws->w[j][1] < b ? ws->w[j][1] : b;
      if (y > x) total += y - x;
    }
  }
  return total;
}

static int flag_event(const struct lens_model *m, struct lens_event *e, const struct tsamples *ts,
                      struct windows *ws) {
  uint64_t from[2], to[2], total = 0, best = 0;
  int32_t best_i = -1;
  int n = event_spans(e, ts, from, to);
  for (int k = 0; k < n; k++)
    if (to[k] > from[k] && add_window(ws, from[k], to[k])) return -1;
  for (int k = 0; k < n; k++) total += overlap(m, ts, from[k], to[k], &best, &best_i);
  if (!total) return 0;
  e->acc.flags |= LENS_ACC_STARVED;
  e->acc.starved_ns = total;
  e->acc.sched_sample = best_i;
  return 1;
}

long lens_analyze_starvation(struct lens_model *m, uint64_t min_wait_ns) {
  if (!m || !m->n_sched || !m->n_threads) return 0;
  struct tsamples *per = calloc(m->n_threads, sizeof *per);
  if (!per) return -1;
  for (size_t t = 0; t < m->n_threads; t++) {
    if (!(m->threads[t].roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER))) continue;
    if (collect(m, (int32_t)t, min_wait_ns, &per[t]) != 0 ||
        (per[t].n && collect_polls(m, (int32_t)t, &per[t]) != 0)) {
      for (size_t k = 0; k <= t; k++) {
        free(per[k].idx);
        free(per[k].polls);
      }
      free(per);
      return -1;
    }
  }
  long flagged = 0;
  struct windows *ws = calloc(m->n_threads, sizeof *ws);
  if (!ws) flagged = -1;
  for (size_t i = 0; i < m->n_events && flagged >= 0; i++) {
    struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH && e->type != LENS_T_PROXY_OP && e->type != LENS_T_PROXY_STEP) continue;
    e->acc.flags &= ~LENS_ACC_STARVED;
    e->acc.starved_ns = 0;
    e->acc.sched_sample = -1;
    if (e->thread < 0 || (size_t)e->thread >= m->n_threads || !per[e->thread].n) continue;
    int r = flag_event(m, e, &per[e->thread], &ws[e->thread]);
    flagged = r < 0 ? -1 : flagged + r;
  }
  for (size_t t = 0; t < m->n_threads; t++) {
    if (flagged >= 0) m->threads[t].starved_ns = union_starved(m, &per[t], &ws[t]);
    if (ws) free(ws[t].w);
    free(per[t].idx);
    free(per[t].polls);
  }
  free(ws);
  free(per);
  return flagged;
}

/* ---- report ---- */
#define TOP_CULPRITS 3

static int by_wait(const void *a, const void *b) {
  const struct lens_starv_culprit *x = a, *y = b;
  return x->wait_ns > y->wait_ns ? -1 : x->wait_ns < y->wait_ns;
}

int lens_starvation_gather(const struct lens_model *m, struct lens_starvation *out) {
  memset(out, 0, sizeof *out);
  struct lens_starv_thread *st = NULL;
  size_t n = 0;
  int32_t *thread = NULL; /* per st: the plugin thread it is, -1 unknown */
  out->n_samples = m->n_sched;
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    size_t k = 0;
    while (k < n && !(st[k].host_tid == s->host_tid && st[k].host_pid == s->host_pid)) k++;
    if (k == n) {
      struct lens_starv_thread *g = realloc(st, (n + 1) * sizeof *g);
      if (!g) goto oom;
      st = g;
      int32_t *tg = realloc(thread, (n + 1) * sizeof *tg);
      if (!tg) goto oom;
      thread = tg;
      memset(&st[n], 0, sizeof st[n]);
      st[n].host_pid = s->host_pid;
      st[n].host_tid = s->host_tid;
      st[n].ns_tid = s->ns_tid;
      st[n].plugin_pid = st[n].plugin_tid = st[n].proxy_rank = -1;
      thread[n] = -1;
      for (size_t t = 0; t < m->n_threads && thread[n] < 0; t++)
        if (lens_starvation_sample_matches(m, s, (int32_t)t)) thread[n] = (int32_t)t;
      if (thread[n] >= 0) { /* who it is, kept: the model is gone when a merged report prints */
        const struct lens_thread *th = &m->threads[thread[n]];
        const struct lens_proc *p = th->proc >= 0 && (size_t)th->proc < m->n_procs ? &m->procs[th->proc] : NULL;
        st[n].plugin_thread = 1;
        st[n].plugin_tid = (int64_t)th->tid;
        st[n].plugin_pid = p ? (int64_t)p->pid : -1;
        st[n].proxy_rank = th->proxy_rank;
      }
      n++;
    }
    struct lens_starv_thread *t = &st[k];
    if (s->kind == LENS_SCHED_OFFCPU) {
      t->offcpu++;
      continue;
    }
    if (!is_wait(s)) continue;
    uint64_t d = s->end_mono_ns - s->start_mono_ns;
    if (s->kind == LENS_SCHED_RUNQ_WAIT) t->runq++;
    else t->preempt++;
    t->wait_ns += d;
    if (d > t->worst_ns) {
      t->worst_ns = d;
      t->worst_start = s->start_mono_ns;
    }
    size_t c = 0;
    while (c < t->n_culprits && !(t->c[c].tid == s->culprit_tid && t->c[c].pid == s->culprit_pid)) c++;
    if (c == t->n_culprits) {
      if (c == LENS_STARV_MAX_CULPRITS) {
        t->other_ns += d;
        continue;
      }
      t->n_culprits++;
      t->c[c] = (struct lens_starv_culprit){.pid = s->culprit_pid, .tid = s->culprit_tid};
      memcpy(t->c[c].comm, s->culprit_comm, sizeof t->c[c].comm);
      t->c[c].comm[15] = 0;
    }
    t->c[c].waits++;
    t->c[c].wait_ns += d;
  }
  for (size_t k = 0; k < n; k++) {
    qsort(st[k].c, st[k].n_culprits, sizeof st[k].c[0], by_wait);
    if (thread[k] < 0) continue;
    for (size_t i = 0; i < m->n_events; i++)
      if (m->events[i].thread == thread[k] && (m->events[i].acc.flags & LENS_ACC_STARVED)) st[k].flagged++;
  }
  for (size_t i = 0; i < m->n_events; i++) out->flagged_events += !!(m->events[i].acc.flags & LENS_ACC_STARVED);
  free(thread);
  out->threads = st;
  out->n_threads = n;
  return 0;
oom:
  free(st);
  free(thread);
  return -1;
}

int lens_starvation_merge(struct lens_starvation *into, const struct lens_starvation *part) {
  if (part->n_threads) {
    struct lens_starv_thread *t = realloc(into->threads, (into->n_threads + part->n_threads) * sizeof *t);
    if (!t) return -1;
    into->threads = t;
    memcpy(t + into->n_threads, part->threads, part->n_threads * sizeof *t);
    into->n_threads += part->n_threads;
  }
  into->n_samples += part->n_samples;
  into->flagged_events += part->flagged_events;
  return 0;
}

void lens_starvation_free(struct lens_starvation *s) {
  free(s->threads);
  memset(s, 0, sizeof *s);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

void lens_starvation_print_text(FILE *f, const struct lens_starvation *s) {
  fprintf(f, "Proxy thread scheduling (eBPF probe): %zu thread(s), %zu samples\n", s->n_threads, s->n_samples);
  for (size_t k = 0; k < s->n_threads; k++) {
    const struct lens_starv_thread *t = &s->threads[k];
    fprintf(f, "  pid %u tid %u", t->host_pid, t->host_tid);
    if (t->ns_tid && t->ns_tid != t->host_tid) fprintf(f, " (tid %u in its namespace)", t->ns_tid);
    if (t->plugin_thread) {
      fprintf(f, " = plugin thread %u of pid %u", (unsigned)t->plugin_tid,
              t->plugin_pid >= 0 ? (unsigned)t->plugin_pid : 0u);
      if (t->proxy_rank >= 0) fprintf(f, ", proxy of rank %d", (int)t->proxy_rank);
    }
    /* two lines: the waits, then the worst one (tables fit 120 columns) */
    fprintf(f, "\n    waited %.3f ms in %llu run-queue waits + %llu preemptions;\n    worst %.3f ms at %.6f s (monotonic); "
               "%llu long sleeps",
            t->wait_ns / 1e6, (unsigned long long)t->runq, (unsigned long long)t->preempt, t->worst_ns / 1e6,
            t->worst_start / 1e9, (unsigned long long)t->offcpu);
    if (t->plugin_thread) fprintf(f, "; %llu events flagged starved", (unsigned long long)t->flagged);
    fputc('\n', f);
    for (size_t c = 0; c < t->n_culprits && c < TOP_CULPRITS; c++)
      fprintf(f, "    culprit %-16s pid %-7u tid %-7u %8.3f ms (%5.1f%%) in %llu waits\n",
              t->c[c].comm[0] ? t->c[c].comm : (t->c[c].tid ? "?" : "<idle>"), t->c[c].pid, t->c[c].tid,
              t->c[c].wait_ns / 1e6, t->wait_ns ? 100.0 * t->c[c].wait_ns / t->wait_ns : 0.0,
              (unsigned long long)t->c[c].waits);
  }
}

void lens_starvation_print_json(FILE *f, const struct lens_starvation *s) {
  fprintf(f, "{\"threads\":[");
  for (size_t k = 0; k < s->n_threads; k++) {
    const struct lens_starv_thread *t = &s->threads[k];
    fprintf(f,
            "%s{\"host_pid\":%u,\"host_tid\":%u,\"ns_tid\":%u,\"plugin_pid\":%d,\"plugin_tid\":%d,"
            "\"proxy_rank\":%d,\"runq_waits\":%llu,\"preempts\":%llu,\"offcpu_sleeps\":%llu,\"wait_ns\":%llu,"
            "\"worst_wait_ns\":%llu,\"worst_start_mono_ns\":%llu,\"flagged_events\":%llu,\"culprits\":[",
            k ? "," : "", t->host_pid, t->host_tid, t->ns_tid, t->plugin_thread ? (int)t->plugin_pid : -1,
            t->plugin_thread ? (int)t->plugin_tid : -1, t->plugin_thread ? (int)t->proxy_rank : -1,
            (unsigned long long)t->runq, (unsigned long long)t->preempt, (unsigned long long)t->offcpu,
            (unsigned long long)t->wait_ns, (unsigned long long)t->worst_ns, (unsigned long long)t->worst_start,
            (unsigned long long)t->flagged);
    for (size_t c = 0; c < t->n_culprits && c < TOP_CULPRITS; c++) {
      fprintf(f, "%s{\"comm\":", c ? "," : "");
      json_str(f, t->c[c].comm);
      fprintf(f, ",\"pid\":%u,\"tid\":%u,\"waits\":%llu,\"wait_ns\":%llu}", t->c[c].pid, t->c[c].tid,
              (unsigned long long)t->c[c].waits, (unsigned long long)t->c[c].wait_ns);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "],\"flagged_events\":%llu}", (unsigned long long)s->flagged_events);
}

/* The one-model forms: gather, print, free (the same lines as the merged ones). */
void lens_print_starvation(FILE *f, const struct lens_model *m) {
  struct lens_starvation s;
  if (lens_starvation_gather(m, &s)) memset(&s, 0, sizeof s), s.n_samples = m->n_sched;
  lens_starvation_print_text(f, &s);
  lens_starvation_free(&s);
}

void lens_json_starvation(FILE *f, const struct lens_model *m) {
  struct lens_starvation s;
  if (lens_starvation_gather(m, &s)) memset(&s, 0, sizeof s), s.n_samples = m->n_sched;
  lens_starvation_print_json(f, &s);
  lens_starvation_free(&s);
}
