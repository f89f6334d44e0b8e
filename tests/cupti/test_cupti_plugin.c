/* The real plugin (build/lib/libnccl-profiler-lens.so) with CUPTI unusable:
 * auto on a machine without a GPU driver, off, and a bogus
 * NCCL_LENS_CUPTI_PATH. It must say so in exactly one log line (or none for
 * off), never load libcupti for off or a bad path, push no external ids,
 * and record KernelLaunch/Coll/KernelCh into a readable trace as usual.
 * CUPTI_PLUGIN_MODE picks the case (the plugin is loaded once per process). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "../lens_test_tmp.h"

static int cupti_lines, all_lines;
static char cupti_line[1024];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  all_lines++;
  if (strstr(buf, "CUPTI")) {
    cupti_lines++;
    snprintf(cupti_line, sizeof(cupti_line), "%s", buf);
  }
  if (getenv("TEST_LOG_VERBOSE")) fprintf(stderr, "nccl log: %s\n", buf);
}

static int find_cupti(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if (strstr(info->dlpi_name, "libcupti")) *(int *)arg = 1;
  return 0;
}
static int cupti_mapped(void) {
  int f = 0;
  dl_iterate_phdr(find_cupti, &f);
  return f;
}

static void test_plugin_without_cupti(void **st) {
  (void)st;
  const char *mode = getenv("CUPTI_PLUGIN_MODE");
  assert_non_null(mode);
  char dir[] = "/tmp/lens-cupti-plugin-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("NCCL_LENS_OUTPUT_DIR", dir, 1);
  char so[1024];
  snprintf(so, sizeof(so), "%s/lib/libnccl-profiler-lens.so", LENS_BUILD_DIR);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("%s", dlerror());
  assert_false(cupti_mapped()); /* never at plugin load */
  lens_nccl_profiler_v5_t *p = dlsym(h, "ncclProfiler_v5");
  assert_non_null(p);
  static int mask = LENS_EV_ALL_V5;
  void *ctx = NULL;
  assert_int_equal(p->init(&ctx, 0x77, &mask, "cupti-test", 1, 2, 0, logger), 0);
  /* A launch, its collective, and one channel with GPU timers. */
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = LENS_EV_KERNEL_LAUNCH;
  d.kernelLaunch.stream = (void *)0x5000;
  void *launch = NULL, *coll = NULL, *kch = NULL;
  assert_int_equal(p->startEvent(ctx, &launch, &d), 0);
  assert_non_null(launch);
  assert_int_equal(p->stopEvent(launch), 0);
  memset(&d, 0, sizeof(d));
  d.type = LENS_EV_COLL;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 1024;
  d.coll.nChannels = 1;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  assert_int_equal(p->startEvent(ctx, &coll, &d), 0);
  memset(&d, 0, sizeof(d));
  d.type = LENS_EV_KERNEL_CH;
  d.parentObj = coll;
  d.kernelCh.channelId = 3;
  d.kernelCh.pTimer = 1700000000000001000ull;
  assert_int_equal(p->startEvent(ctx, &kch, &d), 0);
  lens_nccl_state_args_v5_t a = {.kernelCh = {.pTimer = 1700000000000009000ull}};
  assert_int_equal(p->recordEventState(kch, LENS_ST_KERNEL_CH_STOP, &a), 0);
  assert_int_equal(p->stopEvent(kch), 0);
  assert_int_equal(p->stopEvent(coll), 0);
  assert_int_equal(p->finalize(ctx), 0);

  if (!strcmp(mode, "off")) {
    assert_int_equal(cupti_lines, 0);
    assert_false(cupti_mapped());
  } else {
    if (cupti_lines != 1) fail_msg("%d CUPTI log lines, expected 1 (last: %s)", cupti_lines, cupti_line);
    assert_non_null(strstr(cupti_line, "CUPTI off"));
    if (!strcmp(mode, "bogus_path")) {
      assert_non_null(strstr(cupti_line, "NCCL_LENS_CUPTI_PATH"));
      assert_false(cupti_mapped());
    }
  }
  /* The trace has everything, and no external id was pushed. */
  DIR *dd = opendir(dir);
  struct dirent *de;
  char trace[2048] = "";
  while ((de = readdir(dd)))
    if (strstr(de->d_name, ".lens")) snprintf(trace, sizeof(trace), "%s/%s", dir, de->d_name);
  closedir(dd);
  assert_true(trace[0]);
  char err[512];
  const char *paths[] = {trace};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof(err), NULL);
  if (!m) fail_msg("load: %s", err);
  assert_int_equal(m->procs[0].flags & LENS_SESSION_F_CUPTI, 0);
  int launches = 0, kchs = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_KERNEL_LAUNCH) {
      launches++;
      assert_int_equal(e->p.kernel_launch.ext_corr_id, 0);
    }
    if (e->type == LENS_T_KERNEL_CH) {
      kchs++;
      assert_int_equal(e->p.kernel_ch.start_gpu_ns, 1700000000000001000ull);
      assert_int_equal(e->p.kernel_ch.stop_gpu_ns, 1700000000000009000ull);
      assert_true(e->parent >= 0 && m->events[e->parent].type == LENS_T_COLL);
    }
  }
  assert_int_equal(launches, 1);
  assert_int_equal(kchs, 1);
  int noted = 0;
  for (size_t i = 0; i < m->n_notes; i++) noted += m->notes[i].text && strstr(m->notes[i].text, "CUPTI off") != NULL;
  assert_int_equal(noted, strcmp(mode, "off") ? 1 : 0);
  /* The offline analysis still maps the channel from notice times. */
  assert_int_equal(lens_analyze_gpu(m, err, sizeof(err)), 0);
  assert_int_equal(m->n_kernels, 0);
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_KERNEL_CH) {
      assert_int_equal(m->events[i].acc.time_source, LENS_TS_GPU_PTIMER);
      assert_int_equal(m->events[i].acc.gpu_stop_mono_ns - m->events[i].acc.gpu_start_mono_ns, 8000);
    }
  lens_gpu_release(m);
  lens_model_free(m);
  assert_int_equal(lens_test_rmtree(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_plugin_without_cupti)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
