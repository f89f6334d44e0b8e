#include "cli/filter.h"
#include "cli/format.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/opt.h"

int lens_parse_duration_ns(const char *s, uint64_t *ns) {
  char *end;
  double d = strtod(s, &end);
  if (end == s || !isfinite(d) || d < 0) return -1;
  double mul;
  if (!*end || !strcmp(end, "s")) mul = 1e9;
  else if (!strcmp(end, "ms")) mul = 1e6;
  else if (!strcmp(end, "us")) mul = 1e3;
  else if (!strcmp(end, "ns")) mul = 1;
  else return -1;
  if (d * mul > 1e18) return -1; /* ~31 years: more is a typo */
  *ns = (uint64_t)llround(d * mul);
  return 0;
}

/* Appends each comma-separated item of v to *list. 0, or -1 (no memory, or an empty item). */
static int add_items(char ***list, size_t *n, const char *v) {
  for (const char *p = v;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (!len) return -1;
    char **nl = realloc(*list, (*n + 1) * sizeof **list);
    if (!nl) return -1;
    *list = nl;
    if (!(nl[*n] = strndup(p, len))) return -1;
    ++*n;
    if (!c) return 0;
    p = c + 1;
  }
}

uint8_t *lens_parse_rank_list(const char *s, size_t *n) {
  size_t cap = 1;
  for (const char *p = s; *p;) { /* first pass: the largest rank */
    char *end;
    unsigned long a = strtoul(p, &end, 10), b = a;
    if (end == p || a > 1000000) return NULL;
    p = end;
    if (*p == '-') {
      b = strtoul(++p, &end, 10);
      if (end == p || b < a || b > 1000000) return NULL;
      p = end;
    }
    if (*p == ',') p++;
    else if (*p) return NULL;
    if (b + 1 > cap) cap = b + 1;
  }
  uint8_t *v = calloc(cap, 1);
  if (!v) return NULL;
  for (const char *p = s; *p;) {
    char *end;
    unsigned long a = strtoul(p, &end, 10), b = a;
    p = end;
    if (*p == '-') b = strtoul(p + 1, &end, 10), p = end;
    if (*p == ',') p++;
    for (unsigned long r = a; r <= b; r++) v[r] = 1;
  }
  *n = cap;
  return v;
}

int lens_filter_option(const char *cmd, struct lens_filter *f, int *i, int argc, char **argv) {
  const char *v;
  int r;
  if ((r = lens_opt_val(cmd, i, argc, argv, "--comm", 0, "a communicator id or name", &v))) {
    if (r < 0) return -1;
    if (add_items(&f->comms, &f->n_comms, v))
      return lens_cli_usage(cmd, "--comm wants ID|NAME[,ID|NAME]... (hex ids as summary prints them)"), -1;
    return 1;
  }
  if ((r = lens_opt_val(cmd, i, argc, argv, "--func", 0, "an operation name", &v))) {
    if (r < 0) return -1;
    if (add_items(&f->funcs, &f->n_funcs, v))
      return lens_cli_usage(cmd, "--func wants NAME[,NAME]..., e.g. AllReduce or Send,Recv"), -1;
    return 1;
  }
  /* --ranks: the spelling export took first. */
  if ((r = lens_opt_val(cmd, i, argc, argv, "--rank", 0, "a rank list", &v)) ||
      (r = lens_opt_val(cmd, i, argc, argv, "--ranks", 0, "a rank list", &v))) {
    if (r < 0) return -1;
    size_t n;
    uint8_t *b = lens_parse_rank_list(v, &n);
    if (!b) return lens_cli_usage(cmd, "--rank wants ranks like 0, 0-7 or 0-7,64 (0..1000000)"), -1;
    if (f->ranks && f->n_ranks > n) { /* repeated: the union */
      for (size_t k = 0; k < n; k++) f->ranks[k] |= b[k];
      free(b);
    } else {
      for (size_t k = 0; f->ranks && k < f->n_ranks; k++) b[k] |= f->ranks[k];
      free(f->ranks);
      f->ranks = b;
      f->n_ranks = n;
    }
    return 1;
  }
  int since = 1;
  if ((r = lens_opt_val(cmd, i, argc, argv, "--since", 0, "a time", &v)) ||
      (since = 0, r = lens_opt_val(cmd, i, argc, argv, "--until", 0, "a time", &v))) {
    if (r < 0) return -1;
    uint64_t ns;
    if (lens_parse_duration_ns(v, &ns))
      return lens_cli_usage(cmd, "%s wants a time after the first event, e.g. 1.5s, 200ms, 30us, 500ns "
                                 "(a bare number is seconds), not '%s'",
                            since ? "--since" : "--until", v),
             -1;
    if (since) f->have_since = 1, f->since_ns = ns;
    else f->have_until = 1, f->until_ns = ns;
    return 1;
  }
  return 0;
}

int lens_filter_check(const char *cmd, const struct lens_filter *f) {
  if (f->have_since && f->have_until && f->until_ns < f->since_ns)
    return lens_cli_usage(cmd, "--until is before --since"), -1;
  return 0;
}

int lens_filter_any(const struct lens_filter *f) {
  return f->n_comms || f->n_funcs || f->ranks || f->have_since || f->have_until;
}

void lens_filter_free(struct lens_filter *f) {
  for (size_t i = 0; i < f->n_comms; i++) free(f->comms[i]);
  for (size_t i = 0; i < f->n_funcs; i++) free(f->funcs[i]);
  free(f->comms);
  free(f->funcs);
  free(f->ranks);
  memset(f, 0, sizeof *f);
}

int lens_top_option(const char *cmd, int *i, int argc, char **argv, long *top) {
  const char *v;
  int r = lens_opt_val(cmd, i, argc, argv, "--top", 0, "a number of rows", &v);
  if (r <= 0) return r;
  uint64_t n;
  char *end;
  n = strtoull(v, &end, 10);
  if (end == v || *end || v[0] == '-' || n > 1000000)
    return lens_cli_usage(cmd, "--top wants a number of rows 0..1000000 (0 = all), not '%s'", v), -1;
  *top = (long)n;
  return 1;
}

/* The operation an event belongs to: itself or its nearest ancestor that is
 * a Coll, P2p, CollApi, P2pApi or CeColl; NULL for none (ProxyCtrl, a group).
 * The walk starts at the event e or, when e is NULL, at the pending folded
 * step `step` (LENS_LOAD_FOLD_LATER), and goes through such steps as
 * through their events: under[i] is the step event i hangs under (NULL:
 * none does), each step's parent its op or another step. */
static const char *op_func(const struct lens_model *m, const struct lens_event *e, int32_t step, const int32_t *under) {
  for (int d = 0; d < 16; d++) {
    if (!e) {
      if (step < 0 || (size_t)step >= m->n_pending_steps) return NULL;
      const struct lens_pending_step *ps = &m->pending_steps[step];
      if (ps->parent >= 0) e = &m->events[ps->parent];
      else step = ps->parent_step;
      continue;
    }
    switch (e->type) {
    case LENS_T_COLL: return e->p.coll.func;
    case LENS_T_P2P: return e->p.p2p.func;
    case LENS_T_COLL_API: return e->p.coll_api.func;
    case LENS_T_P2P_API: return e->p.p2p_api.func;
    case LENS_T_CE_COLL: return e->p.ce_coll.func;
    default: break;
    }
    if (e->parent < 0 && !under) return NULL;
    step = e->parent < 0 ? under[e - m->events] : -1;
    e = e->parent >= 0 ? &m->events[e->parent] : NULL;
  }
  return NULL;
}

static const char *event_func(const struct lens_model *m, const struct lens_event *e) {
  return op_func(m, e, -1, NULL);
}

/* The communicator an event (or a pending folded step: the same fields)
 * counts for: its own, else its proxy thread's. */
static int32_t comm_of(const struct lens_model *m, int32_t comm, int32_t thread) {
  if (comm >= 0) return comm;
  if (thread >= 0 && (size_t)thread < m->n_threads) return m->threads[thread].proxy_comm;
  return -1;
}

static int32_t event_comm(const struct lens_model *m, const struct lens_event *e) {
  return comm_of(m, e->comm, e->thread);
}

static int comm_matches(const struct lens_comm *c, const char *want) {
  if (c->name[0] && !strcmp(c->name, want)) return 1;
  char *end;
  const char *h = strncasecmp(want, "0x", 2) ? want : want + 2;
  uint64_t id = strtoull(h, &end, 16);
  return end != h && !*end && id == c->comm_id;
}

/* The valid values, for the error line: "0x1a2b (tp), 0x3c4d, ..." into buf. */
const char *lens_filter_list_comms(const struct lens_model *m, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < m->n_comms && len + 1 < cap; i++) {
    int dup = 0;
    for (size_t k = 0; k < i && !dup; k++) dup = m->comms[k].comm_id == m->comms[i].comm_id;
    if (dup) continue;
    const char *nm = m->comms[i].name;
    char id[LENS_COMM_ID_LEN];
    int w = snprintf(buf + len, cap - len, "%s%s%s%s%s", len ? ", " : "", lens_fmt_comm_id(m->comms[i].comm_id, id),
                     nm[0] ? " (" : "", nm, nm[0] ? ")" : "");
    if (w < 0) break;
    len += (size_t)w;
  }
  if (len + 1 >= cap && cap > 4) strcpy(buf + cap - 4, "...");
  return buf;
}

/* Appends fn to the list in buf unless it is listed; 0, or -1 when full. */
static int list_add_one(char *buf, size_t cap, const char *fn, size_t n) {
  size_t len = strlen(buf);
  if (len + 1 >= cap) return -1;
  char key[80];
  snprintf(key, sizeof key, "%.*s", (int)(n < 79 ? n : 79), fn);
  size_t kl = strlen(key);
  int seen = 0; /* a listed name: at the start or after ", " */
  for (const char *p = buf; !seen && (p = strstr(p, key)); p++)
    seen = (p == buf || p[-1] == ' ') && (p[kl] == ',' || !p[kl]);
  if (seen) return 0;
  int w = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", key);
  if (w < 0 || len + (size_t)w + 1 >= cap) {
    if (cap > 4) strcpy(buf + cap - 4, "...");
    return -1;
  }
  return 0;
}

/* The operations of m's events, appended to the list in buf. */
static const char *list_funcs(const struct lens_model *m, char *buf, size_t cap) {
  for (size_t i = 0; i < m->n_events; i++) {
    const char *fn = event_func(m, &m->events[i]);
    if (fn && list_add_one(buf, cap, fn, strlen(fn))) break;
  }
  return buf;
}

void lens_filter_list_add(char *buf, size_t cap, const char *list) {
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n && list_add_one(buf, cap, p, n)) return;
    p += n;
    while (*p == ',' || *p == ' ') p++;
  }
}

/* Whether the selection keeps one event (or pending folded step) on its
 * own test: its communicator among the selected, its operation among
 * --func, its time against its host's origin (never stopped: open). */
static int kept_by(const struct lens_filter *f, const struct lens_model *m, const uint8_t *comm_ok,
                   const uint64_t *origin, int32_t comm, const char *func, int32_t proc, uint64_t start,
                   uint64_t stop) {
  if ((f->n_comms || f->ranks) && (comm < 0 || (size_t)comm >= m->n_comms || !comm_ok[comm])) return 0;
  if (f->n_funcs) {
    int ok = 0;
    for (size_t k = 0; func && k < f->n_funcs && !ok; k++) ok = !strcasecmp(func, f->funcs[k]);
    if (!ok) return 0;
  }
  if ((f->have_since || f->have_until) && proc >= 0 && (size_t)proc < m->n_procs && origin[proc] != UINT64_MAX) {
    uint64_t o = origin[proc];
    if (f->have_until && start > o + f->until_ns) return 0;
    if (f->have_since && stop && stop < o + f->since_ns) return 0;
  }
  return 1;
}

int lens_filter_apply(const char *cmd, const struct lens_filter *f, struct lens_model *m, unsigned flags) {
  return lens_filter_apply_ex(cmd, f, m, flags, NULL);
}

int lens_filter_apply_ex(const char *cmd, const struct lens_filter *f, struct lens_model *m, unsigned flags,
                         struct lens_filter_tally *t) {
  /* A model loaded with LENS_LOAD_FOLD_LATER holds its ProxySteps as
   * pending folded steps: each is an event of the traces, kept or left
   * out on the test an event is, and only the kept ones are counted into
   * their ops and threads (lens_model_fold). */
  size_t n_steps = m->n_pending_steps;
  if (t) t->total += m->n_events + n_steps;
  if (!lens_filter_any(f)) {
    if (t) t->kept += m->n_events + n_steps;
    if (lens_model_fold(m, NULL)) return lens_cli_error(cmd, "out of memory"), 1;
    return 0;
  }
  int32_t *under = NULL;
  uint8_t *step_keep = calloc(n_steps ? n_steps : 1, 1);
  if (!step_keep) return lens_cli_error(cmd, "out of memory"), 1;
  uint8_t *comm_ok = calloc(m->n_comms ? m->n_comms : 1, 1);
  uint64_t *origin = malloc((m->n_procs ? m->n_procs : 1) * sizeof *origin);
  uint8_t *keep = calloc(m->n_events ? m->n_events : 1, 1);
  int rc = 1;
  if (!comm_ok || !origin || !keep) goto out;
  /* Communicators: named by --comm, holding a --rank. */
  for (size_t k = 0; k < f->n_comms; k++) {
    int hit = 0;
    for (size_t i = 0; i < m->n_comms; i++) hit |= comm_matches(&m->comms[i], f->comms[k]);
    if (hit && t && t->comm_hit) t->comm_hit[k] = 1;
    if (!hit && !(flags & LENS_FILTER_PART)) {
      char have[512];
      rc = lens_cli_usage(cmd, "--comm %s: no such communicator in these traces (they have %s)", f->comms[k],
                          lens_filter_list_comms(m, have, sizeof have));
      goto out;
    }
  }
  for (size_t i = 0; i < m->n_comms; i++) {
    const struct lens_comm *c = &m->comms[i];
    int ok = !f->n_comms;
    for (size_t k = 0; k < f->n_comms && !ok; k++) ok = comm_matches(c, f->comms[k]);
    if (f->ranks) ok = ok && c->rank >= 0 && (size_t)c->rank < f->n_ranks && f->ranks[c->rank];
    comm_ok[i] = (uint8_t)ok;
  }
  for (size_t k = 0; k < f->n_funcs; k++) {
    int hit = 0;
    for (size_t i = 0; i < m->n_events && !hit; i++) {
      const char *fn = event_func(m, &m->events[i]);
      hit = fn && !strcasecmp(fn, f->funcs[k]);
    }
    if (hit && t && t->func_hit) t->func_hit[k] = 1;
    if (!hit && t && t->func_have && t->func_have_len) list_funcs(m, t->func_have, t->func_have_len);
    if (!hit && !(flags & LENS_FILTER_PART)) {
      char have[512] = "";
      rc = lens_cli_usage(cmd, "--func %s: no such operation in these traces (they have %s)", f->funcs[k],
                          list_funcs(m, have, sizeof have));
      goto out;
    }
  }
  /* Time origin: the first event of each host (its own CLOCK_MONOTONIC). */
  for (size_t p = 0; p < m->n_procs; p++) origin[p] = UINT64_MAX;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc >= 0 && e->start_mono_ns && e->start_mono_ns < origin[e->proc]) origin[e->proc] = e->start_mono_ns;
  }
  for (size_t i = 0; i < n_steps; i++) {
    const struct lens_pending_step *ps = &m->pending_steps[i];
    if (ps->proc >= 0 && (size_t)ps->proc < m->n_procs && ps->start_mono_ns && ps->start_mono_ns < origin[ps->proc])
      origin[ps->proc] = ps->start_mono_ns;
  }
  for (size_t p = 0; p < m->n_procs; p++)
    for (size_t q = 0; q < m->n_procs; q++)
      if (q != p && !strcmp(m->procs[p].host, m->procs[q].host) && origin[q] < origin[p]) origin[p] = origin[q];
  /* Pending folded steps are ancestors too: an event under one (a
   * NetPlugin) takes its operation through it, as through its event. */
  if (f->n_funcs && m->n_pending_children) {
    if (!(under = malloc(m->n_events * sizeof *under))) goto out;
    for (size_t i = 0; i < m->n_events; i++) under[i] = -1;
    for (size_t k = 0; k < m->n_pending_children; k++) {
      const struct lens_pending_child *c = &m->pending_children[k];
      if (c->event >= 0 && (size_t)c->event < m->n_events) under[c->event] = c->step;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    keep[i] = kept_by(f, m, comm_ok, origin, event_comm(m, e), f->n_funcs ? op_func(m, e, -1, under) : NULL,
                      e->proc, e->start_mono_ns, e->stop_mono_ns);
  }
  for (size_t i = 0; i < n_steps; i++) {
    const struct lens_pending_step *ps = &m->pending_steps[i];
    const char *fn = f->n_funcs ? op_func(m, NULL, (int32_t)i, under) : NULL;
    step_keep[i] = kept_by(f, m, comm_ok, origin, comm_of(m, ps->comm, ps->thread), fn, ps->proc, ps->start_mono_ns,
                           ps->stop_mono_ns);
    kept += step_keep[i];
  }
  /* The groups around what is kept stay (a group is no operation of its
   * own). An operation is not kept for a child: one whose ProxyOp never
   * stopped would otherwise count in every later window. */
  for (size_t i = 0; i < m->n_events; i++) {
    if (keep[i] != 1) continue;
    for (int32_t a = m->events[i].parent, d = 0; a >= 0 && d < 16 && !keep[a]; a = m->events[a].parent, d++) {
      int t = m->events[a].type;
      if (t != LENS_T_GROUP && t != LENS_T_GROUP_API) break;
      keep[a] = 2;
    }
  }
  for (size_t i = 0; i < m->n_events; i++) kept += keep[i] != 0;
  size_t total = m->n_events + n_steps;
  if (lens_model_keep(m, keep) || lens_model_fold(m, step_keep)) goto out;
  if (t) t->kept += kept;
  /* With a tally, "of" says its total: a model loaded with a window holds
   * fewer events than the traces (the pass driver adds the others). */
  if (!(flags & LENS_FILTER_PART))
    fprintf(stderr, "nccl-lens %s: the selection keeps %zu of %llu events\n", cmd, kept,
            (unsigned long long)(t ? t->total : total));
  rc = 0;
out:
  if (rc == 1) lens_cli_error(cmd, "out of memory");
  free(comm_ok);
  free(origin);
  free(keep);
  free(step_keep);
  free(under);
  return rc;
}
