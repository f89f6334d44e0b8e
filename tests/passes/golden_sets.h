/* The golden trace sets (tests/golden/traces/<scenario>/, one folder a
 * replay scenario, its .lens files) and the selections the fold tests run
 * on each: shared by test_fold, test_fold_views and test_window. */
#ifndef NCCL_LENS_TEST_GOLDEN_SETS_H
#define NCCL_LENS_TEST_GOLDEN_SETS_H

#include <stddef.h>
#include <stdint.h>

#include "cli/filter.h"
#include "lensread.h"

#define GOLDEN_SET_MAX_FILES 64

/* The .lens files of dir (at most max), each path malloc'ed: the count,
 * 0 when dir holds none or cannot be read. */
size_t golden_set_files(const char *dir, char **paths, size_t max);
/* Calls fn for each folder under root, in directory order: its name, its
 * path, and its .lens files (at most GOLDEN_SET_MAX_FILES, n may be 0).
 * The number of folders, or -1 with a line on stderr when root cannot be
 * read. */
long golden_sets_each(const char *root,
                     void (*fn)(const char *name, const char *dir, const char *const *paths, size_t n, void *ctx),
                     void *ctx);

/* Seven selections of a trace set, from its unfolded model m: a window in
 * the middle (35-65 % of its span), one holding everything, an empty one,
 * --comm of its first communicator, --rank 0, --func AllReduce, and that
 * communicator with rank 0 and the middle window. A selection naming a
 * communicator is left out (used 0) when m has none. The filters point
 * into the struct: fill it where it stays. */
#define GOLDEN_N_SELECTIONS 7
struct golden_selections {
  struct lens_filter f[GOLDEN_N_SELECTIONS];
  const char *what[GOLDEN_N_SELECTIONS];
  int used[GOLDEN_N_SELECTIONS];
  char comm[160];
  char *comms[1], *funcs[1];
  uint8_t rank0[1];
};
void golden_selections_of(const struct lens_model *m, struct golden_selections *s);

#endif
