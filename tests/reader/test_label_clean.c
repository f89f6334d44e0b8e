/* Labels read from a trace are made printable (lens_label_clean, names.c):
 * a crafted trace must not reach a terminal with an escape sequence or a
 * line break, nor show a name reversed by a direction override; honest
 * names, UTF-8 included, are kept byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "trace_builder.h"
#include "lens_utf8.h"

static void clean_is(const char *in, const char *want) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", in);
  lens_label_clean(buf, sizeof buf);
  assert_string_equal(buf, want);
  assert_int_equal(strlen(buf), strlen(in)); /* one for one: cleaned in place */
}

static void test_clean_rules(void **state) {
  (void)state;
  clean_is("replay-world_0.x:1 (a/b)", "replay-world_0.x:1 (a/b)");
  clean_is("\x1b[31mred\x1b[0m", "?[31mred?[0m");
  clean_is("line\nforged\r\t", "line?forged??");
  clean_is("del\x7f", "del?");
  clean_is("caf\xc3\xa9 \xe9\x80\x9a\xe4\xbf\xa1 \xf0\x9f\x9a\x80", "caf\xc3\xa9 \xe9\x80\x9a\xe4\xbf\xa1 \xf0\x9f\x9a\x80");
  clean_is("c1 \xc2\x9b" "31m", "c1 ??31m");                  /* U+009B, a CSI to some terminals */
  clean_is("rlo \xe2\x80\xae" "txt.exe", "rlo ???txt.exe");   /* U+202E right-to-left override */
  clean_is("zw \xe2\x80\x8b|", "zw ???|");                    /* U+200B zero width space */
  clean_is("bom \xef\xbb\xbf", "bom ???");
  clean_is("stray \x80\xbf end", "stray ?? end");
  clean_is("cut \xe9\x80", "cut ??");                          /* a sequence cut short */
  clean_is("overlong \xc0\xaf \xe0\x80\xaf", "overlong ?? ???");
  clean_is("surrogate \xed\xa0\x80", "surrogate ???");
  /* cap bytes at most, no terminator needed */
  char raw[4] = {'a', '\n', 'b', '\n'};
  lens_label_clean(raw, 3);
  assert_memory_equal(raw, "a?b\n", 4);
}

/* Every name a trace carries arrives cleaned in the model. */
static void test_model_names_cleaned(void **state) {
  (void)state;
  char path[128], err[256];
  const char *evil = "ev|l\x1b]0;owned\x07\nNEXT\xe2\x80\xae";
  struct tb *t = tb_open(rt_path(path, sizeof path, "labels.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 100, evil, 6);
  tb_comm(t, 0xAA, 0x77, 0, 2, 1, 0, evil);
  tb_thread(t, 3, 500, LENS_ROLE_APP, "thr\x1b[2J", -1, UINT32_MAX);
  tb_string(t, 1, evil);
  tb_note(t, 5, 1, "note\x1b[2Jline\nforged");
  uint64_t id = LENS_ID_MAKE(LENS_T_GROUP_API, 3, 1);
  tb_events_begin(t, 3);
  tb_start(t, LENS_T_GROUP_API, id, 0, 0xAA, 10, 0, 0, NULL, 0);
  tb_stop(t, id, 15);
  tb_flush(t);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  const char *want = "ev|l?]0;owned??NEXT???";
  assert_true(m->n_procs >= 1);
  assert_string_equal(m->procs[0].host, want);
  assert_true(m->n_comms >= 1);
  assert_string_equal(m->comms[0].name, want);
  assert_true(m->n_threads >= 1);
  assert_string_equal(m->threads[0].name, "thr?[2J");
  assert_true(m->n_notes >= 1);
  assert_string_equal(m->notes[0].text, "note?[2Jline?forged");
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_clean_rules), cmocka_unit_test(test_model_names_cleaned)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
