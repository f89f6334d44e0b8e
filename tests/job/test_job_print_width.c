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
#include "job/align_print.h"
#include "cli/format.h"
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
  /* every cause of both tables is there, each once per table, in words (docs/cli.md: words in text) */
  for (int c = 1; c < 8; c++) {
    char item[64];
    snprintf(item, sizeof item, "%s %d", lens_fmt_cause_words(lens_job_cause_name(c)), 100000 + c);
    assert_null(strchr(lens_fmt_cause_words(lens_job_cause_name(c)), '_'));
    const char *a = strstr(buf, item);
    assert_non_null(a);
    assert_non_null(strstr(a + 1, item));
  }
  free(buf);
}

/* The hosts table (issue 26: 130 columns) and its notes at their widest:
 * 63-character host names, UTC offsets with every ns digit, bounds in fmt_ns's
 * widest form, "sync points", counts of 7 digits. */
static void test_hosts_table_width(void **s) {
  (void)s;
  struct lens_model m;
  memset(&m, 0, sizeof m);
  char longname[64];
  memset(longname, 'h', 63);
  longname[63] = 0;
  memcpy(longname, "gpu-node-", 9);
  struct lens_align_host hosts[2];
  memset(hosts, 0, sizeof hosts);
  for (int h = 0; h < 2; h++) {
    hosts[h] = (struct lens_align_host){.host = h ? longname : "short-host", .boot_id = "72493335-aaaa",
                                        .n_procs = 99999, .n_ranks = 99999, .source = LENS_ALIGN_SYNC,
                                        .offset_ns = 1795877875490361889LL, .drift_ppm = -999.99,
                                        .drift_err_ppm = 500.0, .bound_ns = 9999999999ull,
                                        .coarse_bound_ns = 9999999ull, .n_sync = 99999, .n_oneway = 9999999};
  }
  struct lens_align a;
  memset(&a, 0, sizeof a);
  a.hosts = hosts, a.n_hosts = 2, a.ref = 1, a.time_base_realtime = 1, a.ref_utc_bound_ns = 9999999999ull;
  a.sync_instances = 123456789, a.end_spread_ns = 123456789, a.oneway_pairs = 123456789, a.rejected_points = 12345;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  lens_align_print_text(f, &m, &a, 0);
  fclose(f);
  fprintf(stderr, "%s", buf);
  assert_true(lens_test_max_line(buf) <= 120);
  assert_non_null(strstr(buf, "  short-host "));
  assert_non_null(strstr(buf, "  gpu-node-hhhhhhhhh.. ")); /* cut to 18 + "..": the JSON has it whole */
  assert_non_null(strstr(buf, "1795877875.490361889"));
  assert_non_null(strstr(buf, longname)); /* the time base names the reference host whole (wrapped) */
  free(buf);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_all_causes_wrap), cmocka_unit_test(test_hosts_table_width)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
