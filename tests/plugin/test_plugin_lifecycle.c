/* Lifecycle through the ABI only: dlopen build/lib/libnccl-profiler-lens.so
 * as NCCL does. Each case runs in a forked child with its own output
 * directory (configuration is read once per process), and the parent checks
 * the trace the child left. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lens_safe_fs.h"
#include "lensread.h"
#include "plugin_driver.h"
#include "trace_walk.h"

static int g_mask; /* NCCL's one process-wide mask int */

/* A child's configuration: its own directories, and a finalize (or exit)
 * that waits for the writer as long as it takes. The default wait
 * (NCCL_LENS_FLUSH_TIMEOUT_MS, 1 s) is for stalled file systems: past it
 * finalize returns with the end of the trace still to be written, and a
 * child that then _exits cuts it off. On a loaded machine (a build beside
 * ctest -j2) the writer's close can take that long, and the checks below
 * would fail on a trace the plugin was still writing. A writer that never
 * finishes still fails the test (ctest's timeout); test_plugin_stall tests
 * the bounded wait itself. Set here, not inherited: the caller's
 * environment must not change what these tests prove. */
static void child_env(const char *dir) {
  setenv("NCCL_LENS_OUTPUT_DIR", dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", dir, 1);
  setenv("NCCL_LENS_WRITER_PERIOD_US", "2000", 1);
  setenv("NCCL_LENS_FLUSH_TIMEOUT_MS", "30000", 1);
}

/* Runs body(dir) in a child with NCCL_LENS_OUTPUT_DIR=dir; returns the
 * child's pid and fills status. */
static pid_t run_child(const char *dir, int (*body)(const char *dir), int *status) {
  pid_t pid = fork();
  if (pid == 0) {
    child_env(dir);
    _exit(body(dir));
  }
  waitpid(pid, status, 0);
  return pid;
}

/* A child run by child_trace: its output directory, pid and trace. */
struct child {
  char dir[128], path[256];
  pid_t pid;
};

/* Runs body in a child with its own output directory (tag), which must exit 0. */
static void child_trace(const char *tag, int (*body)(const char *dir), struct child *c) {
  int st;
  make_tmp_dir(c->dir, sizeof c->dir, tag);
  c->pid = run_child(c->dir, body, &st);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  trace_path_for(c->path, sizeof c->path, c->dir, c->pid);
}

/* One fake collective: GroupApi, CollApi, KernelLaunch, Group, Coll, and a
 * proxy op with two steps, as an application thread would. 16 records. */
static int emit_collective(struct plugin *p, void *ctx) {
  lens_nccl_descr_v5_t d;
  void *ga, *ca, *kl, *g, *c, *po, *ps;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP_API;
  d.groupApi.groupDepth = 1;
  if (p->v5->startEvent(ctx, &ga, &d)) return 1;
  p->v5->recordEventState(ga, LENS_ST_GROUP_START_API_STOP, NULL);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_COLL_API;
  d.parentObj = ga;
  d.collApi.func = "AllReduce";
  d.collApi.datatype = "ncclFloat32";
  d.collApi.count = 4096;
  p->v5->startEvent(ctx, &ca, &d);
  p->v5->stopEvent(ca);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_KERNEL_LAUNCH;
  d.parentObj = ga;
  p->v5->startEvent(ctx, &kl, &d);
  p->v5->stopEvent(kl);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP;
  p->v5->startEvent(ctx, &g, &d);
  d5_coll(&d, ca, "AllReduce");
  d.coll.parentGroup = g;
  p->v5->startEvent(ctx, &c, &d);
  d5_proxy_op(&d, c, getpid());
  p->v5->startEvent(ctx, &po, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_STEP;
  d.parentObj = po;
  d.proxyStep.step = 0;
  p->v5->startEvent(ctx, &ps, &d);
  lens_nccl_state_args_v5_t a = {.proxyStep = {.transSize = 65536}};
  p->v5->recordEventState(ps, LENS_ST_PROXY_STEP_SEND_WAIT, &a);
  p->v5->stopEvent(ps);
  p->v5->stopEvent(po);
  p->v5->stopEvent(c);
  p->v5->stopEvent(g);
  p->v5->stopEvent(ga);
  return 0;
}
#define RECORDS_PER_COLLECTIVE 16

static int body_basic(const char *dir) {
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 10;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 0x1234, &g_mask, "basic", 1, 2, 0, test_logger)) return 11;
  if (!ctx || g_mask == 0) return 12;
  for (int i = 0; i < 100; i++)
    if (emit_collective(&p, ctx)) return 13;
  if (p.v5->finalize(ctx)) return 14;
  plugin_close(&p);
  return 0;
}

static struct lens_model *load_model(const char *path) {
  char err[256] = "";
  const char *paths[1] = {path};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fprintf(stderr, "lens_model_load: %s\n", err);
  return m;
}

/* Through the reader: every START became an event, all stopped, parents
 * and launch ids joined, thread roles as the calls implied. */
static void check_model_of_collectives(const char *path, size_t ncoll, int clean) {
  struct lens_model *m = load_model(path);
  assert_non_null(m);
  assert_int_equal(m->n_files, 1);
  assert_int_equal(m->files[0].truncated_bytes, 0);
  assert_int_equal(m->files[0].clean_end, clean);
  assert_int_equal(m->n_events, ncoll * 7);
  assert_int_equal(m->orphan_stops, 0);
  assert_int_equal(m->bad_records, 0);
  size_t colls = 0, steps = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    assert_true(e->stop_mono_ns >= e->start_mono_ns);
    assert_int_equal(e->flags & (LENS_EVF_NO_STOP | LENS_EVF_DUP_STOP | LENS_EVF_BAD_CONTEXT), 0);
    if (e->type == LENS_T_COLL) {
      colls++;
      assert_true(e->parent >= 0);
      assert_int_equal(m->events[e->parent].type, LENS_T_COLL_API);
      assert_string_equal(e->p.coll.func, "AllReduce");
      assert_string_equal(e->p.coll.algo, "RING");
      /* the KernelLaunch of this plan, started on this thread just before */
      int32_t k = lens_model_find(m, e->proc, e->p.coll.launch_id);
      assert_true(k >= 0);
      assert_int_equal(m->events[k].type, LENS_T_KERNEL_LAUNCH);
      assert_true(m->events[k].start_mono_ns <= e->start_mono_ns);
    }
    if (e->type == LENS_T_PROXY_STEP) {
      steps++;
      assert_true(e->parent >= 0);
      assert_int_equal(m->events[e->parent].type, LENS_T_PROXY_OP);
      assert_int_equal(e->n_states, 1);
      assert_int_equal(m->states[e->first_state].arg, 65536);
    }
  }
  assert_int_equal(colls, ncoll);
  assert_int_equal(steps, ncoll);
  int app_threads = 0;
  for (size_t i = 0; i < m->n_threads; i++)
    if (m->threads[i].roles & LENS_ROLE_APP) app_threads++;
  assert_true(app_threads >= 1);
  lens_model_free(m);
}

static void test_basic_session(void **state) {
  struct child c;
  child_trace("basic", body_basic, &c);
  const char *path = c.path;
  struct trace_tally t;
  assert_int_equal(trace_walk(path, &t), 0);
  assert_int_equal(t.sessions, 1);
  assert_int_equal(t.by_type[LENS_CHUNK_SESSION], 1);
  assert_int_equal(t.by_type[LENS_CHUNK_COMM], 1);
  assert_int_equal(t.by_type[LENS_CHUNK_COMM_FINI], 1);
  assert_int_equal(t.fini_reason[1], 1);
  assert_int_equal(t.records, 100 * RECORDS_PER_COLLECTIVE);
  assert_int_equal(t.starts_by_type[LENS_T_COLL], 100);
  assert_int_equal(t.starts_by_type[LENS_T_PROXY_STEP], 100);
  assert_int_equal(t.seq_gaps, 0);
  assert_int_equal(t.bad_tail_bytes, 0);
  assert_int_equal(t.last_session_api, 5);
  assert_true(t.by_type[LENS_CHUNK_STRINGS] >= 1);
  assert_true(t.by_type[LENS_CHUNK_THREAD] >= 1);
  assert_int_equal(t.last_drops.ring_full, 0);
  /* the registry file is gone after the last finalize */
  char reg[256];
  snprintf(reg, sizeof reg, "%s/%d.reg", c.dir, c.pid);
  assert_int_not_equal(access(reg, F_OK), 0);
  check_model_of_collectives(path, 100, 1);
}

/* ---- concurrent inits, several event threads, re-dlopen ---- */
#define NCOMMS 4
static struct plugin g_p;
static void *g_ctx[NCOMMS];

static void *init_thread(void *arg) {
  long i = (long)arg;
  char name[16];
  snprintf(name, sizeof name, "comm%ld", i);
  g_p.v5->init(&g_ctx[i], 0x1000 + (uint64_t)i, &g_mask, name, 1, NCOMMS, (int)i, test_logger);
  return NULL;
}

static void *event_thread(void *arg) {
  long i = (long)arg;
  for (int k = 0; k < 200; k++) emit_collective(&g_p, g_ctx[i]);
  return NULL;
}

static int one_round(void) {
  pthread_t th[NCOMMS];
  for (long i = 0; i < NCOMMS; i++) pthread_create(&th[i], NULL, init_thread, (void *)i);
  for (int i = 0; i < NCOMMS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NCOMMS; i++)
    if (!g_ctx[i]) return 21;
  for (long i = 0; i < NCOMMS; i++) pthread_create(&th[i], NULL, event_thread, (void *)i);
  for (int i = 0; i < NCOMMS; i++) pthread_join(th[i], NULL);
  /* NCCL finalizes every communicator of a clique from one thread */
  for (int i = 0; i < NCOMMS; i++)
    if (g_p.v5->finalize(g_ctx[i])) return 22;
  return 0;
}

static int body_reopen(const char *dir) {
  for (int round = 0; round < 2; round++) {
    if (plugin_open(&g_p, plugin_path())) return 20;
    int rc = one_round();
    if (rc) return rc;
    plugin_close(&g_p);
  }
  return 0;
}

static void test_concurrent_and_reopen(void **state) {
  struct child c;
  child_trace("reopen", body_reopen, &c);
  const char *path = c.path;
  struct trace_tally t;
  assert_int_equal(trace_walk(path, &t), 0);
  assert_int_equal(t.sessions, 2);
  assert_int_equal(t.max_session, 1);
  assert_int_equal(t.by_type[LENS_CHUNK_SESSION], 2);
  assert_int_equal(t.by_type[LENS_CHUNK_COMM], 2 * NCOMMS);
  assert_int_equal(t.by_type[LENS_CHUNK_COMM_FINI], 2 * NCOMMS);
  assert_int_equal(t.fini_reason[1], 2);
  assert_int_equal(t.records, 2ull * NCOMMS * 200 * RECORDS_PER_COLLECTIVE);
  assert_int_equal(t.seq_gaps, 0);
  assert_int_equal(t.bad_tail_bytes, 0);
  assert_int_equal(t.ts_nonmono, 0);
  struct lens_model *m = load_model(path);
  assert_non_null(m);
  assert_int_equal(m->files[0].n_sessions, 2);
  assert_int_equal(m->n_comms, 2 * NCOMMS);
  assert_int_equal(m->n_events, 2ull * NCOMMS * 200 * 7);
  assert_int_equal(m->orphan_stops, 0);
  lens_model_free(m);
}

/* ---- a later session over a damaged chunk header: the writer steps over
 * it as the reader does and keeps every chunk behind it (it used to stop its
 * walk at the bad header and cut the file there, losing the rest of the
 * earlier session) ---- */
static int body_reopen_damaged(const char *dir) {
  char path[256];
  if (plugin_open(&g_p, plugin_path())) return 40;
  int rc = one_round();
  if (rc) return rc;
  plugin_close(&g_p);
  trace_path_for(path, sizeof path, dir, getpid());
  int fd = open(path, O_RDWR);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) return 41;
  /* The first chunk of events gets one flipped bit in its magic. */
  uint64_t off = sizeof(struct lens_file_hdr);
  struct lens_chunk_hdr h;
  for (;;) {
    if (pread(fd, &h, sizeof h, (off_t)off) != (ssize_t)sizeof h) return 42;
    if (h.type == LENS_CHUNK_EVENTS || h.type == LENS_CHUNK_EVENTS_PACKED) break;
    off += sizeof h + h.payload_len + ((8 - (h.payload_len & 7)) & 7);
  }
  uint64_t size1 = (uint64_t)st.st_size;
  if (off + 4 * sizeof h >= size1) return 43; /* chunks must follow it */
  uint8_t *keep = malloc(size1 - off);
  if (!keep || pread(fd, keep, size1 - off, (off_t)off) != (ssize_t)(size1 - off)) return 44;
  keep[0] ^= 0x10;
  if (pwrite(fd, keep, 1, (off_t)off) != 1) return 45;
  close(fd);
  if (plugin_open(&g_p, plugin_path())) return 46;
  if ((rc = one_round())) return rc;
  plugin_close(&g_p);
  /* The first session's bytes from the damaged header on are all still there. */
  uint8_t *now = malloc(size1 - off);
  fd = open(path, O_RDONLY);
  if (!now || fd < 0) return 47;
  ssize_t got = pread(fd, now, size1 - off, (off_t)off);
  close(fd);
  int same = got == (ssize_t)(size1 - off) && !memcmp(now, keep, size1 - off);
  free(now), free(keep);
  return same ? 0 : 48;
}

static void test_reopen_over_damaged_header(void **state) {
  (void)state;
  struct child c;
  child_trace("reopen-damaged", body_reopen_damaged, &c);
  const char *path = c.path;
  struct lens_model *m = load_model(path);
  assert_non_null(m);
  assert_int_equal(m->files[0].n_sessions, 2);
  assert_int_equal(m->files[0].damaged_chunks, 1); /* exactly the flipped one */
  assert_int_equal(m->files[0].lost_chunks, 0);
  assert_int_equal(m->n_comms, 2 * NCOMMS);
  lens_model_free(m);
}

/* ---- the registry directory's stale files, swept when a session opens
 * (plugin/writer/regdir.c, read by lens_registry_parse_id, the parser
 * `nccl-lens sched` uses): a .reg whose process is gone (no such pid, or the
 * pid of another process by its start ticks) goes; one of a running process
 * and one without identity lines (an older plugin's) stay ---- */
static void put_reg(const char *dir, long pid, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%ld.reg", dir, pid);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

static int reg_exists(const char *dir, long pid) {
  char path[256];
  snprintf(path, sizeof path, "%s/%ld.reg", dir, pid);
  return access(path, F_OK) == 0;
}

static void test_sweep_stale_registry(void **state) {
  (void)state;
  char dir[128], text[512];
  make_tmp_dir(dir, sizeof dir, "sweep");
  chmod(dir, 0700);
  unsigned long long ns = (unsigned long long)lens_proc_ns(0, "pid");
  long gone = 4190001;
  while (kill((pid_t)gone, 0) == 0 || errno != ESRCH) gone++; /* a pid nobody holds */
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid %ld\nstart 123\npidns %llu\n", gone, ns);
  put_reg(dir, gone, text);
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid 1\nstart %llu\npidns %llu\n",
           (unsigned long long)lens_proc_start_ticks(1) + 1, ns); /* pid 1 runs, but started at another tick */
  put_reg(dir, 1, text);
  long me = (long)getpid(); /* this test runs while the child sweeps */
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid %ld\nstart %llu\npidns %llu\n", me,
           (unsigned long long)lens_proc_start_ticks((int)me), ns);
  put_reg(dir, me, text);
  put_reg(dir, gone + 1, "nccl-lens-registry 1\npid 5\nthread 5 5 1 0 0\n"); /* no identity lines */
  int st;
  run_child(dir, body_basic, &st);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_false(reg_exists(dir, gone));
  assert_false(reg_exists(dir, 1));
  assert_true(reg_exists(dir, me));
  assert_true(reg_exists(dir, gone + 1));
}

/* ---- exit without finalize ---- */
static int body_exit_no_fini(const char *dir) {
  if (plugin_open(&g_p, plugin_path())) return 30;
  if (g_p.v5->init(&g_ctx[0], 7, &g_mask, "exit", 1, 1, 0, test_logger)) return 31;
  pthread_t th[2];
  g_ctx[1] = g_ctx[0];
  for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, event_thread, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int k = 0; k < 50; k++) emit_collective(&g_p, g_ctx[0]);
  exit(0); /* no finalize, no dlclose: the atexit handler must flush */
}

static void test_exit_without_finalize(void **state) {
  struct child c;
  child_trace("exit", body_exit_no_fini, &c);
  const char *path = c.path;
  struct trace_tally t;
  assert_int_equal(trace_walk(path, &t), 0);
  assert_int_equal(t.fini_reason[2], 1);
  assert_int_equal(t.fini_reason[1], 0);
  assert_int_equal(t.records, (2ull * 200 + 50) * RECORDS_PER_COLLECTIVE);
  assert_int_equal(t.bad_tail_bytes, 0);
  check_model_of_collectives(path, 2 * 200 + 50, 1);
  char reg[256];
  snprintf(reg, sizeof reg, "%s/%d.reg", c.dir, c.pid);
  assert_int_not_equal(access(reg, F_OK), 0);
}

/* ---- SIGKILL: readable up to the last complete chunk ---- */
static int g_pipe[2];
static int body_killed(const char *dir) {
  if (plugin_open(&g_p, plugin_path())) return 40;
  if (g_p.v5->init(&g_ctx[0], 8, &g_mask, "killed", 1, 1, 0, test_logger)) return 41;
  for (int k = 0; k < 100; k++) emit_collective(&g_p, g_ctx[0]);
  /* wait until these 100 are on disk (ms on an idle machine; up to 30 s,
   * however loaded it is): the parent kills only once they are, and a
   * child that never sees them tells it by not writing to the pipe (it
   * used to go on after 5 s, and the parent then failed on the count) */
  char path[256];
  trace_path_for(path, sizeof path, dir, getpid());
  int on_disk = 0;
  for (int tries = 0; tries < 3000 && !on_disk; tries++) {
    struct trace_tally t;
    on_disk = trace_walk(path, &t) == 0 && t.records >= 100 * RECORDS_PER_COLLECTIVE;
    if (!on_disk) usleep(10000);
  }
  if (!on_disk) return 43;
  char c = 'x';
  if (write(g_pipe[1], &c, 1) != 1) return 42;
  for (;;) emit_collective(&g_p, g_ctx[0]); /* killed while busy */
}

static void test_sigkill_leaves_readable_file(void **state) {
  char dir[128], path[256];
  make_tmp_dir(dir, sizeof dir, "kill");
  assert_int_equal(pipe(g_pipe), 0);
  pid_t pid = fork();
  if (pid == 0) {
    child_env(dir);
    _exit(body_killed(dir));
  }
  close(g_pipe[1]); /* a child that dies early (or never saw its records on disk) makes read return 0, not hang */
  char c;
  assert_int_equal(read(g_pipe[0], &c, 1), 1);
  usleep(30 * 1000);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFSIGNALED(st));
  trace_path_for(path, sizeof path, dir, pid);
  struct trace_tally t;
  assert_int_equal(trace_walk(path, &t), 0);
  assert_true(t.ok_header);
  assert_int_equal(t.fini_reason[1] + t.fini_reason[2], 0);
  assert_true(t.records >= 100 * RECORDS_PER_COLLECTIVE);
  assert_int_equal(t.seq_gaps, 0);
  /* the reader loads it up to the last complete chunk */
  struct lens_model *m = load_model(path);
  assert_non_null(m);
  assert_int_equal(m->files[0].clean_end, 0);
  assert_true(m->n_events >= 100 * 7);
  lens_model_free(m);
  /* the registry of a killed process stays behind (the probe handles it) */
  close(g_pipe[0]);
}

/* ---- fork while a session is open: the child inherits nothing usable and
 * must not touch the parent's trace; the parent's session ends cleanly ---- */
static int body_fork_inherit(const char *dir) {
  if (plugin_open(&g_p, plugin_path())) return 50;
  if (g_p.v5->init(&g_ctx[0], 9, &g_mask, "parent", 1, 1, 0, test_logger)) return 51;
  for (int k = 0; k < 20; k++) emit_collective(&g_p, g_ctx[0]);
  /* Let the writer go idle first: under ASan a fork while another thread is
   * inside malloc leaves the child's allocator locked, and LeakSanitizer
   * then hangs at the child's exit (glibc's malloc is fork-safe; ASan's is
   * not). The plugin's writer allocates while it opens the session. */
  char path[256];
  trace_path_for(path, sizeof path, dir, getpid());
  /* the 20 collectives on disk first (a writer descheduled for 20 ms on a
   * loaded machine looks idle to the size check alone), then a size that
   * holds still for 20 ms; at most 30 s */
  off_t last = -1;
  int written = 0;
  for (int i = 0; i < 1500; i++) {
    struct stat st;
    struct trace_tally t;
    if (!written) written = trace_walk(path, &t) == 0 && t.records >= 20 * RECORDS_PER_COLLECTIVE;
    off_t now = stat(path, &st) == 0 ? st.st_size : -1;
    if (written && now > 0 && now == last) break;
    last = now;
    usleep(20000);
  }
  pid_t c = fork();
  if (c == 0) {
    /* the child: no writer thread, the parent's context and threads are gone */
    for (int k = 0; k < 20; k++) emit_collective(&g_p, g_ctx[0]);
    exit(0); /* runs the plugin's atexit handler in the child: must do nothing */
  }
  int st;
  waitpid(c, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 52;
  for (int k = 0; k < 20; k++) emit_collective(&g_p, g_ctx[0]);
  if (g_p.v5->finalize(g_ctx[0])) return 53;
  return 0;
}

static void test_fork_with_open_session(void **state) {
  struct child c;
  child_trace("fork", body_fork_inherit, &c);
  const char *path = c.path;
  struct trace_tally t;
  assert_int_equal(trace_walk(path, &t), 0);
  assert_int_equal(t.records, 40 * RECORDS_PER_COLLECTIVE); /* the parent's only */
  assert_int_equal(t.fini_reason[1], 1);
  assert_int_equal(t.fini_reason[2], 0);
  assert_int_equal(t.bad_tail_bytes, 0);
  assert_int_equal(t.seq_gaps, 0);
}

/* ---- thread roles as the calls imply them ---- */
static pthread_barrier_t g_role_bar;
static void role_hold(void) {
  pthread_barrier_wait(&g_role_bar);
  pthread_barrier_wait(&g_role_bar);
}
static void *hostcb_thread(void *arg) { /* graph replay: Group/Coll without API events */
  lens_nccl_descr_v5_t d;
  void *g, *c;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP;
  g_p.v5->startEvent(g_ctx[0], &g, &d);
  d5_coll(&d, (void *)0x1234, "AllGather");
  g_p.v5->startEvent(g_ctx[0], &c, &d);
  g_p.v5->stopEvent(c);
  g_p.v5->stopEvent(g);
  role_hold();
  return NULL;
}

static void *proxy_thread(void *arg) {
  lens_nccl_descr_v5_t d;
  void *h;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_CTRL;
  g_p.v5->startEvent(g_ctx[1], &h, &d);
  lens_nccl_state_args_v5_t a = {.proxyCtrl = {.appendedProxyOps = 3}};
  g_p.v5->recordEventState(h, LENS_ST_PROXY_CTRL_APPEND_END, &a);
  g_p.v5->stopEvent(h);
  role_hold();
  return NULL;
}

static void *net_thread(void *arg) {
  lens_nccl_descr_v5_t d;
  void *h;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_NET_PLUGIN;
  d.netPlugin.id = LENS_NET_TYPE_SOCK | 1;
  g_p.v5->startEvent(g_ctx[0], &h, &d);
  g_p.v5->stopEvent(h);
  role_hold();
  return NULL;
}

static int body_roles(const char *dir) {
  if (plugin_open(&g_p, plugin_path())) return 60;
  if (g_p.v5->init(&g_ctx[0], 1, &g_mask, "r0", 1, 2, 0, test_logger)) return 61;
  if (g_p.v5->init(&g_ctx[1], 2, &g_mask, "r1", 1, 2, 1, test_logger)) return 62;
  /* all alive together, so each keeps its own slot (slot reuse is tested
   * in test_plugin_env) */
  void *(*fns[3])(void *) = {hostcb_thread, proxy_thread, net_thread};
  pthread_t t[3];
  pthread_barrier_init(&g_role_bar, NULL, 4);
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, fns[i], NULL);
  pthread_barrier_wait(&g_role_bar);
  usleep(20000); /* several writer periods: every thread announced while alive */
  pthread_barrier_wait(&g_role_bar);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  emit_collective(&g_p, g_ctx[0]);
  g_p.v5->finalize(g_ctx[0]);
  g_p.v5->finalize(g_ctx[1]);
  return 0;
}

static void test_thread_roles(void **state) {
  struct child c;
  child_trace("roles", body_roles, &c);
  const char *path = c.path;
  struct lens_model *m = load_model(path);
  assert_non_null(m);
  int app = 0, hostcb = 0, proxy = 0, net = 0;
  for (size_t i = 0; i < m->n_threads; i++) {
    const struct lens_thread *t = &m->threads[i];
    if (t->roles & LENS_ROLE_APP) app++; /* main: also INIT, and PROXY from emit_collective */
    if (t->roles == LENS_ROLE_HOSTCB) hostcb++;
    if (t->roles == LENS_ROLE_NET) net++;
    if (t->roles == LENS_ROLE_PROXY) {
      proxy++;
      assert_int_equal(t->proxy_rank, 1); /* the rank of the ProxyCtrl's communicator */
      assert_true(t->proxy_comm >= 0);
      assert_string_equal(m->comms[t->proxy_comm].name, "r1");
    }
  }
  assert_int_equal(app, 1);
  assert_int_equal(hostcb, 1);
  assert_int_equal(proxy, 1);
  assert_int_equal(net, 1);
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_session),
      cmocka_unit_test(test_concurrent_and_reopen),
      cmocka_unit_test(test_reopen_over_damaged_header),
      cmocka_unit_test(test_sweep_stale_registry),
      cmocka_unit_test(test_exit_without_finalize),
      cmocka_unit_test(test_sigkill_leaves_readable_file),
      cmocka_unit_test(test_fork_with_open_session),
      cmocka_unit_test(test_thread_roles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
