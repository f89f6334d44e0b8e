/* See timeline_check.h. Times are compared in integer ns (ts and dur are us
 * with three decimals), so "nests" means exactly that. */
#include "timeline_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini_json.h"

struct x {
  int64_t pid, tid, s, e;
  int rank;
};

static int cmp_x(const void *pa, const void *pb) {
  const struct x *a = pa, *b = pb;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return (a->e < b->e) - (a->e > b->e); /* the longer first */
}

static int64_t ns_of(const struct mj *o, const char *k) {
  const struct mj *v = mj_get(o, k);
  return v && v->type == MJ_NUM ? (int64_t)llround(v->num * 1000.0) : INT64_MIN;
}

int tl_check_file(const char *path, struct tl_check *c) {
  memset(c, 0, sizeof *c);
  c->min_ts_ns = INT64_MAX;
  c->max_end_ns = INT64_MIN;
  struct mj *doc = mj_parse_file(path);
  if (!doc) return -1;
  const struct mj *ev = mj_get(doc, "traceEvents");
  if (!ev || ev->type != MJ_ARR) return mj_free(doc), -1;
  struct x *xs = malloc((ev->n + 1) * sizeof *xs);
  size_t nx = 0;
  for (const struct mj *e = ev->child; e; e = e->next) {
    const char *ph = mj_str(e, "ph");
    if (!ph || strcmp(ph, "X")) continue;
    struct x v = {mj_int(e, "pid", -1), mj_int(e, "tid", -1), ns_of(e, "ts"), 0, -1};
    int64_t d = ns_of(e, "dur");
    v.e = v.s + (d == INT64_MIN ? 0 : d);
    const struct mj *args = mj_get(e, "args");
    if (args) v.rank = (int)mj_int(args, "rank", -1);
    if (v.rank >= 0 && v.rank < 4096) c->ranks_seen[v.rank]++;
    if (v.s < c->min_ts_ns) c->min_ts_ns = v.s;
    if (v.e > c->max_end_ns) c->max_end_ns = v.e;
    xs[nx++] = v;
  }
  qsort(xs, nx, sizeof *xs, cmp_x);
  c->slices = nx;
  /* nesting, per track: a stack of open ends */
  int64_t stack[256];
  int depth = 0;
  for (size_t i = 0; i < nx; i++) {
    if (i == 0 || xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid) depth = 0, c->tracks++;
    while (depth && stack[depth - 1] <= xs[i].s) depth--;
    if (depth && xs[i].e > stack[depth - 1]) {
      if (!c->nest_violations++)
        snprintf(c->first_violation, sizeof c->first_violation,
                 "pid %lld tid %lld: [%lld, %lld] ns starts inside a slice ending at %lld and ends after it",
                 (long long)xs[i].pid, (long long)xs[i].tid, (long long)xs[i].s, (long long)xs[i].e,
                 (long long)stack[depth - 1]);
      continue;
    }
    if (depth < 256) stack[depth++] = xs[i].e;
  }
  /* flows: bound to the innermost slice of their track containing ts */
  size_t cap = 0;
  for (const struct mj *e = ev->child; e; e = e->next) {
    const char *ph = mj_str(e, "ph");
    if (!ph || (strcmp(ph, "s") && strcmp(ph, "t") && strcmp(ph, "f"))) continue;
    int64_t id = mj_int(e, "id", -1), pid = mj_int(e, "pid", -1), tid = mj_int(e, "tid", -1), ts = ns_of(e, "ts");
    size_t k = 0;
    while (k < c->n_flows && c->flows[k].id != id) k++;
    if (k == c->n_flows) {
      if (c->n_flows == cap) c->flows = realloc(c->flows, (cap = cap ? cap * 2 : 64) * sizeof *c->flows);
      memset(&c->flows[k], 0, sizeof c->flows[k]);
      c->flows[k].id = id;
      c->n_flows++;
    }
    struct tl_flow *fl = &c->flows[k];
    fl->events++;
    const struct x *in = NULL;
    for (size_t i = 0; i < nx; i++) /* the last (innermost) slice containing ts */
      if (xs[i].pid == pid && xs[i].tid == tid && xs[i].s <= ts && ts <= xs[i].e) in = &xs[i];
    if (!in) {
      fl->unbound++;
      continue;
    }
    size_t r = 0;
    while (r < fl->n_ranks && fl->ranks[r] != in->rank) r++;
    if (r == fl->n_ranks && r < 64) fl->ranks[fl->n_ranks++] = in->rank;
  }
  free(xs);
  mj_free(doc);
  return 0;
}

void tl_check_free(struct tl_check *c) {
  free(c->flows);
  c->flows = NULL;
}
