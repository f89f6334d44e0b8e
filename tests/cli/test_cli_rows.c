/* A 1,024-rank job's text views stay a page, not a thousand rows: summary's
 * proxy-thread, drops, clocks and hosts tables, and job's hosts table, list at
 * most 16 rows (the ones that say most: the reference host first), say how
 * many were left out, and --all lists every one. Before, summary printed
 * 3,270 lines on a 1,024-rank, 128-host job (1,024 rows of each per-process
 * table, 1,024 of them all-zero drop counters). report's Markdown has the
 * same cap on its tables with a row per rank, clock map and proxy thread, and
 * instead of a row per process and comm init says what the processes share,
 * counted, and a row per communicator (7,315 lines on that job before, 213
 * now). The job:
 * lens-gen-job, 1024 ranks on 32 hosts, 300 k events. */
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
  return gen_job_make("cli-rows", 32);
}

static size_t count(const char *t, const char *needle) {
  size_t n = 0;
  for (const char *p = t; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static size_t lines(const char *t) { return count(t, "\n"); }

/* Rows of the hosts table: lines after its header up to the first that is not a host row. */
static size_t host_rows(const char *t, char *first, size_t first_len) {
  const char *h = strstr(t, "\n  host ");
  assert_non_null(h);
  size_t n = 0;
  for (const char *r = strchr(h + 1, '\n') + 1; !strncmp(r, "  gen-host", 10); r = strchr(r, '\n') + 1) {
    if (!n) snprintf(first, first_len, "%.*s", (int)strcspn(r + 2, " "), r + 2);
    n++;
  }
  return n;
}

static void test_summary_capped(void **state) {
  (void)state;
  char *t = gen_job_run("summary");
  if (lines(t) > 200) fail_msg("summary: %zu lines on a 1024-rank job", lines(t));
  assert_int_equal(count(t, " ncclProxy "), 16);
  assert_non_null(strstr(t, "  (1008 more proxy threads not listed: --all lists every one; --json has all)\n"));
  assert_non_null(strstr(t, "  no drops in any of the 1024 processes (--all lists every one)\n"));
  assert_null(strstr(t, "ring_full")); /* no table of zeros */
  assert_int_equal(count(t, " NTP synced"), 16);
  assert_non_null(strstr(t, "  (1008 more processes not listed: --all lists every one; --json has all)\n"));
  char first[64] = "";
  assert_int_equal(host_rows(t, first, sizeof first), 16);
  assert_string_equal(first, "gen-host000"); /* the reference host leads */
  assert_non_null(strstr(t, "  (16 more hosts not listed: --all lists every one; --json has all)\n"));
  if (lens_test_max_line(t) > 120) fail_msg("summary wider than 120 columns");
  free(t);
}

static void test_summary_all(void **state) {
  (void)state;
  char *t = gen_job_run("summary --all");
  assert_int_equal(count(t, " ncclProxy "), 1024);
  assert_int_equal(count(t, " NTP synced"), 1024);
  assert_int_equal(count(t, "ring_full"), 1);
  char first[64] = "";
  assert_int_equal(host_rows(t, first, sizeof first), 32);
  assert_null(strstr(t, "not listed"));
  free(t);
}

static void test_job_hosts(void **state) {
  (void)state;
  char first[64] = "";
  char *t = gen_job_run("job");
  assert_int_equal(host_rows(t, first, sizeof first), 16);
  assert_non_null(strstr(t, "  (16 more hosts not listed: --all lists every one; --json has all)\n"));
  free(t);
  t = gen_job_run("job --all");
  assert_int_equal(host_rows(t, first, sizeof first), 32);
  assert_null(strstr(t, "more hosts not listed"));
  free(t);
}

static void test_report_capped(void **state) {
  (void)state;
  char *t = gen_job_run("report");
  if (lines(t) > 400) fail_msg("report: %zu lines on a 1024-rank job", lines(t));
  /* a row per process and per comm init would be 1,024 alike: what they share, counted, and a row per comm */
  assert_non_null(strstr(t, "\nWhat the 1024 processes share "));
  assert_non_null(strstr(t, "\n- clean end: yes (all 1024)\n"));
  assert_non_null(strstr(t, "\nNo process differs from the others: "));
  assert_non_null(strstr(t, "\n1024 communicator init(s) in 1 communicator(s) "));
  assert_non_null(strstr(t, " | 1024 | 1024 | none | none | ")); /* every init, finalized (COMM_FINI) */
  assert_null(strstr(t, "more processes not listed"));
  assert_null(strstr(t, "more communicator inits not listed"));
  assert_non_null(strstr(t, "\n1008 more proxy threads not listed: --all lists every one.\n"));
  assert_non_null(strstr(t, "## Data losses\n\nNo drops in any of the 1024 processes (--all lists every one).\n"));
  assert_int_equal(count(t, " | ncclProxy | "), 16);
  free(t);
  t = gen_job_run("report --all");
  assert_int_equal(count(t, " | ncclProxy | "), 1024);
  assert_int_equal(count(t, "\n| world | 0x5ca1ab1e00000001 | "), 1024); /* every comm init */
  assert_int_equal(count(t, " | not finalized |"), 0);                     /* each finalized (COMM_FINI) */
  assert_int_equal(count(t, "| process | ring_full |"), 1); /* the drops table, zeros and all */
  assert_null(strstr(t, "not listed"));
  free(t);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_summary_capped), cmocka_unit_test(test_summary_all),
                                 cmocka_unit_test(test_job_hosts), cmocka_unit_test(test_report_capped)};
  return cmocka_run_group_tests(t, setup, NULL);
}
