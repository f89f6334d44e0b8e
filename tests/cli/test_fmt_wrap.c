/* One way to wrap prose and records of fields to the output's width
 * (tools/cli/format.h, lens_fmt_wrap, lens_fmt_wrap_fields): the exact lines
 * for a hanging indent, the spaces kept and dropped, a word longer than the
 * room, a newline asked for, UTF-8 counted in characters, and no line past
 * the width on long generated text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/format.h"

/* What a wrapper writes, as one string (freed by the caller). */
static char *wrapped(int fields, const char *head, const char *indent, const char *text, int width) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  if (fields) lens_fmt_wrap_fields(f, head, indent, text, width);
  else lens_fmt_wrap(f, head, indent, text, width);
  fclose(f);
  return buf;
}

static void expect(int fields, const char *head, const char *indent, const char *text, int width, const char *want) {
  char *got = wrapped(fields, head, indent, text, width);
  if (strcmp(got, want)) fail_msg("wrap(\"%s\", width %d) =\n%s\nwant\n%s", text, width, got, want);
  free(got);
}

static void test_hanging_indent(void **state) {
  (void)state;
  /* 20 columns: "verdict: " then the words, the next lines under the first word */
  expect(0, "verdict: ", "         ", "one two three four five six", 20,
         "verdict: one two\n         three four\n         five six\n");
  /* exactly the width fits; one more column breaks */
  expect(0, "", "  ", "aaaa bbbb", 9, "aaaa bbbb\n");
  expect(0, "", "  ", "aaaa bbbb", 8, "aaaa\n  bbbb\n");
  /* short text: one line, as it is */
  expect(0, "note: ", "      ", "all fine", 120, "note: all fine\n");
  expect(0, "note: ", "      ", "", 120, "note: \n");
}

static void test_spaces(void **state) {
  (void)state;
  /* inner runs kept on a line, dropped where it breaks; trailing ones dropped */
  expect(0, "", "", "a  b   c    ", 80, "a  b   c\n");
  expect(0, "", "> ", "aa  bb", 4, "aa\n> bb\n");
  /* leading spaces of the text stay (an indented line passed whole) */
  expect(0, "", "    ", "  x y", 80, "  x y\n");
}

static void test_long_word_and_newline(void **state) {
  (void)state;
  /* a word longer than the room gets a line of its own, unbroken */
  expect(0, "h: ", "   ", "a 0123456789abcdef b", 10, "h: a\n   0123456789abcdef\n   b\n");
  /* a word longer than the room on the first line stays there */
  expect(0, "", "  ", "0123456789abcdef", 10, "0123456789abcdef\n");
  /* a newline in the text starts a line with the indent */
  expect(0, "x: ", "   ", "one\ntwo three", 80, "x: one\n   two three\n");
}

static void test_utf8_columns(void **state) {
  (void)state;
  /* "µs" is 3 bytes, 2 columns: "5 µs 6 µs" is 9 columns and fits 9 */
  expect(0, "", "", "5 \xc2\xb5s 6 \xc2\xb5s", 9, "5 \xc2\xb5s 6 \xc2\xb5s\n");
  expect(0, "", "", "5 \xc2\xb5s 6 \xc2\xb5s", 8, "5 \xc2\xb5s 6\n\xc2\xb5s\n");
}

static void test_fields(void **state) {
  (void)state;
  /* only two or more spaces break: "notice lag 1.0 us" stays whole */
  expect(1, "ch 0 ", "     ", "span 1 us  notice lag 1.0 us  source cupti", 30,
         "ch 0 span 1 us\n     notice lag 1.0 us\n     source cupti\n");
  expect(1, "", "  ", "a b  c d", 80, "a b  c d\n");
  /* a field wider than the room stays whole */
  expect(1, "", "  ", "a b c d e f  g", 5, "a b c d e f\n  g\n");
}

/* Generated prose of every word length up to 30, at widths 20..120: no line
 * is wider than the width unless it is one word; no word is lost or split. */
static void test_never_past_width(void **state) {
  (void)state;
  char text[4096];
  size_t o = 0;
  unsigned x = 12345;
  while (o + 40 < sizeof text) {
    x = x * 1103515245u + 12345u;
    int n = 1 + (int)((x >> 16) % 30);
    for (int i = 0; i < n; i++) text[o++] = (char)('a' + (i + n) % 26);
    text[o++] = ' ';
  }
  text[o] = 0;
  for (int width = 20; width <= 120; width += 7) {
    char *got = wrapped(0, "head: ", "  ", text, width);
    size_t words_in = 0, words_out = 0;
    for (const char *p = text; *p; p++) words_in += *p != ' ' && (p[1] == ' ' || !p[1]);
    for (char *line = strtok(got, "\n"); line; line = strtok(NULL, "\n")) {
      int len = (int)strlen(line);
      const char *first = line == got ? line + 6 : line + 2;
      if (len > width && strchr(first, ' ')) fail_msg("width %d: a line of %d columns: %s", width, len, line);
      for (const char *p = first; *p; p++) words_out += *p != ' ' && (p[1] == ' ' || !p[1]);
    }
    assert_int_equal(words_in, words_out);
    free(got);
  }
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_hanging_indent), cmocka_unit_test(test_spaces),
                                 cmocka_unit_test(test_long_word_and_newline), cmocka_unit_test(test_utf8_columns),
                                 cmocka_unit_test(test_fields), cmocka_unit_test(test_never_past_width)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
