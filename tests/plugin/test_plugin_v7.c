/* ncclProfiler_v7 through the ABI only: every field v7 adds reaches the trace
 * (userTag on CollApi, P2pApi, Coll, P2p, CeColl; kernelVariant and
 * isSymColl; KernelPhase with both pTimers under its KernelCh), the library
 * version lands in SESSION, and the thread that reports KernelCh gets the
 * profiler role on NCCL >= 2.31.
 *
 * This file builds twice. As test_plugin_v7 the process is "NVIDIA NCCL":
 * it exports ncclGetVersion (the plugin finds it as it finds libnccl's).
 * As test_plugin_v7_rccl (LENS_TEST_RCCL) it also exports rcclGetVersion,
 * as RCCL does, and every v7 descriptor is a 128-byte heap block, RCCL's
 * size, with the bytes where NVIDIA's tags would be filled with a pattern:
 * under ASan a read of coll.userTag (@128) aborts, and a tag read anywhere
 * else shows up as the pattern in the trace. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "lensread.h"
#include "plugin_driver.h"

/* The library's version as the process reports it (children set it). */
static int g_version = 23102;
__attribute__((visibility("default"))) int ncclGetVersion(int *v) {
  *v = g_version;
  return 0;
}
#ifdef LENS_TEST_RCCL
__attribute__((visibility("default"))) int rcclGetVersion(int *v) {
  *v = g_version;
  return 0;
}
#define DESCR_BYTES LENS_NCCL_DESCR_V7_RCCL_SIZE
/* The blocks are RCCL's 128 bytes seen through NVIDIA's 136-byte type on
 * purpose; only members inside the 128 bytes are touched here. */
#pragma GCC diagnostic ignored "-Warray-bounds"
#else
#define DESCR_BYTES sizeof(lens_nccl_descr_v7_t)
#endif
#define PATTERN 0x5A

static int g_mask;

/* A descriptor of exactly DESCR_BYTES on the heap, pattern-filled past the
 * members a test sets (so bytes NCCL or RCCL would not define are visible). */
static lens_nccl_descr_v7_t *descr(uint64_t type, void *parent) {
  lens_nccl_descr_v7_t *d = malloc(DESCR_BYTES);
  memset(d, PATTERN, DESCR_BYTES);
  d->type = type;
  d->parentObj = parent;
  d->rank = 0;
  return d;
}

#ifndef LENS_TEST_RCCL
#define SET_TAG(d, member, v) ((d)->member.userTag = (v))
#else
#define SET_TAG(d, member, v) ((void)0) /* RCCL has none */
#endif

struct kch_args {
  const lens_nccl_profiler_v7_t *t;
  void *ctx, *coll;
  int phases;
  const char *reg_dir;  /* registry to look in while the thread lives */
  uint32_t want_role;   /* the role it must have there */
  int reg_ok;
};

/* The registry (include/nccl-lens/registry.h) lists this thread with want
 * role within 2 s: what `nccl-lens sched --follow` watches. */
static int registry_lists_me(const char *dir, uint32_t want) {
  char path[400], line[256];
  snprintf(path, sizeof path, "%s/%d.reg", dir, (int)getpid());
  unsigned self = (unsigned)gettid();
  for (int tries = 0; tries < 400; tries++) {
    FILE *f = fopen(path, "r");
    if (f) {
      while (fgets(line, sizeof line, f)) {
        unsigned tid, outer, roles;
        if (sscanf(line, "thread %u %u %x", &tid, &outer, &roles) == 3 && tid == self && (roles & want)) {
          fclose(f);
          return 1;
        }
      }
      fclose(f);
    }
    usleep(5000);
  }
  return 0;
}

/* The profiler thread (or, before 2.31, the proxy): KernelCh, its phases
 * (start, 31, stop, back to back), then 22 and stop. */
static void *kernel_ch_thread(void *arg) {
  struct kch_args *a = arg;
  static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
  lens_nccl_descr_v7_t *d = descr(LENS_EV_KERNEL_CH, a->coll);
  d->kernelCh.channelId = 3;
  d->kernelCh.pTimer = 1000;
  void *kch = NULL;
  a->t->startEvent(a->ctx, &kch, d);
  free(d);
  for (int i = 0; i < a->phases; i++) {
    d = descr(LENS_EV_KERNEL_PHASE, kch);
    d->kernelPhase.channelId = 3;
    d->kernelPhase.phaseId = (uint8_t)i;
    d->kernelPhase.phaseName = names[i];
    d->kernelPhase.pTimer = 1000 + 100 * (uint64_t)i;
    void *ph = NULL;
    a->t->startEvent(a->ctx, &ph, d);
    free(d);
    lens_nccl_state_args_v7_t s = {.kernelCh.pTimer = 1000 + 100 * (uint64_t)(i + 1)};
    a->t->recordEventState(ph, LENS_ST_KERNEL_PHASE_STOP, &s);
    a->t->stopEvent(ph);
  }
  lens_nccl_state_args_v7_t s = {.kernelCh.pTimer = 1400};
  a->t->recordEventState(kch, LENS_ST_KERNEL_CH_STOP, &s);
  a->t->stopEvent(kch);
  a->reg_ok = registry_lists_me(a->reg_dir, a->want_role);
  return NULL;
}

/* One tagged symmetric AllReduce, one tagged Send, one tagged CeColl, the
 * KernelCh (+ 3 phases) from another thread. Returns 0 when all went. */
static int child_body(int version, int mask, const char *dir) {
  g_version = version;
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 10;
  const lens_nccl_profiler_v7_t *t = dlsym(p.dl, "ncclProfiler_v7");
  if (!t) return 11;
  void *ctx = NULL;
  g_mask = 0;
  if (t->init(&ctx, 0x77, &g_mask, "v7", 1, 2, 0, test_logger) || !ctx) return 12;
  g_mask = mask; /* NCCL re-applies a RAS mask after every init */
  lens_nccl_descr_v7_t *d = descr(LENS_EV_COLL_API, NULL);
  d->collApi.base.func = "AllReduce";
  d->collApi.base.datatype = "ncclFloat32";
  d->collApi.base.count = 256;
  d->collApi.base.stream = (void *)0x10;
  d->collApi.base.graphCaptured = false;
  SET_TAG(d, collApi, 2);
  void *capi = NULL, *coll = NULL, *papi = NULL, *p2p = NULL, *ce = NULL;
  t->startEvent(ctx, &capi, d);
  free(d);
  d = descr(LENS_EV_COLL, capi);
  d->coll.base.seqNumber = 5;
  d->coll.base.func = "AllReduce";
  d->coll.base.sendBuff = NULL;
  d->coll.base.recvBuff = NULL;
  d->coll.base.count = 256;
  d->coll.base.root = 0;
  d->coll.base.datatype = "ncclFloat32";
  d->coll.base.nChannels = 4;
  d->coll.base.nWarps = 16;
  d->coll.base.algo = "AGxLL_R";
  d->coll.base.proto = "";
  d->coll.base.parentGroup = NULL;
  d->coll.kernelVariant = "AllReduce_AGxLL_R";
  d->coll.isSymColl = true;
  SET_TAG(d, coll, 2);
  t->startEvent(ctx, &coll, d);
  free(d);
  d = descr(LENS_EV_P2P_API, NULL);
  d->p2pApi.base.func = "Send";
  d->p2pApi.base.datatype = "ncclInt8";
  d->p2pApi.base.count = 64;
  d->p2pApi.base.stream = NULL;
  d->p2pApi.base.graphCaptured = false;
  SET_TAG(d, p2pApi, 3);
  t->startEvent(ctx, &papi, d);
  free(d);
  d = descr(LENS_EV_P2P, papi);
  d->p2p.base.func = "Send";
  d->p2p.base.buff = NULL;
  d->p2p.base.datatype = "ncclInt8";
  d->p2p.base.count = 64;
  d->p2p.base.peer = 1;
  d->p2p.base.nChannels = 1;
  d->p2p.base.parentGroup = NULL;
  SET_TAG(d, p2p, 3);
  t->startEvent(ctx, &p2p, d);
  free(d);
  d = descr(LENS_EV_CE_COLL, NULL);
  memset(&d->ceColl.base, 0, sizeof d->ceColl.base);
  d->ceColl.base.func = "AllGather";
  d->ceColl.base.datatype = "ncclInt8";
  d->ceColl.base.count = 8;
  SET_TAG(d, ceColl, 4);
  t->startEvent(ctx, &ce, d);
  free(d);
#ifdef LENS_TEST_RCCL
  uint32_t want = LENS_ROLE_PROXY; /* RCCL: no profiler thread is known of; KernelCh stays a proxy's */
#else
  uint32_t want = version >= 23100 ? LENS_ROLE_PROFILER : LENS_ROLE_PROXY;
#endif
  struct kch_args ka = {t, ctx, coll, 3, dir, want, 0};
  pthread_t th;
  pthread_create(&th, NULL, kernel_ch_thread, &ka);
  pthread_join(th, NULL);
  if (!ka.reg_ok) return 14;
  t->stopEvent(ce);
  t->stopEvent(p2p);
  t->stopEvent(papi);
  t->stopEvent(coll);
  t->stopEvent(capi);
  if (t->finalize(ctx)) return 13;
  plugin_close(&p);
  return 0;
}

static struct lens_model *run(int version, int mask, char *dir, size_t cap) {
  lens_test_tmpdir(dir, cap, "v7");
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NCCL_LENS_OUTPUT_DIR", dir, 1);
    setenv("NCCL_LENS_REGISTRY_DIR", dir, 1);
    setenv("NCCL_LENS_WRITER_PERIOD_US", "2000", 1);
    _exit(child_body(version, mask, dir));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  char path[600];
  trace_path_for(path, sizeof path, dir, pid);
  char err[256] = "";
  const char *paths[1] = {path};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fprintf(stderr, "load: %s\n", err);
  assert_non_null(m);
  return m;
}

static const struct lens_event *first_of(const struct lens_model *m, int type) {
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == type) return &m->events[i];
  return NULL;
}
static size_t count_of(const struct lens_model *m, int type) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == type;
  return n;
}

#define MASK_ALL_PHASES (LENS_EV_ALL_V6 | LENS_EV_KERNEL_PHASE)

static void check_common(const struct lens_model *m) {
  assert_int_equal(m->n_procs, 1);
  assert_int_equal(m->procs[0].nccl_api_version, 7);
  assert_int_equal(m->procs[0].drops.ring_full, 0);
  const struct lens_event *c = first_of(m, LENS_T_COLL);
  assert_non_null(c);
  assert_int_equal(c->p.coll.is_sym_coll, 1);
  assert_string_equal(c->p.coll.kernel_variant, "AllReduce_AGxLL_R");
  assert_string_equal(c->p.coll.algo, "AGxLL_R");
  assert_string_equal(c->p.coll.proto, "");
  const struct lens_event *k = first_of(m, LENS_T_KERNEL_CH);
  assert_non_null(k);
  assert_int_equal(k->p.kernel_ch.stop_gpu_ns, 1400);
  assert_int_equal(count_of(m, LENS_T_KERNEL_PHASE), 3);
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_PHASE) continue;
    int id = e->p.kernel_phase.phase_id;
    assert_true(id >= 0 && id < 3);
    static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
    assert_string_equal(e->p.kernel_phase.name, names[id]);
    assert_int_equal(e->p.kernel_phase.channel, 3);
    assert_int_equal(e->p.kernel_phase.start_gpu_ns, 1000 + 100 * id);
    assert_int_equal(e->p.kernel_phase.stop_gpu_ns, 1100 + 100 * id);
    assert_true(e->parent >= 0);
    assert_int_equal(m->events[e->parent].type, LENS_T_KERNEL_CH);
    assert_int_equal(e->thread, k->thread); /* the thread that reported the KernelCh */
  }
}

#ifndef LENS_TEST_RCCL
/* NCCL 2.31.2: every tag recorded, KernelCh's thread has the profiler role
 * (and not the proxy role), the version is in SESSION. */
static void test_v7_nccl_2_31(void **state) {
  (void)state;
  char dir[256];
  struct lens_model *m = run(23102, MASK_ALL_PHASES, dir, sizeof dir);
  check_common(m);
  assert_int_equal(m->procs[0].lib_version, 23102);
  assert_int_equal(m->procs[0].lib_kind, LENS_LIB_NCCL);
  assert_true(m->procs[0].lib_flags & LENS_LIB_F_USER_TAGS);
  assert_int_equal(first_of(m, LENS_T_COLL_API)->p.coll_api.user_tag, 2);
  assert_int_equal(first_of(m, LENS_T_COLL)->p.coll.user_tag, 2);
  assert_int_equal(first_of(m, LENS_T_P2P_API)->p.p2p_api.user_tag, 3);
  assert_int_equal(first_of(m, LENS_T_P2P)->p.p2p.user_tag, 3);
  assert_int_equal(first_of(m, LENS_T_CE_COLL)->p.ce_coll.user_tag, 4);
  const struct lens_thread *th = &m->threads[first_of(m, LENS_T_KERNEL_CH)->thread];
  assert_true(th->roles & LENS_ROLE_PROFILER);
  assert_false(th->roles & LENS_ROLE_PROXY);
  lens_model_free(m);
  lens_test_rmtree(dir);
}

/* A v7 call in a process whose NCCL says 2.30: the tag bytes are not
 * trusted (the pattern never reaches the trace), KernelCh stays a proxy's. */
static void test_v7_old_version_no_tags(void **state) {
  (void)state;
  char dir[256];
  struct lens_model *m = run(23007, MASK_ALL_PHASES, dir, sizeof dir);
  check_common(m);
  assert_int_equal(m->procs[0].lib_version, 23007);
  assert_false(m->procs[0].lib_flags & LENS_LIB_F_USER_TAGS);
  assert_int_equal(first_of(m, LENS_T_COLL)->p.coll.user_tag, 0);
  assert_int_equal(first_of(m, LENS_T_COLL_API)->p.coll_api.user_tag, 0);
  const struct lens_thread *th = &m->threads[first_of(m, LENS_T_KERNEL_CH)->thread];
  assert_true(th->roles & LENS_ROLE_PROXY);
  lens_model_free(m);
  lens_test_rmtree(dir);
}
#else
/* RCCL: 128-byte descriptors; nothing past them is read (ASan), no tag is
 * recorded, the variant and isSymColl (inside the 128 bytes) are. */
static void test_v7_rccl_128_bytes(void **state) {
  (void)state;
  char dir[256];
  struct lens_model *m = run(23102, MASK_ALL_PHASES, dir, sizeof dir);
  check_common(m);
  assert_int_equal(m->procs[0].lib_kind, LENS_LIB_RCCL);
  assert_false(m->procs[0].lib_flags & LENS_LIB_F_USER_TAGS);
  for (size_t i = 0; i < m->n_events; i++) assert_int_equal(lens_event_user_tag(&m->events[i]), 0);
  lens_model_free(m);
  lens_test_rmtree(dir);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
#ifndef LENS_TEST_RCCL
      cmocka_unit_test(test_v7_nccl_2_31),
      cmocka_unit_test(test_v7_old_version_no_tags),
#else
      cmocka_unit_test(test_v7_rccl_128_bytes),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
