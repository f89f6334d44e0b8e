/* One way to put a label from a trace into Markdown (tools/cli/format.h,
 * lens_fmt_md, lens_fmt_md_code): benign names as they are, markup and HTML
 * made inert, every '|' escaped so that no cell splits, and a result cut to
 * its buffer ends in "..." between two characters, never inside an escape,
 * a UTF-8 sequence or a code span's fence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/format.h"

static const char *md(const char *s) {
  static char b[512];
  return lens_fmt_md(s, b, sizeof b);
}
static const char *code(const char *s) {
  static char b[512];
  return lens_fmt_md_code(s, b, sizeof b);
}

static void test_benign_names_unchanged(void **state) {
  (void)state;
  const char *same[] = {"replay-world", "replay_world", "node01.cluster-a", "/tmp/x/rank0.lens", "comm 0x00000000000000ab",
                        "AllReduce", "SIMPLE", "sym RING", "proxy (1)", "a+b=c #1 !", "caf\xc3\xa9", ""};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) assert_string_equal(md(same[i]), same[i]);
  assert_string_equal(md(NULL), "");
}

static void test_markup_and_html_escaped(void **state) {
  (void)state;
  assert_string_equal(md("ev|l<img src=x onerror=alert(1)>*_`[x](y)\\"),
                      "ev\\|l&lt;img src=x onerror=alert(1)&gt;\\*\\_\\`\\[x\\](y)\\\\");
  assert_string_equal(md("&amp; ~~s~~ $x$"), "&amp;amp; \\~\\~s\\~\\~ \\$x\\$");
  /* _ is emphasis only at a word's edge (CommonMark's flanking rules) */
  assert_string_equal(md("_a_b_ c__d"), "\\_a_b\\_ c\\_\\_d");
}

/* Undoes lens_fmt_md as CommonMark reads it: a backslash before ASCII
 * punctuation is that character; the three entities are theirs. */
static void unescape(const char *e, char *out) {
  size_t o = 0;
  for (size_t i = 0; e[i];) {
    if (e[i] == '\\' && e[i + 1] && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", e[i + 1])) {
      out[o++] = e[i + 1], i += 2;
    } else if (!strncmp(e + i, "&lt;", 4)) {
      out[o++] = '<', i += 4;
    } else if (!strncmp(e + i, "&gt;", 4)) {
      out[o++] = '>', i += 4;
    } else if (!strncmp(e + i, "&amp;", 5)) {
      out[o++] = '&', i += 5;
    } else {
      out[o++] = e[i++];
    }
  }
  out[o] = 0;
}

/* Random strings of the characters that matter: the text reads back as the
 * label, holds no raw < > and no '|' a table would split at (GFM reads a
 * backslash and the punctuation after it as one pair). */
static void test_escaped_reads_back_and_never_splits(void **state) {
  (void)state;
  static const char alpha[] = "|<>&\\`*_[]~$(){}#!-+.: aZ9";
  unsigned seed = 12345;
  for (int k = 0; k < 20000; k++) {
    char s[24], back[128];
    size_t n = (size_t)(k % 23);
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      s[i] = alpha[(seed >> 16) % (sizeof alpha - 1)];
    }
    s[n] = 0;
    const char *e = md(s);
    unescape(e, back);
    assert_string_equal(back, s);
    assert_null(strchr(e, '<'));
    assert_null(strchr(e, '>'));
    for (size_t i = 0; e[i]; i++) {
      if (e[i] == '\\' && e[i + 1]) { i++; continue; } /* a pair */
      assert_true(e[i] != '|' && e[i] != '`' && e[i] != '*' && e[i] != '[');
    }
    /* the code form: a span whose fence no backtick run inside matches, or the text form */
    const char *c = code(s);
    if (!n || strchr(s, '|')) {
      assert_string_equal(c, e);
      continue;
    }
    size_t fence = strspn(c, "`"), len = strlen(c);
    assert_true(fence >= 1 && len >= 2 * fence);
    size_t run = 0;
    for (size_t i = fence; i < len - fence; i++) {
      run = c[i] == '`' ? run + 1 : 0;
      assert_true(run < fence);
    }
  }
}

static void test_code_span(void **state) {
  (void)state;
  assert_string_equal(code("/tmp/x/rank0.lens"), "`/tmp/x/rank0.lens`");
  assert_string_equal(code("a<b>&c*_"), "`a<b>&c*_`"); /* verbatim inside a span */
  assert_string_equal(code("a`b"), "``a`b``");
  assert_string_equal(code("`x``"), "``` `x`` ```");
  assert_string_equal(code(" x "), "`  x  `");
  assert_string_equal(code("a|b\\"), "a\\|b\\\\"); /* a '|': text, as a table needs */
  assert_string_equal(code(""), "");
}

static void test_cut_marked_whole(void **state) {
  (void)state;
  char b[16];
  assert_string_equal(lens_fmt_md("abcdef", b, 6), "ab...");
  assert_string_equal(lens_fmt_md("abcde", b, 6), "abcde");   /* fits whole: no mark */
  assert_string_equal(lens_fmt_md("a<bcdef", b, 8), "a...");  /* never "a&l..." */
  assert_string_equal(lens_fmt_md("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", b, 8), "\xc3\xa9\xc3\xa9...");
  assert_string_equal(lens_fmt_md("abcdef", b, 3), "");       /* no room for the mark */
  assert_string_equal(lens_fmt_md_code("abcdefghij", b, 8), "`ab...`");
  assert_string_equal(lens_fmt_md_code("abcdef", b, 5), "");  /* no room for a span */
  memset(b, 'x', sizeof b);
  assert_string_equal(lens_fmt_md("abc", b, 0), "");
  assert_int_equal(b[0], 'x'); /* len 0: nothing written */
  /* every length: within the buffer, and the whole result or a marked cut */
  const char *s = "ev|l<img src=x>*_`[x](y)\\ caf\xc3\xa9";
  char whole[256];
  lens_fmt_md(s, whole, sizeof whole);
  for (size_t len = 1; len < sizeof whole; len++) {
    char *t = malloc(len);
    assert_non_null(t);
    lens_fmt_md(s, t, len);
    size_t n = strlen(t);
    assert_true(n < len);
    if (strcmp(t, whole)) {
      if (n) {
        assert_true(n >= 3 && !strcmp(t + n - 3, "..."));
        assert_memory_equal(t, whole, n - 3); /* a prefix of the whole, cut at a boundary */
      }
    }
    free(t);
  }
}

static void test_put_matches_buffer(void **state) {
  (void)state;
  const char *s = "h|o<s>t`x` & [y] _z_";
  char *mem = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&mem, &n);
  assert_non_null(f);
  lens_fmt_md_put(f, s);
  fputc('\n', f);
  lens_fmt_md_code_put(f, "/p/a`b.lens");
  fclose(f);
  char want[256], a[128], b[128];
  snprintf(want, sizeof want, "%s\n%s", lens_fmt_md(s, a, sizeof a), lens_fmt_md_code("/p/a`b.lens", b, sizeof b));
  assert_string_equal(mem, want);
  free(mem);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_benign_names_unchanged),  cmocka_unit_test(test_markup_and_html_escaped),
      cmocka_unit_test(test_escaped_reads_back_and_never_splits), cmocka_unit_test(test_code_span),
      cmocka_unit_test(test_cut_marked_whole),        cmocka_unit_test(test_put_matches_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
