/* The job tables stay within 120 columns whatever a straggler's causes
 * (docs/cli.md): a straggler late for every reason on a loaded machine once
 * ran its causes list past 120 columns (a CI's test_job_views). The tables
 * are printed from a hand-made job view, so every cause is present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job.h"
#include "job/job_print.h"
#include "../lens_test_file.h"
#include "lensread.h"

static void test_all_causes_wrap(void **s) {
  (void)s;
  struct lens_model m;
  memset(&m, 0, sizeof m);
  struct lens_job j;
  memset(&j, 0, sizeof j);
  struct lens_job_row row = {.comm_id = 0xd1fd171bd81a5d20ULL, .func = "AllReduce", .count = 24, .top_last_rank = 1,
                             .top_last_count = 24};
  struct lens_job_straggler st[2];
  memset(st, 0, sizeof st);
  for (int k = 0; k < 2; k++) {
    st[k].comm_id = row.comm_id;
    st[k].user_tag = 4000000000ULL;
    st[k].rank = 12345;
    st[k].wait_caused_ns = 123456789012345ULL;
    st[k].times_last = 1234567;
    for (int c = 1; c < 8; c++) st[k].cause_count[c] = 100000 + (uint64_t)c;
  }
  j.rows = &row, j.n_rows = 1;
  j.stragglers = &st[0], j.n_stragglers = 1;
  j.tag_stragglers = &st[1], j.n_tag_stragglers = 1;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  lens_job_print_headline(f, &m, &j);
  fclose(f);
  fprintf(stderr, "%s", buf);
  assert_true(lens_test_max_line(buf) <= 120);
  /* every cause of both tables is there, each once per table */
  for (int c = 1; c < 8; c++) {
    char item[64];
    snprintf(item, sizeof item, "%s %d", lens_job_cause_name(c), 100000 + c);
    const char *a = strstr(buf, item);
    assert_non_null(a);
    assert_non_null(strstr(a + 1, item));
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_all_causes_wrap)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
