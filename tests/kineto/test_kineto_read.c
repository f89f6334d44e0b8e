/* The Kineto reader and importer (tools/import/kineto/) on the real files
 * (both layouts: the B200 rank with baseTimeNanoseconds and collective args,
 * the two 2023 ranks of one HTA job with epoch µs and none) and on hostile
 * input: deep nesting, huge strings and numbers, truncated gzip and JSON,
 * wrong types, not JSON, a FIFO -- an error line or counted bad values, never
 * a crash, and memory that does not grow with the file. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job.h"
#include "job_part.h"
#include "kineto_job.h"
#include "kineto_read.h"

#define B200 KINETO_DATA "/tracelens_b200_eager_trace_rank0of8.json.gz"
#define HTA0 KINETO_DATA "/hta_trace_filter_sampled_rank-0of128.json.gz"
#define HTA1 KINETO_DATA "/hta_trace_filter_sampled_rank-1of128.json.gz"

static char tmp[256];

struct counts { uint64_t events, kernels, nccl; };
static int count_ev(void *ctx, const struct lens_kineto_event *e) {
  struct counts *c = ctx;
  c->events++;
  if (!strcmp(e->cat, "kernel")) c->kernels++;
  if (!strcmp(e->cat, "kernel") && !strncmp(e->name, "nccl", 4)) c->nccl++;
  return 0;
}

/* The modern layout: base, rank, every event, the NCCL kernel and its chain (values from the file, spec §5). */
static void test_b200(void **s) {
  (void)s;
  struct counts c = {0};
  struct lens_kineto_info in;
  char err[512];
  assert_int_equal(lens_kineto_read(B200, count_ev, &c, &in, err, sizeof err), 0);
  assert_int_equal(in.events, 24656);
  assert_int_equal(c.events, 24656);
  assert_int_equal(c.nccl, 1);
  assert_true(in.has_base);
  assert_int_equal(in.base_ns, 1767189312000000000LL);
  assert_true(in.has_rank && in.rank == 0 && in.world_size == 8);
  struct lens_job_part p;
  struct lens_kineto_job_stats st;
  assert_int_equal(lens_kineto_job_map(B200, &p, &st, err, sizeof err), 0);
  assert_int_equal(st.nccl_kernels, 1);
  assert_int_equal(st.modern, 1);
  assert_int_equal(st.no_launch, 0);
  assert_int_equal(st.no_api, 0);
  assert_int_equal(p.n_recs, 1);
  const struct lens_job_prec *r = &p.recs[0];
  assert_string_equal(r->func_s, "AllGather");
  assert_int_equal(r->comm_id, lens_kineto_pg_comm_id("3")); /* Process Group Name "3" */
  assert_int_equal(r->nranks, 8);
  assert_int_equal(r->bytes, 201088ull * 2);  /* Out msg nelems x BFloat16 */
  assert_true(r->iflags & LENS_JOB_BY_ORDER); /* 2025 file: no Seq */
  const uint64_t base = 1767189312000000000ull;
  assert_int_equal(r->r.kstart_mono_ns, base + 1365627949863953ull); /* ts 1365627949863.953 us, exact */
  assert_int_equal(r->r.span_ns, 21953);
  assert_int_equal(r->r.launch_start_ns, base + 1365627949842376ull); /* cuLaunchKernelEx, correlation 15270 */
  assert_int_equal(r->r.launch_stop_ns - r->r.launch_start_ns, 20094);
  assert_int_equal(r->r.api_ns, base + 1365627949735404ull); /* record_param_comms, External id 4802 */
  assert_int_equal(r->r.rank, 0);
  lens_job_part_free(&p);
}

/* The 2023 layout, two ranks of one job: no base (epoch µs), 10 SendRecv
 * kernels each without collective args, matched by stream and order. */
static void test_hta_pair(void **s) {
  (void)s;
  struct lens_job_part p[2];
  struct lens_kineto_job_stats st[2];
  char err[512];
  assert_int_equal(lens_kineto_job_map(HTA0, &p[0], &st[0], err, sizeof err), 0);
  assert_int_equal(lens_kineto_job_map(HTA1, &p[1], &st[1], err, sizeof err), 0);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(st[k].modern, 0);
    assert_int_equal(st[k].rank, k);
    assert_int_equal(st[k].world_size, 128);
    assert_int_equal(st[k].nccl_kernels, 10);
    assert_int_equal(st[k].by_order, 10);
    assert_int_equal(st[k].no_launch, 0);
    for (size_t i = 0; i < p[k].n_recs; i++) {
      assert_string_equal(p[k].recs[i].func_s, "SendRecv");
      /* epoch µs of April 2023 as ns */
      assert_true(p[k].recs[i].r.kstart_mono_ns > 1682725897000000000ull &&
                  p[k].recs[i].r.kstart_mono_ns < 1682725900000000000ull);
    }
  }
  /* rank 0's first kernel on stream 84 (by start time): ts 1682725898094377, dur 30669 */
  int found = 0;
  for (size_t i = 0; i < p[0].n_recs; i++)
    if (p[0].recs[i].seq == 0 && p[0].recs[i].comm_id == lens_kineto_pg_comm_id("stream 84")) {
      assert_int_equal(p[0].recs[i].r.kstart_mono_ns, 1682725898094377000ull);
      assert_int_equal(p[0].recs[i].r.span_ns, 30669000ull);
      found = 1;
    }
  assert_true(found);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(p, 2, &j, 0), 0);
  assert_int_equal(j.n_insts, 10); /* 8 on stream 84, 2 on stream 203 */
  assert_int_equal(j.matched_some, 10);
  for (size_t i = 0; i < j.n_insts; i++) {
    assert_int_equal(j.insts[i].ranks_seen, 2);
    assert_int_equal(j.insts[i].nranks, 128);
    assert_true(j.insts[i].flags & LENS_JOB_BY_ORDER);
    assert_true(j.insts[i].exec_ns > 0);
  }
  lens_job_free(&j);
  lens_job_part_free(&p[0]);
  lens_job_part_free(&p[1]);
}

/* ---- hostile input ---- */

static const char *write_file(const char *name, const void *data, size_t n) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmp, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
  return path;
}

static int read_err(const char *path, char *err, size_t len, struct lens_kineto_info *in) {
  struct counts c = {0};
  return lens_kineto_read(path, count_ev, &c, in, err, len);
}

/* A name is the application's: cleaned by the rule every label follows (lens_label_clean): an escape, a
 * line break, a NUL and a direction override become '?', well-formed UTF-8 (an accent) is kept. */
static char seen_name[sizeof ((struct lens_kineto_event *)0)->name]; /* a name whole */
static int keep_name(void *ctx, const struct lens_kineto_event *e) {
  (void)ctx;
  snprintf(seen_name, sizeof seen_name, "%s", e->name);
  return 0;
}
static void test_name_cleaned(void **s) {
  (void)s;
  static const char doc[] = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":"
                            "\"ncclK\\u001b[31m\\nFORGED\\u0000x\\u202erev caf\\u00e9\",\"ts\":1,\"dur\":2}]}";
  char err[512];
  struct lens_kineto_info in;
  assert_int_equal(lens_kineto_read(write_file("names.json", doc, sizeof doc - 1), keep_name, NULL, &in, err, sizeof err),
                   0);
  assert_string_equal(seen_name, "ncclK?[31m?FORGED?x???rev caf\xc3\xa9");
}

static void test_deep(void **s) {
  (void)s;
  char buf[4096], err[512];
  struct lens_kineto_info in;
  size_t n = (size_t)snprintf(buf, sizeof buf, "{\"traceEvents\":[");
  for (int i = 0; i < 1000; i++) buf[n++] = '[';
  buf[n] = 0;
  assert_int_equal(read_err(write_file("deep.json", buf, n), err, sizeof err, &in), -1);
  assert_non_null(strstr(err, "nested deeper"));
  n = (size_t)snprintf(buf, sizeof buf, "{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"x\":");
  for (int i = 0; i < 70; i++) buf[n++] = '{', buf[n++] = '"', buf[n++] = 'a', buf[n++] = '"', buf[n++] = ':';
  buf[n++] = '1';
  for (int i = 0; i < 70; i++) buf[n++] = '}';
  n += (size_t)snprintf(buf + n, sizeof buf - n, "}}]}");
  assert_int_equal(read_err(write_file("deep2.json", buf, n), err, sizeof err, &in), -1);
  assert_non_null(strstr(err, "nested deeper"));
}

static void test_huge_tokens(void **s) {
  (void)s;
  size_t big = (2u << 20) + 100;
  char *buf = malloc(big + 256), err[512];
  struct lens_kineto_info in;
  size_t n = (size_t)snprintf(buf, 256, "{\"traceEvents\":[{\"name\":\"");
  memset(buf + n, 'A', big);
  n += big;
  n += (size_t)snprintf(buf + n, 256, "\"}]}");
  assert_int_equal(read_err(write_file("str.json", buf, n), err, sizeof err, &in), -1);
  assert_non_null(strstr(err, "longer than"));
  n = (size_t)snprintf(buf, 256, "{\"traceEvents\":[{\"ts\":");
  memset(buf + n, '7', big);
  n += big;
  n += (size_t)snprintf(buf + n, 256, "}]}");
  assert_int_equal(read_err(write_file("num.json", buf, n), err, sizeof err, &in), -1);
  assert_non_null(strstr(err, "longer than"));
  /* a long name within the bound: truncated (counted), the kernel still found */
  n = (size_t)snprintf(buf, 256, "{\"distributedInfo\":{\"rank\":3},\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\","
                                 "\"ts\":5,\"dur\":2,\"name\":\"ncclDevKernel_AllReduce_RING_LL<");
  memset(buf + n, 'B', 100000);
  n += 100000;
  n += (size_t)snprintf(buf + n, 256, ">\"}]}");
  const char *p = write_file("long.json", buf, n);
  assert_int_equal(read_err(p, err, sizeof err, &in), 0);
  assert_true(in.truncated >= 1);
  struct lens_job_part part;
  struct lens_kineto_job_stats st;
  assert_int_equal(lens_kineto_job_map(p, &part, &st, err, sizeof err), 0);
  assert_int_equal(st.nccl_kernels, 1);
  assert_string_equal(part.recs[0].func_s, "AllReduce");
  assert_int_equal(part.recs[0].r.rank, 3);
  lens_job_part_free(&part);
  free(buf);
}

static void test_truncated(void **s) {
  (void)s;
  char err[512];
  struct lens_kineto_info in;
  FILE *f = fopen(B200, "rb");
  assert_non_null(f);
  static char gz[900000];
  size_t n = fread(gz, 1, sizeof gz, f);
  fclose(f);
  assert_true(n > 800000);
  assert_int_equal(read_err(write_file("cut.json.gz", gz, n / 2), err, sizeof err, &in), -1);
  assert_true(strlen(err) > 0);
  struct lens_job_part part;
  assert_int_equal(lens_kineto_job_map(write_file("cut2.json.gz", gz, n - 9), &part, NULL, err, sizeof err), -1);
  /* garbage after a valid gzip header */
  memcpy(gz + 64, "garbage!garbage!garbage!", 24);
  assert_int_equal(read_err(write_file("bad.json.gz", gz, 4096), err, sizeof err, &in), -1);
  const char *cut = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\"},{\"ph\":";
  assert_int_equal(read_err(write_file("cut.json", cut, strlen(cut)), err, sizeof err, &in), -1);
}

static void test_wrong_types(void **s) {
  (void)s;
  char err[512];
  struct lens_kineto_info in;
  const char *doc =
      "{\"baseTimeNanoseconds\":\"zz\",\"distributedInfo\":[1,2],\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_RING_LL(x)\",\"pid\":{},\"tid\":[1],"
      "\"ts\":\"abc\",\"dur\":true,\"args\":[1,2]},"
      "{\"ph\":1,\"name\":5,\"ts\":1e400,\"args\":{\"correlation\":\"x\",\"External id\":-5,\"Seq\":1.5,"
      "\"Process Group Ranks\":7,\"Group size\":null}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_Broadcast_RING_LL_Sum_float(a)\",\"ts\":99999999999999999999,"
      "\"dur\":-3},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_SendRecv\",\"ts\":9000000000000000,"
      "\"dur\":9000000000000000,\"args\":{\"Process Group Name\":\"9\"}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic\",\"ts\":12.3456,\"dur\":1,"
      "\"args\":{\"Collective name\":\"reduce_scatter_tensor\",\"Seq\":\"17\"}},"
      "[],7,\"x\",null],\"traceEvents2\":{}}";
  const char *p = write_file("types.json", doc, strlen(doc));
  assert_int_equal(read_err(p, err, sizeof err, &in), 0);
  assert_int_equal(in.events, 5); /* objects in traceEvents; [], 7, "x", null are not events */
  assert_true(in.bad_values >= 5);
  assert_false(in.has_base);
  assert_false(in.has_rank);
  /* no rank anywhere: the importer says so */
  struct lens_job_part part;
  assert_int_equal(lens_kineto_job_map(p, &part, NULL, err, sizeof err), -1);
  assert_non_null(strstr(err, "no rank"));
  /* named rank-5: the RCCL Generic kernel (its function from the collective
   * name, Seq from a string, 12.3456 us rounded to 12346 ns) is the one kept */
  p = write_file("trace_rank-5.json", doc, strlen(doc));
  struct lens_kineto_job_stats st;
  assert_int_equal(lens_kineto_job_map(p, &part, &st, err, sizeof err), 0);
  assert_int_equal(st.rank, 5);
  assert_int_equal(st.rank_from, 2);
  assert_int_equal(part.n_recs, 2);
  const struct lens_job_prec *g = NULL, *big = NULL;
  for (size_t i = 0; i < part.n_recs; i++) {
    if (!strcmp(part.recs[i].func_s, "ReduceScatter")) g = &part.recs[i];
    if (!strcmp(part.recs[i].func_s, "SendRecv")) big = &part.recs[i];
  }
  assert_non_null(g);
  assert_int_equal(g->seq, 17);
  assert_int_equal(g->r.kstart_mono_ns, 12346);
  /* 9e18 ns + 9e18 ns: past what a partial holds, cleared (unknown), not wrapped */
  assert_non_null(big);
  assert_int_equal(big->r.kstop_mono_ns, 0);
  assert_int_equal(big->r.span_ns, 0);
  lens_job_part_free(&part);
}

static void test_not_kineto(void **s) {
  (void)s;
  char err[512], path[600];
  struct lens_kineto_info in;
  assert_int_equal(read_err(write_file("arr.json", "[1,2,3]", 7), err, sizeof err, &in), -1);
  assert_non_null(strstr(err, "not a Kineto trace"));
  assert_int_equal(read_err(write_file("empty.json", "", 0), err, sizeof err, &in), -1);
  assert_int_equal(read_err(write_file("text.json", "hello", 5), err, sizeof err, &in), -1);
  assert_int_equal(read_err(write_file("two.json", "{}{}", 4), err, sizeof err, &in), -1);
  snprintf(path, sizeof path, "%s/fifo.json", tmp);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(read_err(path, err, sizeof err, &in), -1); /* never blocks on a FIFO */
  assert_non_null(strstr(err, "not a regular file"));
  assert_int_equal(read_err("/nonexistent/x.json", err, sizeof err, &in), -1);
  assert_true(lens_kineto_name_is("a/rank-0.json") && lens_kineto_name_is("b.JSON.GZ"));
  /* a directory's other JSON files are not taken for traces */
  assert_true(lens_kineto_sniff(B200) && lens_kineto_sniff(HTA1));
  const char *truth = "{\"processes\":[],\"instances\":[]}";
  assert_false(lens_kineto_sniff(write_file("truth.json", truth, strlen(truth))));
  assert_false(lens_kineto_sniff(path)); /* the FIFO */
  assert_false(lens_kineto_name_is("x.lens") || lens_kineto_name_is(".json.gz.lens"));
}

/* More process groups than the importer keeps (4096): the rest counted as dropped, never a crash. */
static void test_many_groups(void **s) {
  (void)s;
  char path[600], err[512];
  snprintf(path, sizeof path, "%s/groups.json", tmp);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"distributedInfo\":{\"rank\":0,\"world_size\":2},\"traceEvents\":[", f);
  for (int i = 0; i < 5000; i++)
    fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_RING_LL\",\"ts\":%d,"
               "\"dur\":5,\"args\":{\"Process Group Name\":\"g%d\",\"Seq\":1}}",
            i ? "," : "", 100 + i, i);
  fputs("]}", f);
  fclose(f);
  struct lens_job_part part;
  struct lens_kineto_job_stats st;
  assert_int_equal(lens_kineto_job_map(path, &part, &st, err, sizeof err), 0);
  assert_int_equal(part.n_comms, 4096);
  assert_int_equal(part.n_recs, 4096);
  assert_int_equal(st.dropped, 5000 - 4096);
  assert_int_equal(st.by_seq, 4096);
  lens_job_part_free(&part);
}

static long maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* Memory does not follow the file: 48 MiB of events (each with a 64 KiB
 * string and a launch nobody claims) read within a few MiB. */
static void test_bounded_memory(void **s) {
  (void)s;
  char path[600], err[512];
  snprintf(path, sizeof path, "%s/big.json.gz", tmp);
  gzFile z = gzopen(path, "wb1");
  assert_non_null(z);
  char *pad = malloc(65536);
  memset(pad, 'p', 65535);
  pad[65535] = 0;
  gzprintf(z, "{\"distributedInfo\":{\"rank\":0},\"traceEvents\":[");
  for (int i = 0; i < 768; i++) {
    gzprintf(z, "%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":%d,\"dur\":1,"
                "\"args\":{\"correlation\":%d,\"pad\":\"",
             i ? "," : "", i * 10, i + 1);
    gzwrite(z, pad, 65535);
    gzputs(z, "\"}}");
  }
  gzputs(z, "]}");
  gzclose(z);
  free(pad);
  long before = maxrss_kb();
  struct lens_job_part part;
  struct lens_kineto_job_stats st;
  assert_int_equal(lens_kineto_job_map(path, &part, &st, err, sizeof err), 0);
  long grew = maxrss_kb() - before;
  fprintf(stderr, "48 MiB of events: max RSS grew %ld KiB\n", grew);
  assert_true(grew < 32 * 1024);
  assert_int_equal(st.nccl_kernels, 0);
  lens_job_part_free(&part);
}

static int setup(void **s) {
  (void)s;
  lens_test_tmpdir(tmp, sizeof tmp, "kineto-read");
  return 0;
}
static int teardown(void **s) {
  (void)s;
  lens_test_rmtree(tmp);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      /* first: the peak RSS it measures against is this process's before any other read */
      cmocka_unit_test(test_bounded_memory), cmocka_unit_test(test_b200),         cmocka_unit_test(test_hta_pair),
      cmocka_unit_test(test_name_cleaned),   cmocka_unit_test(test_deep),           cmocka_unit_test(test_huge_tokens),  cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_wrong_types),    cmocka_unit_test(test_not_kineto),   cmocka_unit_test(test_many_groups),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
