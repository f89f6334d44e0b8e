/* The one pool the commands that read many inputs share (tools/cli/work_pool.h):
 * on 4 threads, with later items finishing first, every item runs once and
 * its stdout and error lines come out in input order, the same as on 1
 * thread; stop_on_fail takes no item after a failure and says nothing after
 * the first failed item; without it every item runs and everything is said,
 * the status 1; no items, no output. Runs under TSan (label threads). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/work_pool.h"

#define N 48

struct items {
  atomic_int ran[N];
  int fail_at[2]; /* items that fail, -1 none */
};

/* Item i: later items sleep less, so on several threads they finish first. */
static int item(void *ctx, size_t i, FILE *out) {
  struct items *it = ctx;
  atomic_fetch_add(&it->ran[i], 1);
  struct timespec ts = {0, (long)(N - i) * 100000L};
  nanosleep(&ts, NULL);
  fprintf(out, "out %zu\n", i);
  if (i % 8 == 0) lens_cli_error("pooltest", "note %zu", i);
  if ((int)i == it->fail_at[0] || (int)i == it->fail_at[1]) return lens_cli_error("pooltest", "bad %zu", i), -1;
  return 0;
}

/* Runs the pool with fd 1 and 2 sent to files; their text in *o and *e (freed by the caller). */
static int run_captured(struct lens_cli_pool *p, char **o, char **e) {
  FILE *fo = tmpfile(), *fe = tmpfile();
  assert_non_null(fo);
  assert_non_null(fe);
  fflush(stdout), fflush(stderr);
  int so = dup(1), se = dup(2);
  dup2(fileno(fo), 1), dup2(fileno(fe), 2);
  int rc = lens_cli_pool_run(p);
  fflush(stdout), fflush(stderr);
  dup2(so, 1), dup2(se, 2);
  close(so), close(se);
  FILE *fs[2] = {fo, fe};
  char **dst[2] = {o, e};
  for (int k = 0; k < 2; k++) {
    fseek(fs[k], 0, SEEK_END);
    long len = ftell(fs[k]);
    rewind(fs[k]);
    *dst[k] = calloc((size_t)len + 1, 1);
    assert_int_equal(fread(*dst[k], 1, (size_t)len, fs[k]), (size_t)len);
    fclose(fs[k]);
  }
  return rc;
}

/* The stdout and stderr that items [0, last] say, in order. */
static void expected(int last, int fail_a, int fail_b, char *o, size_t ol, char *e, size_t el) {
  size_t oo = 0, eo = 0;
  o[0] = e[0] = 0;
  for (int i = 0; i <= last; i++) {
    oo += (size_t)snprintf(o + oo, ol - oo, "out %d\n", i);
    if (i % 8 == 0) eo += (size_t)snprintf(e + eo, el - eo, "nccl-lens pooltest: note %d\n", i);
    if (i == fail_a || i == fail_b) eo += (size_t)snprintf(e + eo, el - eo, "nccl-lens pooltest: bad %d\n", i);
  }
}

static void check(long threads, int stop, int fail_a, int fail_b) {
  struct items it = {.fail_at = {fail_a, fail_b}};
  struct lens_cli_pool p = {.cmd = "pooltest", .n = N, .threads = threads, .stop_on_fail = stop, .fn = item,
                            .ctx = &it};
  char *o, *e, want_o[4096], want_e[4096];
  int rc = run_captured(&p, &o, &e);
  int failing = fail_a >= 0 || fail_b >= 0;
  assert_int_equal(rc, failing ? 1 : 0);
  int last = stop && fail_a >= 0 ? fail_a : N - 1; /* fail_a is the first failure */
  expected(last, fail_a, fail_b, want_o, sizeof want_o, want_e, sizeof want_e);
  assert_string_equal(o, want_o);
  assert_string_equal(e, want_e);
  for (int i = 0; i < N; i++) {
    int ran = atomic_load(&it.ran[i]);
    if (i <= last) assert_int_equal(ran, 1); /* every item said ran, once */
    else assert_true(ran <= 1);              /* after a failure: stopped, or raced it and not said */
  }
  if (stop && fail_a >= 0 && threads == 1)
    for (int i = fail_a + 1; i < N; i++) assert_int_equal(atomic_load(&it.ran[i]), 0); /* none taken after it */
  free(o), free(e);
}

static void test_order(void **s) {
  (void)s;
  check(1, 1, -1, -1);
  check(4, 1, -1, -1);
  check(0, 0, -1, -1); /* the online cores */
}

static void test_stop_on_fail(void **s) {
  (void)s;
  check(1, 1, 10, -1);
  check(4, 1, 10, -1);
}

static void test_all_said(void **s) {
  (void)s;
  check(1, 0, 10, 30);
  check(4, 0, 10, 30);
}

static void test_none(void **s) {
  (void)s;
  struct items it = {.fail_at = {-1, -1}};
  struct lens_cli_pool p = {.cmd = "pooltest", .n = 0, .threads = 4, .stop_on_fail = 1, .fn = item, .ctx = &it};
  char *o, *e;
  assert_int_equal(run_captured(&p, &o, &e), 0);
  assert_string_equal(o, "");
  assert_string_equal(e, "");
  free(o), free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_stop_on_fail),
      cmocka_unit_test(test_all_said),
      cmocka_unit_test(test_none),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
