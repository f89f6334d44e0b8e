/* The ground truth agrees with what the plugin received: one emitted op per
 * Coll/P2p start, the same KernelCh pTimers, the proxy tids that made the
 * ProxyCtrl calls, and epoch-like GPU clocks a few seconds apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "replay_log.h"
#include "../lens_test_file.h"

static char *slurp(const char *path) { /* the truth file must be there */
  char *s = lens_test_slurp(path, NULL);
  assert_non_null(s);
  return s;
}

/* All integer values of "key": in s. */
static int values(const char *s, const char *key, uint64_t *out, int max) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  int n = 0;
  for (const char *p = s; (p = strstr(p, k)) != NULL && n < max; p += strlen(k)) out[n++] = strtoull(p + strlen(k), NULL, 10);
  return n;
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void truth_matches_calls(void **state) {
  (void)state;
  char path[] = "/tmp/replay-truth-XXXXXX";
  close(mkstemp(path));
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  o.iters = 2;
  o.truth = path;
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  char *t = slurp(path);
  unlink(path);
  assert_non_null(strstr(t, "\"schema\":\"nccl-lens-replay-truth/1\""));

  static uint64_t kt[4096], tt[4096], tids[64];
  int nk = 0, colls = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (strcmp(l->call, "start")) continue;
    if (l->type == 2 || l->type == 4) colls++;
    if (l->type == 64) kt[nk++] = strtoull(strstr(l->rest, "ptimer=") + 7, NULL, 10);
  }
  int emitted = 0;
  for (const char *p = t; (p = strstr(p, "\"emitted\":true")) != NULL; p++) emitted++;
  assert_int_equal(emitted, colls);

  int nt = values(t, "start_ptimer", tt, 4096);
  assert_true(nk > 0);
  assert_int_equal(nt, nk);
  qsort(kt, (size_t)nk, sizeof kt[0], cmp);
  qsort(tt, (size_t)nt, sizeof tt[0], cmp);
  for (int i = 0; i < nk; i++) assert_true(kt[i] == tt[i]);

  int np = values(t, "proxy_tid", tids, 64);
  assert_true(np >= 2);
  for (int i = 0; i < lg.n; i++) /* every ProxyCtrl came from a proxy named in the truth */
    if (!strcmp(lg.l[i].call, "start") && lg.l[i].type == 32) {
      bool found = false;
      for (int k = 0; k < np; k++) found |= (int)tids[k] == lg.l[i].tid;
      assert_true(found);
    }

  uint64_t off[8];
  assert_int_equal(values(t, "gpu_offset_ns", off, 8), 2);
  for (int i = 0; i < 2; i++) assert_true(off[i] > 1690000000000000000ULL && off[i] < 1800000000000000000ULL);
  uint64_t d = off[0] > off[1] ? off[0] - off[1] : off[1] - off[0];
  assert_true(d > 1000000000ULL); /* GPUs of one node are seconds apart */
  free(t);
  rl_free(&lg);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(truth_matches_calls)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
