/* Helpers for reader tests: a private temp directory and one-call loads. */
#ifndef NCCL_LENS_READER_TEST_UTIL_H
#define NCCL_LENS_READER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/lensread.h"
#include "../lens_test_tmp.h"

static char rt_dir[64];

static inline const char *rt_tmpdir(void) {
  if (!rt_dir[0]) {
    /* RAM-backed when possible: the fuzz test writes thousands of small files. */
    snprintf(rt_dir, sizeof rt_dir, "/dev/shm/lens-reader-XXXXXX");
    if (!mkdtemp(rt_dir)) {
      snprintf(rt_dir, sizeof rt_dir, "/tmp/lens-reader-XXXXXX");
      if (!mkdtemp(rt_dir)) abort();
    }
  }
  return rt_dir;
}
static inline const char *rt_path(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", rt_tmpdir(), name);
  return buf;
}
static inline void rt_cleanup(void) {
  if (!rt_dir[0]) return;
  if (lens_test_rmtree(rt_dir)) fprintf(stderr, "cleanup of %s failed\n", rt_dir);
}
static inline struct lens_model *rt_load1(const char *path, char *err, size_t err_len) {
  const char *p[1] = {path};
  return lens_model_load(p, 1, err, err_len, NULL);
}
static inline const struct lens_event *rt_ev(const struct lens_model *m, int32_t proc, uint64_t id) {
  int32_t i = lens_model_find(m, proc, id);
  return i < 0 ? NULL : &m->events[i];
}

#endif
