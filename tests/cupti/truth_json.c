/* See truth_json.h. Not a general JSON parser: it walks the arrays by brace
 * depth and reads numeric fields by key inside each object. */
#include "truth_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *obj_end(const char *p) { /* p at '{' */
  int depth = 0;
  for (; *p; p++) {
    if (*p == '"') {
      for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
      continue;
    }
    if (*p == '{') depth++;
    if (*p == '}' && --depth == 0) return p;
  }
  return NULL;
}

/* Numeric value of "key": within [b, e) at depth 1, or def. */
static double num(const char *b, const char *e, const char *key, double def) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  for (const char *p = b; p && p < e; p++) {
    p = strstr(p, pat);
    if (!p || p >= e) break;
    const char *v = p + strlen(pat);
    if (!strncmp(v, "true", 4)) return 1;
    if (!strncmp(v, "false", 5)) return 0;
    return strtod(v, NULL);
  }
  return def;
}

static long long inum(const char *b, const char *e, const char *key, long long def) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = strstr(b, pat);
  if (!p || p >= e) return def;
  const char *v = p + strlen(pat);
  if (!strncmp(v, "true", 4)) return 1;
  if (!strncmp(v, "false", 5)) return 0;
  return strtoll(v, NULL, 10);
}

static unsigned long long unum(const char *b, const char *e, const char *key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = strstr(b, pat);
  return p && p < e ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* Calls fn for each object of the array "key" between b and e. */
static void each(const char *b, const char *e, const char *key, void (*fn)(void *, const char *, const char *), void *ctx) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":[", key);
  const char *p = strstr(b, pat);
  if (!p || p >= e) return;
  p += strlen(pat);
  while (p < e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == ',')) p++;
    if (p >= e || *p != '{') return;
    const char *q = obj_end(p);
    if (!q) return;
    fn(ctx, p, q);
    p = q + 1;
  }
}

struct walk { struct truth *t; int proc; size_t cap_ops, cap_kch; };

static void on_rank(void *c, const char *b, const char *e) {
  struct walk *w = c;
  if (w->t->n_ranks >= 64) return;
  struct truth_rank *r = &w->t->ranks[w->t->n_ranks++];
  r->rank = (int)inum(b, e, "rank", -1);
  r->gpu_offset_ns = inum(b, e, "gpu_offset_ns", 0);
  r->gpu_drift_ppm = num(b, e, "gpu_drift_ppm", 0);
}

static void on_op(void *c, const char *b, const char *e) {
  struct walk *w = c;
  struct truth *t = w->t;
  if (t->n_ops == w->cap_ops) {
    w->cap_ops = w->cap_ops ? 2 * w->cap_ops : 256;
    t->ops = realloc(t->ops, w->cap_ops * sizeof(*t->ops));
  }
  t->ops[t->n_ops++] = (struct truth_op){(int)inum(b, e, "rank", -1), w->proc, (int)inum(b, e, "graph_replay", -1),
                                         inum(b, e, "launch_start_ns", 0), inum(b, e, "launch_end_ns", 0),
                                         inum(b, e, "kernel_start_ns", 0), inum(b, e, "kernel_end_ns", 0)};
}

static void on_kch(void *c, const char *b, const char *e) {
  struct walk *w = c;
  struct truth *t = w->t;
  if (t->n_kch == w->cap_kch) {
    w->cap_kch = w->cap_kch ? 2 * w->cap_kch : 256;
    t->kch = realloc(t->kch, w->cap_kch * sizeof(*t->kch));
  }
  t->kch[t->n_kch++] = (struct truth_kch){(int)inum(b, e, "rank", -1), (int)inum(b, e, "channel", -1),
                                          (int)inum(b, e, "op", -1), (int)inum(b, e, "overrun", 0), w->proc,
                                          unum(b, e, "start_ptimer"), unum(b, e, "stop_ptimer"),
                                          inum(b, e, "true_start_ns", 0), inum(b, e, "true_stop_ns", 0),
                                          inum(b, e, "notice_start_ns", 0), unum(b, e, "counter"),
                                          unum(b, e, "start_counter"), unum(b, e, "stop_counter")};
}

static void on_process(void *c, const char *b, const char *e) {
  struct walk *w = c;
  each(b, e, "ranks", on_rank, w);
  each(b, e, "ops", on_op, w);
  each(b, e, "kernel_ch", on_kch, w);
  w->proc++;
}

int truth_load(struct truth *t, const char *path) {
  memset(t, 0, sizeof(*t));
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = s ? fread(s, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!s) return -1;
  s[got] = 0;
  struct walk w = {.t = t};
  each(s, s + got, "processes", on_process, &w);
  free(s);
  return t->n_ranks && t->n_kch ? 0 : -1;
}

void truth_free(struct truth *t) {
  free(t->ops);
  free(t->kch);
}
