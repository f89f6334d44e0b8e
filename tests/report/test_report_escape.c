/* The Markdown report on a crafted trace (docs/security.md: trust nothing
 * shared, escape every label): a replay whose communicator is renamed, in
 * every trace, to a name full of table, markup and HTML syntax, CRCs fixed
 * as a writer of those bytes would have written them. The report must keep
 * every table row to its header's cells, hold no raw "<img", and show the
 * name escaped (lens_fmt_md) wherever it shows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_run.h"
#include "../lens_test_file.h"
#include "../fuzz/fuzz_util.h" /* fuzz_fix_trace_crcs */

/* The replay's communicator name and what it becomes (within the trace's 128-byte name field). */
#define BENIGN "replay-world"
#define EVIL "ev|l<img src=x onerror=alert(1)>*_`[x](y)\\"
#define EVIL_MD "ev\\|l&lt;img src=x onerror=alert(1)&gt;\\*\\_\\`\\[x\\](y)\\\\"

static struct cli_result res;
static char *md; /* the report */

/* Every NUL-terminated BENIGN in the file renamed; returns how many. */
static int rename_comm(const char *path) {
  size_t n;
  char *d = lens_test_slurp(path, &n);
  if (!d) return -1;
  int k = 0;
  for (size_t i = 0; i + sizeof BENIGN <= n; i++) {
    if (memcmp(d + i, BENIGN, sizeof BENIGN)) continue; /* with its NUL */
    if (i + sizeof EVIL > n) break;
    memcpy(d + i, EVIL, sizeof EVIL); /* the field is 128 bytes of NULs past the name */
    k++;
  }
  fuzz_fix_trace_crcs((uint8_t *)d, n);
  FILE *f = fopen(path, "wb");
  int bad = !f || fwrite(d, 1, n, f) != n;
  if (f) bad |= fclose(f) != 0;
  free(d);
  return bad ? -1 : k;
}

static int setup(void **state) {
  (void)state;
  char dir[256], out[300];
  snprintf(dir, sizeof dir, "%s/evil", cli_tmpdir());
  const char *rp[] = {"replay", "--quiet", "--scenario", "allreduce", "--nodes", "1", "--ranks-per-node", "2",
                      "--iters", "3", "--out", dir, NULL};
  if (cli_run(&res, rp) || res.status) {
    fprintf(stderr, "replay failed (%d): %s\n", res.status, res.err);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) return -1;
  int renamed = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, ".lens")) continue;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    int k = rename_comm(p);
    if (k < 0) return -1;
    renamed += k;
  }
  closedir(d);
  if (!renamed) {
    fprintf(stderr, "no communicator named " BENIGN " in the replay's traces\n");
    return -1;
  }
  snprintf(out, sizeof out, "%s/report.md", cli_tmpdir());
  const char *rep[] = {"report", dir, "-o", out, NULL};
  if (cli_run(&res, rep) || res.status) {
    fprintf(stderr, "report failed (%d): %s\n", res.status, res.err);
    return -1;
  }
  md = lens_test_slurp(out, NULL);
  return md ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(md);
  cli_cleanup();
  return 0;
}

/* Cells of a table row as GFM splits it: at every '|' not taken by a
 * backslash pair (a backslash and the ASCII punctuation after it). */
static int cells(const char *line, size_t len) {
  int n = 0;
  for (size_t i = 0; i < len; i++) {
    if (line[i] == '\\' && i + 1 < len && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", line[i + 1])) {
      i++;
      continue;
    }
    n += line[i] == '|';
  }
  return n;
}

static void test_rows_keep_their_cells(void **state) {
  (void)state;
  int tables = 0, rows = 0, header = -1;
  for (const char *l = md; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (len && l[0] == '|') {
      if (header < 0) header = cells(l, len), tables++;
      else if (cells(l, len) != header) fail_msg("row has %d cells, its header %d: %.*s", cells(l, len), header, (int)len, l);
      else rows++;
    } else {
      header = -1;
    }
    l += len + (e != NULL);
  }
  assert_true(tables >= 5); /* the report's tables were there to check */
  assert_true(rows >= 10);
}

static void test_no_raw_html(void **state) {
  (void)state;
  for (const char *p = md; *p; p++) assert_true(strncasecmp(p, "<img", 4) != 0);
  assert_null(strstr(md, "onerror=alert(1)>"));
}

static void test_name_shown_escaped(void **state) {
  (void)state;
  /* the heading of its collectives, its row in "What was recorded" and "Completion vs enqueue" */
  assert_non_null(strstr(md, "### " EVIL_MD " (comm id 0x"));
  assert_non_null(strstr(md, "| " EVIL_MD " | 0x"));
  size_t n = 0;
  for (const char *p = md; (p = strstr(p, EVIL_MD)); p++) n++;
  assert_true(n >= 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_keep_their_cells),
      cmocka_unit_test(test_no_raw_html),
      cmocka_unit_test(test_name_shown_escaped),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
