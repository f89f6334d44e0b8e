/* Difference constraints x_a - x_b <= ub[a][b] (job_align.h): the tightest
 * interval of x_h - x_ref is [-dist(h -> ref), dist(ref -> h)] in the graph
 * with an edge b -> a of weight ub[a][b]. Bellman-Ford, dense: hosts are at
 * most a few thousand, and it stops as soon as a round changes nothing. */
#include <stdint.h>
#include <stdlib.h>

#include "job_align.h"

static int64_t add_sat(int64_t a, int64_t b) {
  if (a == INT64_MAX || b == INT64_MAX) return INT64_MAX;
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  if (b < 0 && a < INT64_MIN + 1 - b) return INT64_MIN + 1;
  return a + b;
}

/* dist[v] from ref; forward: edge c -> v weight ub[v][c]; backward: edge
 * v -> c weight ub[c][v] walked from ref (path v -> ... -> ref). -1 on a
 * negative cycle. */
static int relax(size_t n, const int64_t *ub, size_t ref, int forward, int64_t *dist) {
  for (size_t v = 0; v < n; v++) dist[v] = INT64_MAX;
  dist[ref] = 0;
  for (size_t round = 0; round <= n; round++) {
    int changed = 0;
    for (size_t c = 0; c < n; c++) {
      if (dist[c] == INT64_MAX) continue;
      for (size_t v = 0; v < n; v++) {
        int64_t w = forward ? ub[v * n + c] : ub[c * n + v];
        if (v == c || w == INT64_MAX) continue;
        int64_t d = add_sat(dist[c], w);
        if (d < dist[v]) dist[v] = d, changed = 1;
      }
    }
    if (!changed) return 0;
  }
  return -1; /* still shrinking after n rounds */
}

int lens_align_solve(size_t n, const int64_t *ub, size_t ref, int64_t *lo, int64_t *hi) {
  if (ref >= n) return -1;
  for (size_t v = 0; v < n; v++) /* x_v - x_v <= negative: a contradiction within one host */
    if (ub[v * n + v] < 0) return -1;
  int64_t *back = malloc(n * sizeof *back);
  if (!back) return -1;
  int rc = 0;
  if (relax(n, ub, ref, 1, hi) || relax(n, ub, ref, 0, back)) rc = -1;
  for (size_t v = 0; v < n && !rc; v++) {
    lo[v] = back[v] == INT64_MAX ? INT64_MIN : -back[v];
    if (lo[v] != INT64_MIN && hi[v] != INT64_MAX && lo[v] > hi[v]) rc = -1;
  }
  free(back);
  return rc;
}
