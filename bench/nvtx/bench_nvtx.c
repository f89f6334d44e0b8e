/* Cost of the NVTX emitter per NCCL callback.
 *
 *   bench_nvtx            runs "none" and "tool" in child processes (NVTX
 *                         reads NVTX_INJECTION64_PATH once per process)
 *   bench_nvtx none       no tool: lens_nvtx_active stays 0; measures the
 *                         core's gate, and the hooks called ungated
 *   bench_nvtx tool       the test injection in count-only mode: the
 *                         emitter's work plus NVTX dispatch, no recording
 *
 * Each figure: 400 batches of 256 iterations timed with CLOCK_MONOTONIC; ns
 * per callback = batch time / (iterations x callbacks per iteration); median
 * and p99 over batches. A compiler barrier per iteration keeps the loads of
 * lens_nvtx_active and NVTX's function pointers inside the loop, as in real code. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvtx_emit.h"
#include "nvtx_fakes.h"
#include "nvtx_inject.h"

#define BATCHES 400
#define ITERS 256
#define CTX 0x1000ull
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef void (*iter_fn)(void);

static double measure(const char *name, iter_fn fn, int callbacks) {
  static double per[BATCHES];
  for (int w = 0; w < 2000; w++) fn(); /* warm: TLS, first NVTX calls */
  for (int b = 0; b < BATCHES; b++) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < ITERS; i++) {
      fn();
      BARRIER();
    }
    per[b] = (double)(now_ns() - t0) / ((double)ITERS * callbacks);
  }
  qsort(per, BATCHES, sizeof(per[0]), cmp_d);
  printf("  %-46s %8.2f %8.2f\n", name, per[BATCHES / 2], per[BATCHES * 99 / 100]);
  return per[BATCHES / 2];
}

/* ---- one iteration per scenario ---- */
static struct fake_rec r_group, r_gapi, r_capi, r_kl, r_coll, r_op, r_step, r_ch;
static uint64_t seq;

static uint64_t next_id(unsigned type) { return LENS_ID_MAKE(type, 1, ++seq); }

static void it_empty(void) {}

/* What the core does per callback: check the flag, call if set. The record
 * is a Group start, which the emitter only dispatches (no NVTX call). */
static void it_gate(void) {
  if (__atomic_load_n(&lens_nvtx_active, __ATOMIC_RELAXED)) lens_nvtx_on_start(&r_group.s);
}

/* App thread, one bare collective: GroupApi, CollApi start/stop, KernelLaunch
 * start/stop, Coll start/stop = 7 callbacks. */
static void it_launch(void) {
  r_gapi.s.id = next_id(LENS_T_GROUP_API);
  lens_nvtx_on_start(&r_gapi.s);
  r_capi.s.id = next_id(LENS_T_COLL_API);
  lens_nvtx_on_start(&r_capi.s);
  lens_nvtx_on_stop(r_capi.s.id);
  r_kl.s.id = next_id(LENS_T_KERNEL_LAUNCH);
  lens_nvtx_on_start(&r_kl.s);
  lens_nvtx_on_stop(r_kl.s.id);
  r_coll.s.id = next_id(LENS_T_COLL);
  lens_nvtx_on_start(&r_coll.s);
  lens_nvtx_on_stop(r_coll.s.id);
}

/* Proxy thread: ProxyOp start, one step (start, 10, 11, 12, stop), op stop = 7 callbacks. */
static void it_proxy(void) {
  r_op.s.id = next_id(LENS_T_PROXY_OP);
  lens_nvtx_on_start(&r_op.s);
  r_step.s.id = next_id(LENS_T_PROXY_STEP);
  r_step.s.parent = r_op.s.id;
  lens_nvtx_on_start(&r_step.s);
  lens_nvtx_on_state(r_step.s.id, 10, 0, 1);
  lens_nvtx_on_state(r_step.s.id, 11, 65536, 1);
  lens_nvtx_on_state(r_step.s.id, 12, 65536, 1);
  lens_nvtx_on_stop(r_step.s.id);
  lens_nvtx_on_stop(r_op.s.id);
}

/* KernelCh start, 22, stop = 3 callbacks. */
static void it_kernel_ch(void) {
  r_ch.s.id = next_id(LENS_T_KERNEL_CH);
  lens_nvtx_on_start(&r_ch.s);
  lens_nvtx_on_state(r_ch.s.id, 22, 1700000000000000000ull + seq, 1);
  lens_nvtx_on_stop(r_ch.s.id);
}

static void build_records(void) {
  struct lens_p_group gr = {0};
  fake_rec(&r_group, LENS_T_GROUP, LENS_ID_MAKE(LENS_T_GROUP, 1, 1), 0, CTX, 0, &gr, sizeof(gr));
  struct lens_p_group_api g = {0, 1};
  fake_rec(&r_gapi, LENS_T_GROUP_API, 0, 0, CTX, 0, &g, sizeof(g));
  struct lens_p_coll_api ca = {(lens_str_t)(uintptr_t) "AllReduce", 1 << 20,
                               (lens_str_t)(uintptr_t) "ncclFloat32", 0, 0, 0, 0};
  fake_rec(&r_capi, LENS_T_COLL_API, 0, 0, CTX, 0, &ca, sizeof(ca));
  struct lens_p_kernel_launch kl = {0, 0};
  fake_rec(&r_kl, LENS_T_KERNEL_LAUNCH, 0, 0, CTX, 0, &kl, sizeof(kl));
  struct lens_p_coll c = {0};
  c.func = (lens_str_t)(uintptr_t) "AllReduce";
  c.datatype = (lens_str_t)(uintptr_t) "ncclFloat32";
  c.algo = (lens_str_t)(uintptr_t) "RING";
  c.proto = (lens_str_t)(uintptr_t) "SIMPLE";
  c.count = 1 << 20;
  c.n_channels = 2;
  fake_rec(&r_coll, LENS_T_COLL, 0, 0, CTX, 0, &c, sizeof(c));
  struct lens_p_proxy_op op = {1, 1, 4, 1 << 19, 0, 0, {0}};
  fake_rec(&r_op, LENS_T_PROXY_OP, 0, 0, CTX, 0, &op, sizeof(op));
  struct lens_p_proxy_step st = {0, 0};
  fake_rec(&r_step, LENS_T_PROXY_STEP, 0, 0, CTX, 0, &st, sizeof(st));
  struct lens_p_kernel_ch ch = {1700000000000000000ull, 0, {0}};
  fake_rec(&r_ch, LENS_T_KERNEL_CH, 0, 0, CTX, 0, &ch, sizeof(ch));
}

static int run_mode(const char *mode) {
  int tool = strcmp(mode, "tool") == 0;
  if (tool) {
    setenv("NVTX_INJECTION64_PATH", NVTX_INJECT_PATH, 1);
    setenv("NVTX_INJ_COUNT_ONLY", "1", 1);
  } else {
    unsetenv("NVTX_INJECTION64_PATH");
  }
  fake_comm_add(CTX, 0, 8, "bench");
  build_records();
  lens_nvtx_setup();
  printf("NVTX emitter cost, %s (lens_nvtx_active=%d)     ns/callback: median      p99\n",
         tool ? "test tool attached, count-only" : "no tool attached", lens_nvtx_active);
  if (tool && !lens_nvtx_active) {
    fprintf(stderr, "bench_nvtx: the injection did not attach (%s)\n", NVTX_INJECT_PATH);
    return 1;
  }
  double loop = measure("empty loop (timing overhead)", it_empty, 1);
  double gate = measure(tool ? "core gate + dispatch of an ignored event" : "core gate: if (lens_nvtx_active) hook()",
                        it_gate, 1);
  printf("  %-46s %8.2f\n", "  gate minus empty loop", gate - loop);
  measure(tool ? "app: GroupApi,CollApi,KernelLaunch,Coll (7 cb)" : "ungated hooks, app (7 cb, NVTX no-op)",
          it_launch, 7);
  measure(tool ? "proxy: ProxyOp + 1 step, 3 states (7 cb)" : "ungated hooks, proxy (7 cb, NVTX no-op)",
          it_proxy, 7);
  measure(tool ? "proxy: KernelCh start, 22, stop (3 cb)" : "ungated hooks, KernelCh (3 cb, NVTX no-op)",
          it_kernel_ch, 3);
  if (tool) {
    void *h = dlopen(NVTX_INJECT_PATH, RTLD_NOW | RTLD_NOLOAD);
    nvtx_inject_calls_fn calls = h ? (nvtx_inject_calls_fn)dlsym(h, "nvtx_inject_calls") : NULL;
    if (calls) printf("  (NVTX calls reaching the tool: %llu)\n", (unsigned long long)calls());
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1) return run_mode(argv[1]);
  int rc = 0;
  const char *modes[] = {"none", "tool"};
  for (int m = 0; m < 2; m++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], modes[m], (char *)NULL);
      _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) rc = 1;
  }
  return rc;
}
