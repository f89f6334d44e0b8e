/* The sched page (tools/sched/sched_page.h): what lens_sched_page_write
 * writes reads back field for field, at the types' limits too; lines with a
 * number past its type, a sign, a stray word or a missing field are skipped
 * (the agent reads whatever file sits in the directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "sched/sched_page.h"

static struct lens_sched_page page, back;

static void test_round_trip(void **state) {
  (void)state;
  char dir[256], path[300];
  lens_test_tmpdir(dir, sizeof dir, "sched-page");
  memset(&page, 0, sizeof page);
  struct lens_sched_sample s = {.start_mono_ns = 10, .end_mono_ns = 25, .kind = LENS_SCHED_RUNQ_WAIT,
                                .host_pid = UINT32_MAX, .host_tid = 7, .ns_tid = 3};
  lens_sched_page_add(&page, &s, 1);
  s.kind = LENS_SCHED_PREEMPT, s.host_tid = 8, s.end_mono_ns = UINT64_MAX, s.start_mono_ns = 0;
  lens_sched_page_add(&page, &s, 2);
  char why[128];
  int dfd = lens_sched_page_open_dir(dir, 1, why, sizeof why);
  assert_true(dfd >= 0);
  assert_int_equal(lens_sched_page_write(&page, dfd, 50000), 0);
  close(dfd);
  snprintf(path, sizeof path, "%s/%d.sched", dir, (int)getpid());
  uint32_t pid = 0;
  uint64_t updated = 0;
  assert_int_equal(lens_sched_page_read(path, &back, &pid, &updated), 0);
  assert_int_equal(pid, (uint32_t)getpid());
  assert_true(updated > 0);
  assert_int_equal(back.n, 2);
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(back.t[i].pid, page.t[i].pid);
    assert_int_equal(back.t[i].tid, page.t[i].tid);
    assert_int_equal(back.t[i].ns_tid, page.t[i].ns_tid);
    assert_int_equal(back.t[i].roles, page.t[i].roles);
    assert_int_equal(back.t[i].runq_ns, page.t[i].runq_ns);
    assert_int_equal(back.t[i].preempt_ns, page.t[i].preempt_ns);
    assert_int_equal(back.t[i].preempt_waits, page.t[i].preempt_waits);
  }
  assert_int_equal(back.t[1].preempt_ns, UINT64_MAX); /* the largest u64 reads back */
  unlink(path);
  rmdir(dir);
}

static void test_bad_lines_skipped(void **state) {
  (void)state;
  char dir[256], path[300];
  lens_test_tmpdir(dir, sizeof dir, "sched-page-bad");
  snprintf(path, sizeof path, "%s/1.sched", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "%s\nhost h\n", LENS_SCHED_PAGE_MAGIC);
  fprintf(f, "pid 4294967296\n");                                  /* past u32: skipped */
  fprintf(f, "updated_real_ns 18446744073709551616\n");            /* past u64: skipped */
  fprintf(f, "thread 4294967296 1 1 1 1 1 1 1 1 1\n");             /* pid past u32 */
  fprintf(f, "thread 1 2 3 4 5 6 7 8 9 18446744073709551616\n");   /* sleeps past u64 */
  fprintf(f, "thread -1 2 3 4 5 6 7 8 9 10\n");                    /* a sign */
  fprintf(f, "thread 1 2 3 4 5 6 7 8 9\n");                        /* a field short */
  fprintf(f, "thread 1 2 3 4 5 6 7 8 9 10 11\n");                  /* one too many */
  fprintf(f, "thread 1 2 3 4 5 6 7 8 9 10x\n");                    /* a stray byte */
  fprintf(f, "thread 11 12 13 1 15 16 17 18 19 18446744073709551615\n"); /* the one good line */
  fprintf(f, "pid 42\n");
  fclose(f);
  uint32_t pid = 0;
  uint64_t updated = 7;
  assert_int_equal(lens_sched_page_read(path, &back, &pid, &updated), 0);
  assert_int_equal(pid, 42);
  assert_int_equal(updated, 0);
  assert_int_equal(back.n, 1);
  assert_int_equal(back.t[0].pid, 11);
  assert_int_equal(back.t[0].sleeps, UINT64_MAX);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip), cmocka_unit_test(test_bad_lines_skipped)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
