/* The writer's frames (NCCL_LENS_COMPRESS=packed|zstd; lens_pack_chunk.h,
 * docs/trace-format.md "Frame size"): a thread's packed records stay in one
 * open frame across the writer's passes until it holds
 * LENS_FRAME_STREAM_BYTES of stream, and an open frame is written at the
 * latest every LENS_FRAME_MAX_AGE_MS, so a process that goes quiet (or is
 * then killed) has its events on disk. Through the ABI, in child processes
 * (the configuration is read once per process). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "chunk_stream.h"
#include "lens_pack_chunk.h"
#include "lensread.h"
#include "plugin_driver.h"
#include "trace_walk.h"

static char g_dir[128];
static int g_mask;
static int g_pipe[2];

/* Each step: START, a STATE with its own transSize (no run to fold), STOP. */
#define RECORDS_PER_STEP 3

struct emitter {
  struct plugin p;
  void *ctx, *op;
  int steps;
};

static int open_emitter(struct emitter *e, const char *mode, const char *ring) {
  setenv("NCCL_LENS_OUTPUT_DIR", g_dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", g_dir, 1);
  setenv("NCCL_LENS_COMPRESS", mode, 1);
  if (ring) setenv("NCCL_LENS_BUFFER_SIZE", ring, 1); /* the whole run fits: no ring_full drop */
  memset(e, 0, sizeof *e);
  if (plugin_open(&e->p, plugin_path())) return 1;
  if (e->p.v5->init(&e->ctx, 1, &g_mask, "frames", 1, 1, 0, test_logger)) return 2;
  lens_nccl_descr_v5_t d;
  d5_proxy_op(&d, NULL, getpid());
  e->p.v5->startEvent(e->ctx, &e->op, &d);
  return e->op ? 0 : 3;
}

static void emit_steps(struct emitter *e, int n) {
  for (int i = 0; i < n; i++) {
    lens_nccl_descr_v5_t d;
    memset(&d, 0, sizeof d);
    d.type = LENS_EV_PROXY_STEP;
    d.parentObj = e->op;
    d.proxyStep.step = e->steps;
    void *step = NULL;
    e->p.v5->startEvent(e->ctx, &step, &d);
    lens_nccl_state_args_v5_t a;
    memset(&a, 0, sizeof a);
    a.proxyStep.transSize = (size_t)e->steps + 1;
    e->p.v5->recordEventState(step, LENS_ST_PROXY_STEP_SEND_WAIT, &a);
    e->p.v5->stopEvent(step);
    e->steps++;
  }
}

static int close_emitter(struct emitter *e) {
  e->p.v5->stopEvent(e->op);
  return e->p.v5->finalize(e->ctx) ? 4 : 0;
}

static pid_t run_child(int (*body)(const char *), const char *mode, const char *tag) {
  make_tmp_dir(g_dir, sizeof g_dir, tag);
  pid_t pid = fork();
  if (pid == 0) _exit(body(mode));
  assert_true(pid > 0);
  return pid;
}

static void wait_ok(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* The EVENTS_PACKED chunks of a trace: how many, their largest stream and
 * fixed sizes, and the records they hold. */
struct frames_seen {
  uint64_t chunks, records, max_stream, max_raw, fixed_chunks;
};

static void walk_frames(const char *path, struct frames_seen *f) {
  memset(f, 0, sizeof *f);
  struct lens_cstream cs;
  char err[256];
  assert_int_equal(lens_cstream_open(&cs, path, 1u << 20, err, sizeof err), 0);
  struct lens_chunk_hdr h;
  const uint8_t *pl;
  int r;
  while ((r = lens_cstream_next(&cs, &h, &pl, err, sizeof err)) == 1) {
    if (h.type == LENS_CHUNK_EVENTS) f->fixed_chunks++;
    if (h.type != LENS_CHUNK_EVENTS_PACKED) continue;
    struct lens_packed_hdr ph;
    assert_true(h.payload_len >= sizeof ph);
    memcpy(&ph, pl, sizeof ph);
    f->chunks++;
    f->records += ph.count;
    if (ph.body_bytes > f->max_stream) f->max_stream = ph.body_bytes;
    if (ph.raw_bytes > f->max_raw) f->max_raw = ph.raw_bytes;
  }
  assert_int_equal(r, 0);
  lens_cstream_close(&cs);
}

/* ---- bursts a few ms apart share a frame (one frame a writer pass before) ---- */
#define BURSTS 40
#define STEPS_PER_BURST 25

static int body_bursts(const char *mode) {
  struct emitter e;
  int rc = open_emitter(&e, mode, NULL);
  if (rc) return rc;
  for (int b = 0; b < BURSTS; b++) {
    emit_steps(&e, STEPS_PER_BURST);
    usleep(2000); /* the writer polls about every ms while records arrive: a pass a burst */
  }
  return close_emitter(&e);
}

static void test_bursts_share_frames(void **state) {
  (void)state;
  pid_t pid = run_child(body_bursts, "zstd", "frames-bursts");
  wait_ok(pid);
  char path[256];
  trace_path_for(path, sizeof path, g_dir, pid);
  struct frames_seen f;
  walk_frames(path, &f);
  /* every record, the ProxyOp's START and STOP included */
  assert_int_equal(f.records, BURSTS * STEPS_PER_BURST * RECORDS_PER_STEP + 2);
  /* ~80 ms of bursts: one or two age flushes, and the end; a frame a pass
   * would be about one a burst. Half of that is the bound however loaded. */
  if (f.chunks >= BURSTS / 2) fail_msg("%llu packed chunks for %d bursts", (unsigned long long)f.chunks, BURSTS);
}

/* ---- a quiet process's open frame is written within LENS_FRAME_MAX_AGE_MS: a SIGKILL then loses nothing ---- */
#define QUIET_STEPS 30

static int body_quiet(const char *mode) {
  struct emitter e;
  int rc = open_emitter(&e, mode, NULL);
  if (rc) return rc;
  emit_steps(&e, QUIET_STEPS);
  char c = 'x';
  if (write(g_pipe[1], &c, 1) != 1) return 5;
  for (;;) pause(); /* killed while its frame would still be open */
}

static void test_quiet_frame_written_by_age(void **state) {
  (void)state;
  assert_int_equal(pipe(g_pipe), 0);
  pid_t pid = run_child(body_quiet, "zstd", "frames-quiet");
  close(g_pipe[1]);
  char c;
  assert_int_equal(read(g_pipe[0], &c, 1), 1);
  close(g_pipe[0]);
  char path[256];
  trace_path_for(path, sizeof path, g_dir, pid);
  /* up to 5 s, however loaded the machine (the writer writes them after at most LENS_FRAME_MAX_AGE_MS) */
  struct trace_tally t;
  memset(&t, 0, sizeof t);
  for (int tries = 0; tries < 500; tries++) {
    if (trace_walk(path, &t) == 0 && t.records >= QUIET_STEPS * RECORDS_PER_STEP + 1) break;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(trace_walk(path, &t), 0);
  assert_int_equal(t.fini_reason[1] + t.fini_reason[2], 0); /* killed: no end written */
  assert_int_equal(t.records, QUIET_STEPS * RECORDS_PER_STEP + 1);
}

/* ---- a busy thread's frames reach their size and stay bounded; every record read back ---- */
#define BUSY_STEPS 60000

static int body_busy(const char *mode) {
  struct emitter e;
  int rc = open_emitter(&e, mode, "64M");
  if (rc) return rc;
  emit_steps(&e, BUSY_STEPS);
  return close_emitter(&e);
}

static void check_busy(const char *mode) {
  pid_t pid = run_child(body_busy, mode, "frames-busy");
  wait_ok(pid);
  char path[256];
  trace_path_for(path, sizeof path, g_dir, pid);
  struct frames_seen f;
  walk_frames(path, &f);
  assert_int_equal(f.fixed_chunks, 0);
  assert_int_equal(f.records, (uint64_t)BUSY_STEPS * RECORDS_PER_STEP + 2);
  /* full frames were written (a pass's 256 KiB of fixed records packs to far less than 64 KiB of stream) */
  if (f.max_stream < LENS_FRAME_STREAM_BYTES) fail_msg("largest frame %llu bytes", (unsigned long long)f.max_stream);
  /* at most one record and the open runs past the size (writer.c, LENS_FRAME_CAP) */
  assert_true(f.max_stream <= LENS_FRAME_STREAM_BYTES + 40 * 1024);
  assert_true(f.max_raw <= LENS_FRAME_RAW_MAX);
  char err[256] = "";
  const char *paths[1] = {path};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fail_msg("load: %s", err);
  assert_int_equal(m->n_events, BUSY_STEPS + 1);
  assert_int_equal(m->bad_records, 0);
  lens_model_free(m);
}

static void test_busy_frames_zstd(void **state) {
  (void)state;
  check_busy("zstd");
}

static void test_busy_frames_packed(void **state) {
  (void)state;
  check_busy("packed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bursts_share_frames),
      cmocka_unit_test(test_quiet_frame_written_by_age),
      cmocka_unit_test(test_busy_frames_zstd),
      cmocka_unit_test(test_busy_frames_packed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
