/* The NVTX emitter driven through its hooks, under the recording injection:
 * setup registrations, KernelLaunch push/pop and plan marks, proxy-thread
 * ranges, caps, step summaries and counters. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvtx_check.h"
#include "nvtx_emit.h"
#include "nvtx_fakes.h"

#define CTX_A 0x1000ull
#define CTX_B 0x2000ull
#define OFF_GPU 1700000000000000000ll /* synthetic globaltimer = host mono + this */

static const struct nvtx_inject_log *L;
static int dom;

static int setup_all(void **state) {
  setenv("NVTX_INJECTION64_PATH", NVTX_INJECT_PATH, 1);
  fake_comm_add(CTX_A, 0, 2, "commA");
  fake_comm_add(CTX_B, 1, 4, "commB");
  lens_nvtx_setup();
  L = nvtx_log_if_loaded(NVTX_INJECT_PATH);
  if (!L) return -1;
  dom = nvtx_domain_index(L, LENS_NVTX_DOMAIN);
  return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define OVER_MSG LENS_NVTX_OVER_PREFIX STR(LENS_NVTX_MAX_OPEN_OPS) " open" /* as nvtx_proxy.c writes it */
static const struct nvtx_ev *find_after(uint64_t from, int kind, int domain, const char *msg_prefix) {
  for (uint64_t i = from; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->kind == kind && e->domain == domain &&
        (!msg_prefix || strncmp(e->msg, msg_prefix, strlen(msg_prefix)) == 0))
      return e;
  }
  return NULL;
}

static void test_setup_registers_everything(void **state) {
  assert_int_equal(lens_nvtx_active, 1);
  assert_true(dom >= 0);
  assert_true(nvtx_category_named(L, dom, LENS_NVTX_CAT_LAUNCH, "KernelLaunch"));
  assert_true(nvtx_category_named(L, dom, LENS_NVTX_CAT_PLAN, "Plan"));
  assert_true(nvtx_category_named(L, dom, LENS_NVTX_CAT_PROXY_OP, "ProxyOp"));
  assert_true(nvtx_category_named(L, dom, LENS_NVTX_CAT_PROXY_CTRL, "ProxyCtrl"));
  assert_true(nvtx_category_named(L, dom, LENS_NVTX_CAT_KERNEL_CH, "KernelCh"));
  assert_non_null(find_after(0, NVTX_EV_REGISTER_STRING, dom, "Proxy sleep"));
  assert_non_null(find_after(0, NVTX_EV_REGISTER_STRING, dom, "Proxy active"));
  int schemas = 0, counters = 0;
  for (uint64_t i = 0; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->kind == NVTX_EV_SCHEMA && e->domain == dom) {
      schemas++;
      if (e->id == LENS_NVTX_SID_PLAN) assert_int_equal(e->size, sizeof(struct lens_nvtx_plan_payload));
      if (e->id == LENS_NVTX_SID_PROXY_OP) assert_int_equal(e->size, sizeof(struct lens_nvtx_proxy_op_payload));
      if (e->id == LENS_NVTX_SID_CH_LAG) assert_int_equal(e->size, sizeof(struct lens_nvtx_ch_lag_payload));
      assert_true(e->value > 0);
    }
    if (e->kind == NVTX_EV_COUNTER_REG && e->domain == dom) {
      counters++;
      assert_true(e->id == LENS_NVTX_CID_CH_LAG || e->id == LENS_NVTX_CID_STEPS);
      assert_int_equal(e->value, NVTX_SCOPE_CURRENT_SW_THREAD);
    }
  }
  assert_int_equal(schemas, 3);
  assert_int_equal(counters, 2);
  assert_true(lens_nvtx_g.payload_ok);
  assert_true(lens_nvtx_g.counters_ok);
}

/* One app-thread plan: API ops, launch bracket with a stand-in launch mark, then Coll. */
static uint64_t app_op(unsigned type, uint64_t group, uint64_t ctx, const char *func, uint64_t count,
                       const char *dtype) {
  struct fake_rec r;
  uint64_t id = fake_id(type, 1);
  if (type == LENS_T_COLL_API) {
    struct lens_p_coll_api p = {(lens_str_t)(uintptr_t)func, count, (lens_str_t)(uintptr_t)dtype, 0, 0, 0, 0};
    lens_nvtx_on_start(fake_rec(&r, type, id, group, ctx, 0, &p, sizeof(p)));
  } else {
    struct lens_p_p2p_api p = {(lens_str_t)(uintptr_t)func, count, (lens_str_t)(uintptr_t)dtype, 0, 0, 0, 0};
    lens_nvtx_on_start(fake_rec(&r, type, id, group, ctx, 0, &p, sizeof(p)));
  }
  lens_nvtx_on_stop(id);
  return id;
}

static uint64_t group_start(uint64_t ctx) {
  struct fake_rec r;
  uint64_t id = fake_id(LENS_T_GROUP_API, 1);
  struct lens_p_group_api p = {0, 1};
  lens_nvtx_on_start(fake_rec(&r, LENS_T_GROUP_API, id, 0, ctx, 0, &p, sizeof(p)));
  return id;
}

static void launch(uint64_t group, uint64_t ctx) {
  static nvtxDomainHandle_t replay;
  if (!replay) replay = nvtxDomainCreateA("nccl-lens-replay");
  struct fake_rec r;
  uint64_t id = fake_id(LENS_T_KERNEL_LAUNCH, 1);
  struct lens_p_kernel_launch p = {0, 0xE0000000ull + id % 1000}; /* a CUPTI external id */
  lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_LAUNCH, id, group, ctx, 0, &p, sizeof(p)));
  nvtxEventAttributes_t a = lens_nvtx_attr(0, "cuLaunchKernelEx");
  nvtxDomainMarkEx(replay, &a);
  lens_nvtx_on_stop(id);
}

static void coll(uint64_t api, uint64_t ctx, const char *func, uint64_t count, const char *dtype, uint64_t seq,
                 const char *algo, const char *proto, int nch) {
  struct fake_rec r;
  uint64_t id = fake_id(LENS_T_COLL, 1);
  struct lens_p_coll p = {0};
  p.seq = seq;
  p.func = (lens_str_t)(uintptr_t)func;
  p.count = count;
  p.datatype = (lens_str_t)(uintptr_t)dtype;
  p.algo = (lens_str_t)(uintptr_t)algo;
  p.proto = (lens_str_t)(uintptr_t)proto;
  p.n_channels = (uint8_t)nch;
  lens_nvtx_on_start(fake_rec(&r, LENS_T_COLL, id, api, ctx, 0, &p, sizeof(p)));
  lens_nvtx_on_stop(id);
}

static void test_launch_push_pop_and_plan_mark(void **state) {
  uint64_t from = L->count;
  uint64_t g = group_start(CTX_A);
  uint64_t api = app_op(LENS_T_COLL_API, g, CTX_A, "AllReduce", 1 << 20, "ncclFloat32");
  launch(g, CTX_A);
  coll(api, CTX_A, "AllReduce", 1 << 20, "ncclFloat32", 0, "RING", "SIMPLE", 2);

  const struct nvtx_ev *push = find_after(from, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(push);
  assert_string_equal(push->msg, "AllReduce 4 MiB f32 #0 (r0/2)");
  assert_int_equal(push->category, LENS_NVTX_CAT_LAUNCH);
  assert_int_equal(push->schema_id, LENS_NVTX_SID_PLAN);
  struct lens_nvtx_plan_payload pl;
  memcpy(&pl, push->payload, sizeof(pl));
  assert_int_equal(pl.bytes, 4u << 20);
  assert_int_equal(pl.flags & LENS_NVTX_PLAN_F_PREDICTED, LENS_NVTX_PLAN_F_PREDICTED);
  assert_int_equal(pl.n_ops, 1);
  assert_true(pl.ext_corr_id >= 0xE0000000ull && pl.ext_corr_id < 0xE0000000ull + 1000);
  assert_int_equal(push->color, 0xFF76B900u);
  assert_string_equal(nvtx_ev_str(push, 0), "AllReduce");

  /* the stand-in launch sits inside the bracket, on the same thread, and nothing else of ours */
  int replay = nvtx_domain_index(L, "nccl-lens-replay");
  const struct nvtx_ev *mark = find_after(push->seq, NVTX_EV_MARK, replay, "cuLaunchKernelEx");
  const struct nvtx_ev *pop = find_after(push->seq, NVTX_EV_POP, dom, NULL);
  assert_non_null(mark);
  assert_non_null(pop);
  assert_true(mark->seq < pop->seq);
  assert_int_equal(mark->tid, push->tid);
  assert_int_equal(pop->tid, push->tid);
  for (uint64_t i = push->seq + 1; i < pop->seq; i++) assert_true(L->ev[i].domain != dom);

  const struct nvtx_ev *plan = find_after(pop->seq, NVTX_EV_MARK, dom, NULL);
  assert_non_null(plan);
  assert_string_equal(plan->msg, "AllReduce RING/SIMPLE 4 MiB f32 ch2 seq 0 (r0/2)");
  assert_int_equal(plan->category, LENS_NVTX_CAT_PLAN);
  memcpy(&pl, plan->payload, sizeof(pl));
  assert_int_equal(pl.flags, 0);
  assert_int_equal(pl.n_channels, 2);
  assert_int_equal(pl.comm_id, 0xC0FFEE00ull + CTX_A);
  assert_int_equal(pl.seq, 0);
  assert_string_equal(nvtx_ev_str(plan, 0), "AllReduce");
  assert_string_equal(nvtx_ev_str(plan, 1), "RING");
  assert_string_equal(nvtx_ev_str(plan, 2), "SIMPLE");

  /* the next AllReduce on this comm is predicted as seq 1 */
  from = L->count;
  g = group_start(CTX_A);
  api = app_op(LENS_T_COLL_API, g, CTX_A, "AllReduce", 256, "ncclBfloat16");
  launch(g, CTX_A);
  coll(api, CTX_A, "AllReduce", 256, "ncclBfloat16", 1, "TREE", "LL", 1);
  push = find_after(from, NVTX_EV_PUSH, dom, NULL);
  assert_string_equal(push->msg, "AllReduce 512 B bf16 #1 (r0/2)");
}

static void test_group_names_first_ops_and_count(void **state) {
  uint64_t from = L->count;
  uint64_t g = group_start(CTX_A);
  for (int i = 0; i < 3; i++) app_op(LENS_T_P2P_API, g, CTX_A, "Send", 1000, "ncclInt8");
  for (int i = 0; i < 3; i++) app_op(LENS_T_P2P_API, g, CTX_A, "Recv", 1536, "ncclInt8");
  launch(g, CTX_A);
  const struct nvtx_ev *push = find_after(from, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(push);
  assert_string_equal(push->msg,
                      "Send 1000 B i8, Send 1000 B i8, Send 1000 B i8, Recv 1.5 KiB i8, +2 more; 6 ops 7.4 KiB (r0/2)");
  struct lens_nvtx_plan_payload pl;
  memcpy(&pl, push->payload, sizeof(pl));
  assert_int_equal(pl.n_ops, 6);
  assert_int_equal(pl.bytes, 3 * 1000 + 3 * 1536);
}

static void test_two_comms_in_one_group_get_their_own_ops(void **state) {
  uint64_t from = L->count;
  uint64_t g = group_start(CTX_A);
  app_op(LENS_T_COLL_API, g, CTX_A, "AllReduce", 1024, "ncclFloat32");
  app_op(LENS_T_COLL_API, g, CTX_B, "Broadcast", 4096, "ncclInt8");
  launch(g, CTX_B); /* NCCL launches in reverse comm order */
  launch(g, CTX_A);
  const struct nvtx_ev *b = find_after(from, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(b);
  assert_string_equal(b->msg, "Broadcast 4 KiB i8 #0 (r1/4)");
  const struct nvtx_ev *a = find_after(b->seq + 1, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(a);
  assert_string_equal(a->msg, "AllReduce 4 KiB f32 #2 (r0/2)");
}

/* Mask without GroupApi: the first API op after a launch starts a new group. */
static void test_groups_without_group_api(void **state) {
  uint64_t from = L->count;
  app_op(LENS_T_P2P_API, 0, CTX_B, "Send", 2048, "ncclFloat64");
  launch(0, CTX_B);
  app_op(LENS_T_P2P_API, 0, CTX_B, "Recv", 4096, "ncclFloat64");
  launch(0, CTX_B);
  const struct nvtx_ev *a = find_after(from, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(a);
  assert_string_equal(a->msg, "Send 16 KiB f64 (r1/4)");
  const struct nvtx_ev *b = find_after(a->seq + 1, NVTX_EV_PUSH, dom, NULL);
  assert_non_null(b);
  assert_string_equal(b->msg, "Recv 32 KiB f64 (r1/4)");
}

/* ---- proxy thread ---- */
struct proxy_result {
  uint32_t tid;
};

static void proxy_state(uint64_t id, uint32_t st, uint64_t arg) { lens_nvtx_on_state(id, st, arg, 1); }

static uint64_t mono_now(void) { return lens_nvtx_mono_ns(); }

static void *proxy_thread(void *arg) {
  struct proxy_result *res = arg;
  res->tid = (uint32_t)syscall(SYS_gettid);
  struct fake_rec r;
  const unsigned slot = 2;
  uint64_t ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 14, 0); /* Active */
  lens_nvtx_on_stop(ctrl);

  uint64_t ops[20];
  for (int i = 0; i < 20; i++) {
    struct lens_p_proxy_op p = {getpid(), 1, 4, 1 << 19, i % 2, (uint8_t)(i / 2), {0}};
    ops[i] = fake_id(LENS_T_PROXY_OP, slot);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, ops[i], 0x77, CTX_A, 0, &p, sizeof(p)));
  }
  /* op0 (recv): 3 steps with transSize 1000 each */
  for (int k = 0; k < 3; k++) {
    struct lens_p_proxy_step p = {k, 0};
    uint64_t s = fake_id(LENS_T_PROXY_STEP, slot);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_STEP, s, ops[0], CTX_A, 0, &p, sizeof(p)));
    proxy_state(s, 10, 0);
    proxy_state(s, 11, 1000);
    proxy_state(s, 12, 1000);
    lens_nvtx_on_stop(s);
  }
  /* op1 (send): step 0 started twice (superseded), second one finishes */
  struct lens_p_proxy_step p0 = {0, 0};
  uint64_t s1 = fake_id(LENS_T_PROXY_STEP, slot), s2 = fake_id(LENS_T_PROXY_STEP, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_STEP, s1, ops[1], CTX_A, 0, &p0, sizeof(p0)));
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_STEP, s2, ops[1], CTX_A, 0, &p0, sizeof(p0)));
  proxy_state(s2, 8, 0);
  proxy_state(s2, 20, 0);
  proxy_state(s2, 9, 777);
  lens_nvtx_on_stop(s2);
  lens_nvtx_on_stop(s1); /* stale handle: ignored */
  lens_nvtx_on_stop(ops[0]);
  lens_nvtx_on_stop(ops[1]);
  lens_nvtx_on_stop(ops[19]); /* past the table: 3 of the 4 left under their shared range */

  /* KernelCh: GPU started now, finished 2 ms before the proxy noticed */
  struct lens_p_kernel_ch kc = {mono_now() + OFF_GPU, 3, {0}};
  uint64_t ch = fake_id(LENS_T_KERNEL_CH, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_CH, ch, 0x77, CTX_A, 0, &kc, sizeof(kc)));
  proxy_state(ch, 22, mono_now() + OFF_GPU - 2000000);
  lens_nvtx_on_stop(ch);

  ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 13, 0); /* Idle */
  lens_nvtx_on_stop(ctrl);
  ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 15, 0); /* Sleep: the 14 ops still open are orphans */
  proxy_state(ctrl, 16, 0); /* Wakeup */
  lens_nvtx_on_stop(ctrl);
  return NULL;
}

/* NCCL 2.31's profiler thread: KernelCh only, never ProxyCtrl. */
static void *profiler_thread(void *arg) {
  uint32_t *tid = arg;
  *tid = (uint32_t)syscall(SYS_gettid);
  struct fake_rec r;
  const unsigned slot = 5;
  for (int i = 0; i < 2; i++) {
    struct lens_p_kernel_ch kc = {mono_now() + OFF_GPU, (uint8_t)i, {0}};
    uint64_t ch = fake_id(LENS_T_KERNEL_CH, slot);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_CH, ch, 0x77, CTX_A, 0, &kc, sizeof(kc)));
    proxy_state(ch, 22, mono_now() + OFF_GPU - 1000000);
    lens_nvtx_on_stop(ch);
  }
  return NULL;
}

/* On NCCL >= 2.31 the thread that reports KernelCh gets its own row name. */
static void test_profiler_thread_named(void **state) {
  (void)state;
  uint64_t from = L->count;
  lens_kernel_ch_role = LENS_ROLE_PROFILER;
  uint32_t tid = 0;
  pthread_t t;
  pthread_create(&t, NULL, profiler_thread, &tid);
  pthread_join(t, NULL);
  lens_kernel_ch_role = LENS_ROLE_PROXY;
  const struct nvtx_ev *name = find_after(from, NVTX_EV_NAME_THREAD, -1, NULL);
  assert_non_null(name);
  assert_int_equal(name->id, tid);
  assert_string_equal(name->msg, "NCCL Profiler r0/2 commA");
}

static void test_proxy_thread(void **state) {
  uint64_t from = L->count;
  struct proxy_result res = {0};
  pthread_t t;
  pthread_create(&t, NULL, proxy_thread, &res);
  pthread_join(t, NULL);

  const struct nvtx_ev *name = find_after(from, NVTX_EV_NAME_THREAD, -1, NULL);
  assert_non_null(name);
  assert_int_equal(name->id, res.tid);
  assert_string_equal(name->msg, "NCCL Progress r0/2 commA");

  int op_starts = 0, ends_with_payload = 0, lag_samples = 0;
  int64_t steps_curve[32];
  int n_steps = 0;
  for (uint64_t i = from; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->domain != dom) continue;
    if (e->kind == NVTX_EV_START && e->category == LENS_NVTX_CAT_PROXY_OP && strncmp(e->msg, OVER_MSG, strlen(OVER_MSG))) {
      op_starts++;
      assert_int_equal(e->tid, res.tid);
    }
    if (e->kind == NVTX_EV_END && e->schema_id == LENS_NVTX_SID_PROXY_OP) {
      struct lens_nvtx_proxy_op_payload p;
      memcpy(&p, e->payload, sizeof(p));
      if (ends_with_payload == 0) { /* op0 */
        assert_int_equal(p.steps_started, 3);
        assert_int_equal(p.steps_done, 3);
        assert_int_equal(p.bytes, 3000);
        assert_int_equal(p.is_send, 0);
      } else if (ends_with_payload == 1) { /* op1 */
        assert_int_equal(p.steps_started, 1);
        assert_int_equal(p.steps_done, 1);
        assert_int_equal(p.bytes, 777);
      }
      ends_with_payload++;
    }
    if (e->kind == NVTX_EV_COUNTER_SAMPLE && e->id == LENS_NVTX_CID_CH_LAG) {
      lag_samples++;
      /* 2 ms, give or take the gaps between the test's and the hook's clock reads (preemption on a busy box) */
      assert_true(e->value > 1000000 && e->value < 2000000 + 100000000);
    }
    if (e->kind == NVTX_EV_COUNTER_SAMPLE && e->id == LENS_NVTX_CID_STEPS && n_steps < 32)
      steps_curve[n_steps++] = e->value;
  }
  assert_int_equal(op_starts, LENS_NVTX_MAX_OPEN_OPS);
  assert_int_equal(ends_with_payload, LENS_NVTX_MAX_OPEN_OPS); /* 2 stopped + 14 orphans ended at Sleep */
  assert_int_equal(lag_samples, 1);
  /* steps in flight: 1,0 x3 for op0; then 1 (s1), 1 (s2 supersedes s1), 0 */
  int64_t want[] = {1, 0, 1, 0, 1, 0, 1, 1, 0};
  assert_int_equal(n_steps, sizeof(want) / sizeof(want[0]));
  for (int i = 0; i < n_steps; i++) assert_int_equal(steps_curve[i], want[i]);
  assert_int_equal(lens_nvtx_g.drops.proxy_ops_over_cap, 4);
  assert_int_equal(lens_nvtx_g.drops.proxy_ops_orphaned, 14);

  /* Sleep and Active periods are ranges on the proxy thread */
  const struct nvtx_ev *sleep = find_after(from, NVTX_EV_START, dom, "Proxy sleep");
  const struct nvtx_ev *active = find_after(from, NVTX_EV_START, dom, "Proxy active");
  assert_non_null(sleep);
  assert_non_null(active);
  assert_int_equal(sleep->tid, res.tid);
  assert_int_equal(sleep->category, LENS_NVTX_CAT_PROXY_CTRL);

  /* the 4 ops past the table: one range on the proxy thread, ended at Sleep (3 never stopped) */
  const struct nvtx_ev *over = find_after(from, NVTX_EV_START, dom, OVER_MSG);
  assert_non_null(over);
  assert_int_equal(over->tid, res.tid);
  assert_int_equal(over->category, LENS_NVTX_CAT_PROXY_OP);
  assert_null(find_after(over->seq + 1, NVTX_EV_START, dom, OVER_MSG)); /* one range for them all */
  const struct nvtx_ev *over_end = NULL;
  for (uint64_t i = from; i < L->count && !over_end; i++)
    if (L->ev[i].kind == NVTX_EV_END && L->ev[i].id == over->id) over_end = &L->ev[i];
  assert_non_null(over_end);
  assert_true(over_end->seq < sleep->seq);
}

/* Ops past the table share one range, which ends when the last of them
 * stops (not only at Sleep). */
struct over_result { uint32_t tid; uint64_t before_last, after_last; };
static void *proxy_thread_over(void *arg) {
  struct over_result *res = arg;
  res->tid = (uint32_t)syscall(SYS_gettid);
  struct fake_rec r;
  const unsigned slot = 6;
  uint64_t ops[LENS_NVTX_MAX_OPEN_OPS + 2];
  for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS + 2; i++) {
    struct lens_p_proxy_op p = {getpid(), 1, 4, 1 << 19, i % 2, (uint8_t)(i / 2), {0}};
    ops[i] = fake_id(LENS_T_PROXY_OP, slot);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, ops[i], 0x77, CTX_A, 0, &p, sizeof(p)));
  }
  lens_nvtx_on_stop(ops[LENS_NVTX_MAX_OPEN_OPS + 1]);
  res->before_last = L->count;
  lens_nvtx_on_stop(ops[LENS_NVTX_MAX_OPEN_OPS]); /* the last one past the table */
  res->after_last = L->count;
  for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS; i++) lens_nvtx_on_stop(ops[i]);
  return NULL;
}

static void test_ops_past_the_table_share_a_range(void **state) {
  (void)state;
  uint64_t from = L->count, cap0 = lens_nvtx_g.drops.proxy_ops_over_cap, orph0 = lens_nvtx_g.drops.proxy_ops_orphaned;
  struct over_result res = {0};
  pthread_t t;
  pthread_create(&t, NULL, proxy_thread_over, &res);
  pthread_join(t, NULL);
  const struct nvtx_ev *over = find_after(from, NVTX_EV_START, dom, OVER_MSG);
  assert_non_null(over);
  assert_int_equal(over->tid, res.tid);
  int ends = 0, op_ends = 0;
  for (uint64_t i = from; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->kind == NVTX_EV_END && e->id == over->id) {
      ends++;
      assert_true(i >= res.before_last && i < res.after_last); /* at the last one's stop */
    }
    if (e->kind == NVTX_EV_END && e->schema_id == LENS_NVTX_SID_PROXY_OP) op_ends++;
  }
  assert_int_equal(ends, 1);
  assert_int_equal(op_ends, LENS_NVTX_MAX_OPEN_OPS); /* each op in the table kept its own range */
  assert_int_equal(lens_nvtx_g.drops.proxy_ops_over_cap, cap0 + 2);
  assert_int_equal(lens_nvtx_g.drops.proxy_ops_orphaned, orph0);
}

/* An op ended at Sleep (orphaned: in the table or past it) that stops
 * later does not end a later shared range: that range ends at the stop of
 * its own last op. */
struct late_result { uint32_t tid; uint64_t second_from, before_last, after_last; };
static void *proxy_thread_late_stop(void *arg) {
  struct late_result *res = arg;
  res->tid = (uint32_t)syscall(SYS_gettid);
  struct fake_rec r;
  const unsigned slot = 7;
  enum { N = LENS_NVTX_MAX_OPEN_OPS + 1 };
  uint64_t first[N], second[N];
  for (int round = 0; round < 2; round++) {
    uint64_t *ops = round ? second : first;
    if (round) res->second_from = L->count;
    for (int i = 0; i < N; i++) {
      struct lens_p_proxy_op p = {getpid(), 1, 4, 1 << 19, i % 2, (uint8_t)(i / 2), {0}};
      ops[i] = fake_id(LENS_T_PROXY_OP, slot);
      lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, ops[i], 0x77, CTX_A, 0, &p, sizeof(p)));
    }
    if (round) break;
    uint64_t ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
    proxy_state(ctrl, 15, 0); /* Sleep: all 17 of the first round are orphans */
    proxy_state(ctrl, 16, 0);
    lens_nvtx_on_stop(ctrl);
  }
  lens_nvtx_on_stop(first[N - 1]); /* late stops of the first round's: its op past the table, */
  lens_nvtx_on_stop(first[0]);     /* and one of its table */
  for (int i = 0; i < N - 1; i++) lens_nvtx_on_stop(second[i]);
  res->before_last = L->count;
  lens_nvtx_on_stop(second[N - 1]); /* the second range's own op past the table */
  res->after_last = L->count;
  return NULL;
}

static void test_late_stop_keeps_a_later_shared_range(void **state) {
  (void)state;
  struct late_result res = {0};
  pthread_t t;
  pthread_create(&t, NULL, proxy_thread_late_stop, &res);
  pthread_join(t, NULL);
  const struct nvtx_ev *over = find_after(res.second_from, NVTX_EV_START, dom, OVER_MSG);
  assert_non_null(over);
  assert_int_equal(over->tid, res.tid);
  int ends = 0;
  for (uint64_t i = res.second_from; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->kind != NVTX_EV_END || e->id != over->id) continue;
    ends++;
    assert_true(i >= res.before_last && i < res.after_last); /* not at the first round's late stops */
  }
  assert_int_equal(ends, 1);
}

/* Per-thread state is per thread slot (from the event id): a stop from a
 * thread that does not own the slot is ignored, a slot past the table is
 * counted, and a new owner of a slot starts afresh. */
static void *other_thread_stops(void *arg) {
  lens_nvtx_on_stop(*(uint64_t *)arg);
  return NULL;
}

static void test_slot_ownership(void **state) {
  uint64_t from = L->count;
  struct fake_rec r;
  uint64_t id = fake_id(LENS_T_KERNEL_LAUNCH, 5);
  struct lens_p_kernel_launch p = {0, 0};
  lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_LAUNCH, id, 0, CTX_A, 0, &p, sizeof(p)));
  pthread_t t;
  pthread_create(&t, NULL, other_thread_stops, &id);
  pthread_join(t, NULL);
  assert_null(find_after(from, NVTX_EV_POP, dom, NULL)); /* not popped by a stranger */
  lens_nvtx_on_stop(id);
  assert_non_null(find_after(from, NVTX_EV_POP, dom, NULL));

  uint64_t before = lens_nvtx_g.drops.no_slot;
  uint64_t far = LENS_ID_MAKE(LENS_T_KERNEL_LAUNCH, LENS_NVTX_MAX_SLOTS, 1);
  from = L->count;
  lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_LAUNCH, far, 0, CTX_A, 0, &p, sizeof(p)));
  lens_nvtx_on_stop(far);
  assert_int_equal(lens_nvtx_g.drops.no_slot, before + 1);
  assert_null(find_after(from, NVTX_EV_PUSH, dom, NULL));
}

static void test_ranges_well_formed(void **state) {
  struct nvtx_range_stats st;
  char err[256] = "";
  int rc = nvtx_check_ranges(L, dom, &st, err, sizeof(err));
  if (rc) fail_msg("%s", err);
  assert_true(st.pushes >= 5);
  assert_int_equal(st.pushes, st.pops);
  assert_int_equal(st.starts, st.ends);
  assert_true(st.max_open_per_thread <= LENS_NVTX_OPEN_RANGE_LIMIT);
  assert_int_equal(st.max_open_per_thread, LENS_NVTX_MAX_OPEN_OPS + 2); /* ops, the ops past them, Active */
  assert_int_equal(L->dropped, 0);
}

/* A proxy that ends in Active (under load the last transition can be 14 with
 * no Sleep after it) with an op never stopped: both ranges stay open until
 * the last finalize ends them. */
static void *proxy_ends_active(void *arg) {
  (void)arg;
  struct fake_rec r;
  const unsigned slot = 3;
  uint64_t ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 14, 0); /* Active, and the thread exits */
  lens_nvtx_on_stop(ctrl);
  struct lens_p_proxy_op p = {getpid(), 1, 4, 1 << 19, 1, 0, {0}};
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, fake_id(LENS_T_PROXY_OP, slot), 0x77, CTX_A, 0, &p, sizeof(p)));
  return NULL;
}

static void count_ranges(uint64_t from, int *starts, int *ends) {
  *starts = *ends = 0;
  for (uint64_t i = from; i < L->count; i++) {
    if (L->ev[i].domain != dom) continue;
    *starts += L->ev[i].kind == NVTX_EV_START;
    *ends += L->ev[i].kind == NVTX_EV_END;
  }
}

static void test_finalize_ends_open_periods(void **state) {
  uint64_t from = L->count;
  pthread_t t;
  pthread_create(&t, NULL, proxy_ends_active, NULL);
  pthread_join(t, NULL);
  int starts, ends;
  count_ranges(from, &starts, &ends);
  assert_int_equal(starts, 2); /* Proxy active + the op */
  assert_int_equal(ends, 0);
  uint64_t orphans = lens_nvtx_g.drops.proxy_ops_orphaned;
  lens_nvtx_teardown(); /* the last finalize */
  count_ranges(from, &starts, &ends);
  assert_int_equal(ends, 2);
  assert_int_equal(lens_nvtx_g.drops.proxy_ops_orphaned, orphans + 1);
  struct nvtx_range_stats st;
  char err[256] = "";
  if (nvtx_check_ranges(L, dom, &st, err, sizeof(err))) fail_msg("%s", err);
  assert_int_equal(st.starts, st.ends); /* nothing left open in the whole log */
  lens_nvtx_setup();
  assert_int_equal(lens_nvtx_active, 1);
}

/* A proxy that exits in Active (its last pass did work, so no Idle is
 * recorded) ends its period at the stop of the shutdown pass's Append window
 * that appended nothing, not at the finalize; an Append window that appends
 * ops keeps it open; a Sleep whose Wakeup never came ends at its own event's
 * stop. Counts are checked step by step on the proxy thread. */
struct exit_counts {
  int s[6], e[6];
};

static void *proxy_exits_active(void *arg) {
  struct exit_counts *c = arg;
  struct fake_rec r;
  const unsigned slot = 5;
  uint64_t from = L->count;
  uint64_t ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 14, 0); /* Active */
  lens_nvtx_on_stop(ctrl);
  count_ranges(from, &c->s[0], &c->e[0]); /* Active open after its own event's stop */
  ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 17, 0);
  struct lens_p_proxy_op p = {getpid(), 1, 4, 1 << 19, 1, 0, {0}};
  uint64_t op = fake_id(LENS_T_PROXY_OP, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, op, 0x77, CTX_A, 0, &p, sizeof(p)));
  proxy_state(ctrl, 18, 1); /* appended 1 */
  lens_nvtx_on_stop(ctrl);
  count_ranges(from, &c->s[1], &c->e[1]); /* still open: work was appended */
  lens_nvtx_on_stop(op);
  ctrl = fake_id(LENS_T_PROXY_CTRL, slot); /* the shutdown pass: nothing posted, nothing appended */
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 17, 0);
  proxy_state(ctrl, 18, 0);
  count_ranges(from, &c->s[2], &c->e[2]); /* before its stop */
  lens_nvtx_on_stop(ctrl);
  count_ranges(from, &c->s[3], &c->e[3]); /* Active ended at the stop */
  ctrl = fake_id(LENS_T_PROXY_CTRL, slot);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_CTRL, ctrl, 0, CTX_A, 0, NULL, 0));
  proxy_state(ctrl, 15, 0); /* Sleep, and no Wakeup before the stop */
  count_ranges(from, &c->s[4], &c->e[4]);
  lens_nvtx_on_stop(ctrl);
  count_ranges(from, &c->s[5], &c->e[5]);
  return NULL;
}

static void test_proxy_exit_in_active_ends_period(void **state) {
  struct exit_counts c;
  pthread_t t;
  pthread_create(&t, NULL, proxy_exits_active, &c);
  pthread_join(t, NULL);
  assert_int_equal(c.s[0], 1); /* Proxy active */
  assert_int_equal(c.e[0], 0);
  assert_int_equal(c.s[1], 2); /* + the op */
  assert_int_equal(c.e[1], 0);
  assert_int_equal(c.e[2], 1); /* the op ended; Active still open */
  assert_int_equal(c.s[3], 2);
  assert_int_equal(c.e[3], 2); /* Active ended at the shutdown window's stop */
  assert_int_equal(c.s[4], 3); /* Proxy sleep */
  assert_int_equal(c.e[4], 2);
  assert_int_equal(c.e[5], 3); /* ended at its event's stop */
}

static void test_teardown_stops_emitting(void **state) {
  lens_nvtx_teardown();
  assert_int_equal(lens_nvtx_active, 0);
  assert_true(fake_log_lines > 0); /* drops were reported */
  lens_nvtx_setup(); /* a later init in the same load re-arms without registering again */
  assert_int_equal(lens_nvtx_active, 1);
  int domains = 0;
  for (uint64_t i = 0; i < L->count; i++)
    if (L->ev[i].kind == NVTX_EV_DOMAIN_CREATE && L->ev[i].domain == dom) domains++;
  assert_int_equal(domains, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_setup_registers_everything),
      cmocka_unit_test(test_launch_push_pop_and_plan_mark),
      cmocka_unit_test(test_group_names_first_ops_and_count),
      cmocka_unit_test(test_two_comms_in_one_group_get_their_own_ops),
      cmocka_unit_test(test_groups_without_group_api),
      cmocka_unit_test(test_proxy_thread),
      cmocka_unit_test(test_ops_past_the_table_share_a_range),
      cmocka_unit_test(test_late_stop_keeps_a_later_shared_range),
      cmocka_unit_test(test_profiler_thread_named),
      cmocka_unit_test(test_slot_ownership),
      cmocka_unit_test(test_ranges_well_formed),
      cmocka_unit_test(test_finalize_ends_open_periods),
      cmocka_unit_test(test_proxy_exit_in_active_ends_period),
      cmocka_unit_test(test_teardown_stops_emitting),
  };
  return cmocka_run_group_tests(tests, setup_all, NULL);
}
