/* Partial files (tools/analysis/job/job_part_io.c) on the generator's job
 * (4 hosts, zstd traces, as the plugin writes them):
 * - a partial written by `nccl-lens job --partial`, read and written again,
 *   is the same file byte for byte (every section reads back identical);
 * - it is smaller than its host's traces (version 1 stored the sections
 *   raw: 2.6 times the traces' bytes, docs/scale.md);
 * - the same partial in version 1 (sections raw, made here from it) still
 *   reads, and writes back the same version-2 file;
 * - a version this reader does not know is refused with one message;
 * - the ops' bytes (section OPBY, added later; the generator's steps carry
 *   none, the golden job-slow-link replay's do) are kept, and a file
 *   without that section (an older writer's) still reads, its ops' bytes
 *   0 and all else the same, and the job view still answers from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <zstd.h>

#include "../lens_test_file.h"
#include "../lens_test_tmp.h"
#include "job_part.h"
#include "lens_chunk.h"

#define LENS LENS_BUILD_DIR "/bin/nccl-lens"

static void write_bytes(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(d, 1, n, f), n);
  fclose(f);
}

/* path read (lens_job_part_read) and written again to out. */
static void rewrite(const char *path, const char *out) {
  struct lens_job_part p;
  char err[512] = "";
  if (lens_job_part_read(path, &p, err, sizeof err)) fail_msg("read %s: %s", path, err);
  FILE *f = fopen(out, "wb");
  assert_non_null(f);
  assert_int_equal(lens_job_part_write(f, &p), 0);
  assert_int_equal(fclose(f), 0);
  lens_job_part_free(&p);
}

static void assert_same_bytes(const char *a, const char *b) {
  size_t la, lb;
  char *x = lens_test_slurp(a, &la), *y = lens_test_slurp(b, &lb);
  assert_non_null(x);
  assert_non_null(y);
  assert_int_equal(la, lb);
  assert_memory_equal(x, y, la);
  free(x);
  free(y);
}

struct sec { uint32_t tag, crc; uint64_t count, len; };

/* The version-2 file v2 as version 1 writes it: each section's payload
 * decompressed, padded to 8, its CRC over the raw bytes. */
static void to_v1(const char *v2, const char *v1) {
  size_t n;
  uint8_t *d = (uint8_t *)lens_test_slurp(v2, &n);
  assert_non_null(d);
  uint32_t version;
  memcpy(&version, d + 8, 4);
  assert_int_equal(version, 2);
  size_t cap = 64 * n + 4096, len = 32;
  uint8_t *o = calloc(1, cap);
  assert_non_null(o);
  memcpy(o, d, 32);
  version = 1;
  memcpy(o + 8, &version, 4);
  for (size_t off = 32; off < n;) {
    struct sec s;
    assert_true(n - off >= sizeof s);
    memcpy(&s, d + off, sizeof s);
    off += sizeof s;
    size_t raw = 0;
    uint8_t *r = o + len + sizeof s;
    if (s.len) {
      unsigned long long rl = ZSTD_getFrameContentSize(d + off, (size_t)s.len);
      assert_true(rl != ZSTD_CONTENTSIZE_UNKNOWN && rl != ZSTD_CONTENTSIZE_ERROR);
      assert_true(len + sizeof s + rl + 8 <= cap);
      raw = ZSTD_decompress(r, (size_t)rl, d + off, (size_t)s.len);
      assert_int_equal(raw, rl);
    }
    off += (size_t)s.len;
    size_t padded = (raw + 7) & ~(size_t)7;
    s.crc = lens_crc32c(0, r, padded);
    s.len = padded;
    memcpy(o + len, &s, sizeof s);
    len += sizeof s + padded;
    if (!s.tag) break;
  }
  write_bytes(v1, o, len);
  free(o);
  free(d);
}

/* The file in as it was before section tag existed: that section left out. */
static void without_section(const char *in, const char *out, uint32_t tag) {
  size_t n;
  uint8_t *d = (uint8_t *)lens_test_slurp(in, &n);
  assert_non_null(d);
  uint8_t *o = malloc(n);
  assert_non_null(o);
  memcpy(o, d, 32);
  size_t len = 32;
  int dropped = 0;
  for (size_t off = 32; off < n;) {
    struct sec s;
    assert_true(n - off >= sizeof s);
    memcpy(&s, d + off, sizeof s);
    assert_true(s.len <= n - off - sizeof s);
    if (s.tag == tag) dropped++;
    else memcpy(o + len, d + off, sizeof s + (size_t)s.len), len += sizeof s + (size_t)s.len;
    off += sizeof s + (size_t)s.len;
    if (!s.tag) break;
  }
  assert_int_equal(dropped, 1);
  write_bytes(out, o, len);
  free(o);
  free(d);
}

/* An old writer's file (no OPBY, tag 13) reads as the new one with every op's bytes 0; the new one has bytes. */
static void check_no_op_bytes(const char *with, const char *without) {
  struct lens_job_part a, b;
  char err[512] = "";
  if (lens_job_part_read(with, &a, err, sizeof err)) fail_msg("read %s: %s", with, err);
  if (lens_job_part_read(without, &b, err, sizeof err)) fail_msg("read %s: %s", without, err);
  assert_int_equal(a.n_ops, b.n_ops);
  assert_true(a.n_ops > 0);
  size_t with_bytes = 0;
  for (size_t i = 0; i < a.n_ops; i++) {
    with_bytes += a.ops[i].bytes > 0;
    assert_int_equal(b.ops[i].bytes, 0);
    b.ops[i].bytes = a.ops[i].bytes;
    assert_memory_equal(&a.ops[i], &b.ops[i], sizeof a.ops[i]);
  }
  assert_true(with_bytes > 0);
  lens_job_part_free(&a);
  lens_job_part_free(&b);
}

static long long bytes_of(const char *glob) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "cat %s | wc -c", glob);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  long long n = -1;
  assert_int_equal(fscanf(p, "%lld", &n), 1);
  pclose(p);
  return n;
}

static void test_roundtrip_and_size(void **s) {
  (void)s;
  char dir[256], a[400], b[400], v1[400], g[400];
  lens_test_tmpdir(dir, sizeof dir, "jobpartio");
  assert_int_equal(lens_test_sh("%s/bin/lens-gen-job -o %s/t --ranks 16 --hosts 4 --events 400000 --seed 3 >/dev/null",
                                LENS_BUILD_DIR, dir),
                   0);
  for (int h = 0; h < 4; h++) {
    snprintf(a, sizeof a, "%s/host%d.lensjob", dir, h);
    snprintf(b, sizeof b, "%s/again%d.lensjob", dir, h);
    snprintf(v1, sizeof v1, "%s/v1-%d.lensjob", dir, h);
    snprintf(g, sizeof g, "%s/t/*host%03d-*.lens", dir, h);
    assert_int_equal(lens_test_sh("%s job --partial -o %s %s", LENS, a, g), 0);
    rewrite(a, b);
    assert_same_bytes(a, b);
    long long part = bytes_of(a), traces = bytes_of(g);
    print_message("host %d: partial %lld bytes, its traces %lld bytes\n", h, part, traces);
    assert_true(part > 0 && traces > 0);
    assert_true(part < traces);
    /* the same partial in version 1 reads, and writes back the same file */
    to_v1(a, v1);
    assert_true(bytes_of(v1) > part);
    rewrite(v1, b);
    assert_same_bytes(a, b);
  }
  /* the merged answer of version-1 and version-2 partials is the same */
  assert_int_equal(lens_test_sh("%s job --json -o %s/m2.json %s/host*.lensjob && %s job --json -o %s/m1.json "
                                "%s/v1-*.lensjob && cmp -s %s/m1.json %s/m2.json",
                                LENS, dir, dir, LENS, dir, dir, dir, dir),
                   0);
  /* a version it does not know (a newer writer's): refused, one line naming it */
  assert_int_equal(lens_test_sh("cp %s/host0.lensjob %s/v9.lensjob && printf '\\011' | dd of=%s/v9.lensjob bs=1 seek=8 "
                                "conv=notrunc 2>/dev/null",
                                dir, dir, dir),
                   0);
  struct lens_job_part p;
  char err[512] = "";
  snprintf(a, sizeof a, "%s/v9.lensjob", dir);
  assert_int_equal(lens_job_part_read(a, &p, err, sizeof err), -1);
  assert_non_null(strstr(err, "format version 9"));
  assert_int_equal(lens_test_sh("%s job -o /dev/null %s 2>%s/err; test $? -eq 1 && test $(wc -l < %s/err) -eq 1",
                                LENS, a, dir, dir),
                   0);
  lens_test_rmtree(dir);
}

static void test_op_bytes_and_older_files(void **s) {
  (void)s;
  char dir[256], a[400], b[400];
  lens_test_tmpdir(dir, sizeof dir, "jobpartby");
  snprintf(a, sizeof a, "%s/new.lensjob", dir);
  snprintf(b, sizeof b, "%s/old.lensjob", dir);
  assert_int_equal(lens_test_sh("%s job --partial -o %s %s/tests/golden/traces/job-slow-link/*.lens", LENS, a,
                                LENS_SOURCE_DIR),
                   0);
  without_section(a, b, 13);
  check_no_op_bytes(a, b);
  assert_int_equal(lens_test_sh("%s job --json -o %s/old.json %s", LENS, dir, b), 0);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip_and_size),
                                     cmocka_unit_test(test_op_bytes_and_older_files)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
