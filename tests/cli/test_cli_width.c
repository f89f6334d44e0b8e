/* Every text output fits 120 columns on a big job too, and net's
 * connections table stays aligned there: a 1024-rank lens-gen-job (8 hosts,
 * 300 k events), `net --top 0` lists 1024 connections, whose row numbers
 * reach 4 digits and links "r1000 -> r1001" (they ran past their 2- and
 * 12-column cells, shifting the rest of the row); summary, job, validate and
 * hang on the same job keep within 120 columns (the golden outputs are
 * checked by tests/golden/width.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lens_test_file.h"
#include "gen_job_cli.h"

static int setup(void **state) {
  (void)state;
  return gen_job_make("cli-width", 8);
}

/* The column where header word w ends (its last character + 1), or -1. */
static long end_of(const char *line, size_t len, const char *w) {
  for (size_t i = 0; i + strlen(w) <= len; i++)
    if (!strncmp(line + i, w, strlen(w))) return (long)(i + strlen(w));
  return -1;
}

static void test_net_table_aligned(void **state) {
  (void)state;
  char *t = gen_job_run("net --top 0");
  if (lens_test_max_line(t) > 120) fail_msg("net wider than 120 columns");
  const char *h = strstr(t, "\n    # comm");
  assert_non_null(h); /* "#" right-aligned in 4 columns: 1024 rows */
  h++;
  const char *eol = strchr(h, '\n');
  size_t hl = (size_t)(eol - h);
  /* right-aligned cells end where their header ends; "dominant" starts where its header does */
  long gbps = end_of(h, hl, "GB/s"), steps = end_of(h, hl, "steps"), dom = end_of(h, hl, "dominant") - 8;
  assert_true(gbps > 0 && steps > 0 && dom > 0);
  size_t rows = 0, big_link = 0;
  for (const char *r = eol + 1; *r && *r != '\n' && strncmp(r, "  (", 3); r = strchr(r, '\n') + 1) {
    const char *e = strchr(r, '\n');
    assert_non_null(e);
    long len = (long)(e - r);
    assert_true(len > dom);
    if (r[gbps - 1] == ' ' || r[gbps] != ' ' || r[steps - 1] == ' ' || r[steps] != ' ' || r[dom - 1] != ' ' ||
        r[dom] == ' ')
      fail_msg("row %zu out of its columns:\n%.*s\n%.*s", rows + 1, (int)hl, h, (int)len, r);
    big_link += strstr(r, "r1000 -> ") != NULL && strstr(r, "r1000 -> ") < e;
    rows++;
  }
  assert_int_equal(rows, 1024);
  assert_true(big_link >= 1);
  free(t);
}

static void test_views_within_120(void **state) {
  (void)state;
  const char *cmds[] = {"summary", "job --all", "validate", "hang"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    char *t = gen_job_run(cmds[i]);
    size_t w = lens_test_max_line(t);
    if (w > 120) fail_msg("%s: a line of %zu columns", cmds[i], w);
    free(t);
  }
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_net_table_aligned), cmocka_unit_test(test_views_within_120)};
  return cmocka_run_group_tests(t, setup, NULL);
}
