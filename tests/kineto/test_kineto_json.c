/* The byte-preserving pass over Kineto files (tools/export/kineto_json.c), on
 * hand-made documents whose every byte is known:
 * - insertions land where they may and nowhere else: members at the end of
 *   the chosen events' args (an empty args object, no args at all), events
 *   before traceEvents' bracket, the nccl_lens key before the last brace; a
 *   "traceEvents" key nested elsewhere, strings holding braces, brackets,
 *   escaped quotes and backslashes, and non-object elements change nothing;
 *   the output is the expected string exactly, plain and gzip'd;
 * - pass 1 reads ts/dur as exact ns (three decimals, integers, exponents),
 *   pid/tid, correlation, the base and distributedInfo's rank, and keeps only
 *   NCCL kernels, by their place among traceEvents' objects;
 * - a file that is not JSON, is cut, or changed between the passes is refused. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "../lens_test_tmp.h"
#include "export/kineto_json.h"

static char g_dir[256];

static void put(const char *name, const char *text, int gz) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  if (gz) {
    gzFile g = gzopen(p, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(g), Z_OK);
  } else {
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
  }
}

/* The whole (decompressed) text of a file. */
static char *get(const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  gzFile g = gzopen(p, "rb");
  assert_non_null(g);
  char *b = calloc(1, 1 << 20);
  int n = gzread(g, b, (1 << 20) - 1);
  assert_true(n >= 0);
  gzclose(g);
  return b;
}

static int open_out(const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  assert_true(fd >= 0);
  return fd;
}

static void args_for(void *ctx, uint64_t index, FILE *out) {
  (void)ctx;
  fprintf(out, ",\"nccl_lens t\":%llu", (unsigned long long)index);
}
static void tail(void *ctx, FILE *out) {
  (void)ctx;
  fputs(",{\"ph\":\"i\",\"name\":\"new\"}", out);
}
static void meta(void *ctx, FILE *out) {
  (void)ctx;
  fputs("{\"m\":1}", out);
}

static const char DOC[] =
    "{\"a\":{\"traceEvents\":[{\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Fake\",\"pid\":0,\"tid\":1,\"ts\":1,"
    "\"dur\":1}]},\n"
    "\"baseTimeNanoseconds\":1767189312000000000,\"distributedInfo\":{\"rank\":3,\"world_size\":8},\n"
    "\"traceEvents\": [\n"
    "  {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_RING_LL(x)\",\"pid\":0,\"tid\":7,"
    "\"ts\":1365627949863.953,\"dur\":21.953,\"args\": { }},\n"
    "  {\"name\":\"x \\\" } ] { \\\\\",\"cat\":\"cpu_op\",\"pid\":6583,\"tid\":6583,\"args\":{\"k\":\"}\\\\\\\"]\"}},\n"
    "  [1,{\"x\":2}], \"s\", 5,\n"
    "  {\"cat\":\"kernel\",\"name\":\"ncclKernel_SendRecv\",\"pid\":0,\"tid\":84,\"ts\":1682725897123,\"dur\":1.5e1},\n"
    "  {\"cat\":\"kernel\",\"name\":\"void "
    "gemm<4>(int)\",\"pid\":0,\"tid\":7,\"ts\":2,\"dur\":3,\"args\":{\"correlation\":9}},\n"
    "  {\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic\",\"pid\":1,\"tid\":9,\"ts\":4.0005,\"dur\":1,"
    "\"args\":{\"correlation\":15270,\"grid\":[11,1,1],\"n\":{\"args\":{}}}}\n"
    "],\n"
    "\"traceName\":\"t\"}\n";

static const char WANT[] =
    "{\"a\":{\"traceEvents\":[{\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Fake\",\"pid\":0,\"tid\":1,\"ts\":1,"
    "\"dur\":1}]},\n"
    "\"baseTimeNanoseconds\":1767189312000000000,\"distributedInfo\":{\"rank\":3,\"world_size\":8},\n"
    "\"traceEvents\": [\n"
    "  {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_RING_LL(x)\",\"pid\":0,\"tid\":7,"
    "\"ts\":1365627949863.953,\"dur\":21.953,\"args\": { \"nccl_lens t\":0}},\n"
    "  {\"name\":\"x \\\" } ] { \\\\\",\"cat\":\"cpu_op\",\"pid\":6583,\"tid\":6583,\"args\":{\"k\":\"}\\\\\\\"]\"}},\n"
    "  [1,{\"x\":2}], \"s\", 5,\n"
    "  {\"cat\":\"kernel\",\"name\":\"ncclKernel_SendRecv\",\"pid\":0,\"tid\":84,\"ts\":1682725897123,\"dur\":1.5e1"
    ",\"args\":{\"nccl_lens t\":2}},\n"
    "  {\"cat\":\"kernel\",\"name\":\"void "
    "gemm<4>(int)\",\"pid\":0,\"tid\":7,\"ts\":2,\"dur\":3,\"args\":{\"correlation\":9}},\n"
    "  {\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic\",\"pid\":1,\"tid\":9,\"ts\":4.0005,\"dur\":1,"
    "\"args\":{\"correlation\":15270,\"grid\":[11,1,1],\"n\":{\"args\":{}},\"nccl_lens t\":4}}\n"
    ",{\"ph\":\"i\",\"name\":\"new\"}],\n"
    "\"traceName\":\"t\",\"nccl_lens\":{\"m\":1}}\n";

static void test_scan(void **state) {
  (void)state;
  put("doc.json", DOC, 0);
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/doc.json", g_dir);
  struct kj_scan s;
  int rc = kj_scan_file(path, &s, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(s.n_events, 5); /* objects only: the array, string and number elements are not events */
  assert_int_equal(s.n_kernels_all, 4);
  assert_true(s.have_base);
  assert_int_equal(s.base_ns, 1767189312000000000LL);
  assert_true(s.have_rank);
  assert_int_equal(s.rank, 3);
  assert_int_equal(s.world_size, 8);
  assert_int_equal(s.n_k, 3); /* the nested "traceEvents" is not the document's */
  assert_int_equal(s.k[0].index, 0);
  assert_int_equal(s.k[0].ts_ns, 1365627949863953LL);
  assert_int_equal(s.k[0].dur_ns, 21953);
  assert_int_equal(s.k[0].tid, 7);
  assert_int_equal(s.k[0].correlation, -1);
  assert_int_equal(s.k[1].index, 2);
  assert_int_equal(s.k[1].ts_ns, 1682725897123000LL);
  assert_int_equal(s.k[1].dur_ns, 15000); /* 1.5e1 us */
  assert_int_equal(s.k[2].index, 4);
  assert_int_equal(s.k[2].ts_ns, 4001); /* 4.0005 us: rounded to the ns */
  assert_int_equal(s.k[2].pid, 1);
  assert_int_equal(s.k[2].correlation, 15270);
  assert_int_equal(s.n_cpu_pids, 1);
  assert_int_equal(s.cpu_pids[0], 6583);
  assert_false(s.already_merged);
  kj_scan_free(&s);
}

static void rewrite(const char *in, const char *out, int gz_out) {
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, in);
  struct kj_scan s;
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), 0);
  uint64_t *edit = malloc(s.n_k * sizeof *edit);
  for (size_t i = 0; i < s.n_k; i++) edit[i] = s.k[i].index;
  struct kj_insert ins = {edit, s.n_k, args_for, tail, meta, NULL};
  int rc = kj_rewrite(path, &s, open_out(out), gz_out, &ins, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  free(edit);
  kj_scan_free(&s);
}

static void test_rewrite_exact(void **state) {
  (void)state;
  put("doc2.json", DOC, 0);
  rewrite("doc2.json", "out2.json", 0);
  char *o = get("out2.json");
  assert_string_equal(o, WANT);
  free(o);
  /* gzip'd in and out: the same text */
  put("doc3.json.gz", DOC, 1);
  rewrite("doc3.json.gz", "out3.json.gz", 1);
  o = get("out3.json.gz");
  assert_string_equal(o, WANT);
  free(o);
  /* an empty traceEvents: the first new event takes no comma */
  put("empty.json", "{\"traceEvents\":[ ]}", 0);
  rewrite("empty.json", "empty_out.json", 0);
  o = get("empty_out.json");
  assert_string_equal(o, "{\"traceEvents\":[ {\"ph\":\"i\",\"name\":\"new\"}],\"nccl_lens\":{\"m\":1}}");
  free(o);
  /* no insertion at all: the same bytes */
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/doc2.json", g_dir);
  struct kj_scan s;
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), 0);
  struct kj_insert none = {0};
  assert_int_equal(kj_rewrite(path, &s, open_out("same.json"), 0, &none, err, sizeof err), 0);
  o = get("same.json");
  assert_string_equal(o, DOC);
  free(o);
  kj_scan_free(&s);
}

static void test_refused(void **state) {
  (void)state;
  char path[512], err[256];
  struct kj_scan s;
  put("cut.json", "{\"traceEvents\":[{\"ph\":\"X\"", 0);
  snprintf(path, sizeof path, "%s/cut.json", g_dir);
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "is not a JSON document"));
  kj_scan_free(&s);
  put("arr.json", "[{\"ph\":\"X\"}]", 0);
  snprintf(path, sizeof path, "%s/arr.json", g_dir);
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "no traceEvents"));
  kj_scan_free(&s);
  put("merged.json", "{\"traceEvents\":[],\"nccl_lens\":{}}", 0);
  snprintf(path, sizeof path, "%s/merged.json", g_dir);
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), 0);
  assert_true(s.already_merged);
  kj_scan_free(&s);
  /* changed between the passes: same length, one byte else */
  put("chg.json", DOC, 0);
  snprintf(path, sizeof path, "%s/chg.json", g_dir);
  assert_int_equal(kj_scan_file(path, &s, err, sizeof err), 0);
  char *d = strdup(DOC);
  *strstr(d, "21.953") = '3';
  put("chg.json", d, 0);
  free(d);
  struct kj_insert none = {0};
  assert_int_equal(kj_rewrite(path, &s, open_out("chg_out.json"), 0, &none, err, sizeof err), -1);
  assert_non_null(strstr(err, "changed while it was read"));
  kj_scan_free(&s);
}

int main(void) {
  lens_test_tmpdir(g_dir, sizeof g_dir, "kineto-json");
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_scan), cmocka_unit_test(test_rewrite_exact),
                                     cmocka_unit_test(test_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
