/* Ring-overrun flags at scale, against the replay's truth (issue 9: at
 * 8 nodes x 8 ranks 184 flagged for 164 true overruns, at 16 x 8 24,644 for
 * 17,092, while small layouts matched exactly). Each layout replays with the
 * real plugin and scores the GPU analysis's flags (no CUPTI: the timers and
 * notice times alone) against the channels the driver knows read another
 * work item's timers:
 *  - precision must be 1: no clean channel flagged, at any layout;
 *  - recall must be 1 except for one case the trace cannot show: an item
 *    that read the timers of an item 64 later which itself read those of one
 *    64 later still (the ring lapped twice in a row). Its timers are genuine
 *    GPU times of its channel that no other channel reports, in order with
 *    its neighbours'. Every other overrun must be flagged; recall is printed.
 *    (At 16 x 8 under load about 2.5% of overruns are such chains.)
 * The small layout must match exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "overrun_score.h"
#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"

static char dir[256];

static void layout(const char *scenario, int nodes, int rpn, int iters, const char *from_dir, int exact) {
  struct truth t;
  struct lens_model *m = NULL;
  assert_int_equal(overrun_replay(from_dir ? from_dir : dir, from_dir ? "-" : scenario, nodes, rpn, iters, &t, &m), 0);
  char err[512], what[128];
  assert_int_equal(lens_analyze_gpu(m, err, sizeof(err)), 0);
  struct overrun_score sc;
  overrun_score(&t, m, &sc);
  snprintf(what, sizeof(what), "%s %d x %d, %d iters", scenario, nodes, rpn, iters);
  overrun_score_print(what, &sc);
  assert_int_equal(sc.unmatched, 0);
  assert_true(sc.channels > 0);
  assert_true(sc.truth_overruns > 0);
  assert_int_equal(sc.flagged, sc.true_pos); /* precision 1 */
  assert_int_equal(sc.missed_visible, 0);    /* every overrun the trace shows is flagged */
  if (exact) assert_int_equal(sc.true_pos, sc.truth_overruns);
  lens_gpu_release(m);
  lens_model_free(m);
  truth_free(&t);
}

/* OVERRUN_LAYOUT="scenario nodes rpn iters" (scenario "-" with OVERRUN_DIR:
 * the traces and truth.json already there): one more layout, for study. */
static void test_env_layout(void **st) {
  (void)st;
  const char *l = getenv("OVERRUN_LAYOUT");
  char sc[64];
  int nodes, rpn, iters;
  if (!l || sscanf(l, "%63s %d %d %d", sc, &nodes, &rpn, &iters) != 4) skip();
  layout(sc, nodes, rpn, iters, getenv("OVERRUN_DIR"), 0);
}

/* The overrun scenario: one proxy held back while 72 items pass. */
static void test_overrun_2x2_exact(void **st) {
  (void)st;
  layout("overrun", 2, 2, 2, NULL, 1);
}

/* Every scenario at 16 nodes x 8 ranks (4 x 8 in sanitizer builds, which
 * run the plugin several times slower): tens of thousands of overruns. */
static void test_all_16x8(void **st) {
  (void)st;
  int nodes = strlen(LENS_SANITIZER) ? 4 : 16;
  layout("all", nodes, 8, 1, NULL, 0);
}

/* removed when the test exits (lens_test_tmp.h) */
static int setup(void **st) {
  (void)st;
  lens_test_tmpdir(dir, sizeof dir, "overrun-scale");
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_env_layout),
      cmocka_unit_test(test_overrun_2x2_exact),
      cmocka_unit_test(test_all_16x8),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
