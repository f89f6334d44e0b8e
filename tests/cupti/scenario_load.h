/* A committed replay scenario's traces (tests/golden/traces/<name>/), loaded
 * whole into one model: its .lens files in name order (readdir's order is
 * the directory's), so every load of it is the same model. Shared by the
 * GPU analysis tests that run on the golden traces. */
#ifndef NCCL_LENS_TEST_SCENARIO_LOAD_H
#define NCCL_LENS_TEST_SCENARIO_LOAD_H

#include "lensread.h"

/* NULL when dir holds no trace (at most 64 are read) or they do not load. */
struct lens_model *scenario_load(const char *dir);

#endif
