/* The same trace given twice (one path twice, a symlink, a copy, a copy cut
 * short while the job ran) is read once and listed in model->same_traces;
 * two different traces are both read. Loading both copies doubled every count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

static char a[128], b[128], link_a[128], copy_a[128], cut_a[128];
static size_t n_one; /* events of one sample trace */

static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  struct stat st;
  assert_int_equal(fstat(fileno(f), &st), 0);
  void *p = malloc((size_t)st.st_size);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)st.st_size, f), (size_t)st.st_size);
  fclose(f);
  *len = (size_t)st.st_size;
  return p;
}

static struct lens_model *load(const char *p0, const char *p1) {
  const char *p[2] = {p0, p1};
  char err[256];
  struct lens_model *m = lens_model_load(p, p1 ? 2 : 1, err, sizeof err, NULL);
  if (!m) fprintf(stderr, "load: %s\n", err);
  assert_non_null(m);
  return m;
}

static int setup(void **state) {
  (void)state;
  sample_trace_write(rt_path(a, sizeof a, "a.lens"));
  sample_trace_write_as(rt_path(b, sizeof b, "b.lens"), S_PID + 1, "nodeB"); /* another process, same shape */
  if (symlink(a, rt_path(link_a, sizeof link_a, "link.lens"))) return -1;
  size_t len;
  void *bytes = slurp(a, &len);
  tb_write_file(rt_path(copy_a, sizeof copy_a, "copy.lens"), bytes, len);
  tb_write_file(rt_path(cut_a, sizeof cut_a, "cut.lens"), bytes, len / 2);
  free(bytes);
  struct lens_model *m = load(a, NULL);
  n_one = m->n_events;
  lens_model_free(m);
  return n_one ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  rt_cleanup();
  return 0;
}

static void check_once(struct lens_model *m, const char *read, const char *skipped, int same_file) {
  assert_int_equal(m->n_files, 1);
  assert_int_equal(m->n_procs, 1);
  assert_int_equal(m->n_events, n_one);
  assert_string_equal(m->files[0].path, read);
  assert_int_equal(m->n_same_traces, 1);
  assert_string_equal(m->same_traces[0].path, skipped);
  assert_string_equal(m->same_traces[0].same_as, read);
  assert_int_equal(m->same_traces[0].same_file, same_file);
}

static void test_same_path_twice(void **state) {
  (void)state;
  struct lens_model *m = load(a, a);
  check_once(m, a, a, 1);
  lens_model_free(m);
}

static void test_symlink(void **state) {
  (void)state;
  struct lens_model *m = load(link_a, a);
  check_once(m, link_a, a, 1);
  lens_model_free(m);
}

static void test_copy(void **state) {
  (void)state;
  struct lens_model *m = load(a, copy_a);
  check_once(m, a, copy_a, 0);
  lens_model_free(m);
}

/* A copy taken while the job ran is a prefix: the whole one is read. */
static void test_cut_copy_reads_the_larger(void **state) {
  (void)state;
  struct lens_model *m = load(cut_a, a);
  check_once(m, a, cut_a, 0);
  assert_int_equal(m->files[0].truncated_bytes, 0);
  lens_model_free(m);
}

static void test_two_traces_both_read(void **state) {
  (void)state;
  struct lens_model *m = load(a, b);
  assert_int_equal(m->n_files, 2);
  assert_int_equal(m->n_procs, 2);
  assert_int_equal(m->n_events, 2 * n_one);
  assert_int_equal(m->n_same_traces, 0);
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_path_twice),
      cmocka_unit_test(test_symlink),
      cmocka_unit_test(test_copy),
      cmocka_unit_test(test_cut_copy_reads_the_larger),
      cmocka_unit_test(test_two_traces_both_read),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
