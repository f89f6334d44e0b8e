/* Sessions and communicators.
 *
 * First init of a session: parse config (once per process), pin the .so,
 * map the rings (once), calibrate the clock, open the trace, write SESSION,
 * set up the emitters, start the writer. Each init adds a communicator
 * (COMM chunk, opaque context). The last finalize tears the emitters down,
 * drains and writes FINI(1), joins the writer and closes the file; a later
 * init (NCCL re-dlopens us) starts the next session in the same file.
 *
 * init never fails NCCL: on any internal failure it returns success with
 * LENS_CTX_NOOP, on which every event is a cheap no-op. */
#define _GNU_SOURCE
#include "session.h"

#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter.h"
#include "blobq.h"
#include "clock.h"
#include "comm_table.h"
#include "config_parse.h"
#include "counters.h"
#include "hooks.h"
#include "log.h"
#include "log_internal.h"
#include "nccl_lib.h"
#include "record.h"
#include "registry_file.h"
#include "trace_file.h"
#include "tslot.h"
#include "writer.h"

#ifndef LENS_PLUGIN_VERSION
#define LENS_PLUGIN_VERSION "0.0.0"
#endif

int lens_nvtx_active;
int lens_cupti_active;
int *volatile lens_mask_ptr;

static pthread_mutex_t g_life_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_refcount;
static int g_session_pid;     /* pid that opened the session (exit/fork checks) */
static int g_process_setup;   /* once per process (per fork child) */
static int g_pinned, g_pin_tried, g_atexit_done, g_atfork_done;
static int g_slots_ok;
static int g_fail_once, g_table_full_once, g_fini_bad_once, g_flush_once;

static void pin_self(void) {
  if (g_pin_tried) return;
  g_pin_tried = 1;
  Dl_info info;
  /* NODELETE keeps our code mapped after NCCL's dlclose, so the writer,
   * the atexit handler, key destructors and CUPTI callbacks never point
   * into unmapped memory. */
  if (dladdr((void *)&pin_self, &info) && info.dli_fname) {
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (h) {
      g_pinned = 1;
      dlclose(h); /* drops the reference NOLOAD took; NODELETE stays */
      return;
    }
    /* A reference of our own that is never dropped pins us just as well:
     * the writer thread then outlives NCCL's dlclose safely. */
    if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE)) {
      g_pinned = 1;
      return;
    }
  }
  lens_log(LENS_LOG_WARN, "nccl-lens: could not pin the plugin in memory; it will clean up fully at the last finalize");
}

static void at_exit(void);
static void atfork_prepare(void) { pthread_mutex_lock(&g_life_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_life_mu); }
/* The child has only the forking thread: no writer, none of the parent's
 * threads. Forget the session; the child starts its own at its own init. */
static void atfork_child(void) {
  pthread_mutex_init(&g_life_mu, NULL);
  g_refcount = 0;
  g_session_pid = 0;
  lens_mask_ptr = NULL;
  lens_tf_reset_after_fork();
  lens_writer_reset_after_fork();
  lens_tslots_reset_after_fork();
  lens_comm_table_reset();
  lens_blobq_reset();
}

static void write_session_chunk(int api_version, const struct lens_config *c, int mask, const char *host) {
  struct lens_session s;
  memset(&s, 0, sizeof s);
  s.pid = (uint32_t)getpid();
  s.nccl_api_version = (uint32_t)api_version;
  s.start_mono_ns = lens_mono_ns();
  s.start_real_ns = lens_real_ns();
  s.ts_clock = LENS_CLOCK_MONOTONIC;
  s.hot_clock = lens_clock_use_tsc ? LENS_CLOCK_TSC : LENS_CLOCK_MONOTONIC;
  s.tsc_ns_per_tick = lens_clock_ns_per_tick();
  s.event_mask = (uint32_t)mask;
  s.buffer_bytes = (uint32_t)lens_slots.ring_bytes;
  s.max_threads = lens_slots.n;
  s.flags = (lens_nvtx_active ? LENS_SESSION_F_NVTX : 0) | (lens_cupti_active ? LENS_SESSION_F_CUPTI : 0);
  snprintf(s.host, sizeof s.host, "%s", host);
  snprintf(s.plugin_version, sizeof s.plugin_version, "%s", LENS_PLUGIN_VERSION);
  s.outer_pid = lens_outer_id("/proc/self/status", s.pid);
  s.lib_version = lens_lib.version;
  s.lib_kind = lens_lib.kind;
  s.lib_flags = lens_lib.flags;
  lens_writer_open_session(c, host, (int)s.pid, &s, sizeof s); /* the writer opens the file, not us */
}

static int clip_mask(int api_version, int mask) {
  if (api_version <= 4) return mask & LENS_EV_ALL_V4;
  if (api_version == 5) return mask & LENS_EV_ALL_V5;
  if (api_version == 6) return mask & LENS_EV_ALL_V6;
  return mask & LENS_EV_ALL_V7;
}

/* First init of a session (lock held). */
static void session_open(int api_version, int mask, lens_nccl_logger_t logfn) {
  const struct lens_config *c = lens_config_get();
  lens_lib_detect(logfn, api_version);
  pin_self();
  if (!g_atexit_done && atexit(at_exit) == 0) g_atexit_done = 1;
  if (!g_atfork_done && pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0) g_atfork_done = 1;
  g_slots_ok = lens_tslots_setup(c->max_threads, c->buffer_bytes) == 0;
  lens_clock_setup(c->use_tsc);
  lens_counters_reset();
  lens_self_pid = getpid();
  g_session_pid = lens_self_pid;
  char host[64] = "unknown";
  gethostname(host, sizeof host);
  host[sizeof host - 1] = 0;
  /* Emitters first, so SESSION says whether they are on. */
  if (lens_nvtx_setup) lens_nvtx_setup();
  if (lens_cupti_setup) lens_cupti_setup();
  write_session_chunk(api_version, c, mask, host);
}

/* Last finalize, or exit without finalize (lock held). The writer does the
 * final drain, FINI and close; we wait for it while it makes progress, at
 * most NCCL_LENS_FLUSH_TIMEOUT_MS without a chunk written and 10 times that
 * in all (a stalled output file system must not hang NCCL's finalize or the
 * exit; a slow one still gets the end of the trace), then carry on and let
 * it finish on its own. */
static void session_close(uint32_t reason) {
  const struct lens_config *c = lens_config_get();
  if (reason == 1) {
    if (lens_nvtx_teardown) lens_nvtx_teardown();
    if (lens_cupti_teardown) lens_cupti_teardown();
  } else if (lens_cupti_at_exit) {
    lens_cupti_at_exit();
  }
  int done = lens_writer_close_session(reason, c->flush_timeout_ms) == 0;
  if (!done)
    lens_log_once(&g_flush_once, LENS_LOG_WARN,
                  "nccl-lens: the trace writer did not finish within %u ms without writing a chunk, or 10 times that "
                  "in all (NCCL_LENS_FLUSH_TIMEOUT_MS; is the file system of %s stalled?); NCCL goes on and the "
                  "writer finishes the trace when its I/O returns",
                  c->flush_timeout_ms, c->out_dir);
  lens_mask_ptr = NULL;
  if (reason == 1) {
    /* Ring pages go back only once the writer has drained them; a writer
     * still blocked in write() may yet read them. */
    if (done) lens_tslots_release_pages();
    if (!g_pinned) {
      lens_writer_shutdown(reason, c->flush_timeout_ms);
      lens_tslots_forget_key();
    }
  }
}

lens_nccl_result_t lens_session_init(int api_version, void **context, uint64_t comm_id, int *mask, const char *name,
                                     int nnodes, int nranks, int rank, lens_nccl_logger_t logfn) {
  if (!context) return LENS_NCCL_SUCCESS;
  *context = (void *)(uintptr_t)LENS_CTX_NOOP;
  pthread_mutex_lock(&g_life_mu);
  if (logfn) lens_log_set_logger(logfn);
  if (!g_process_setup) {
    lens_config_load_once();
    lens_comm_table_setup();
    g_process_setup = 1;
  }
  const struct lens_config *c = lens_config_get();
  if (c->disable) {
    if (mask) __atomic_store_n(mask, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_life_mu);
    return LENS_NCCL_SUCCESS;
  }
  int m = clip_mask(api_version, c->event_mask);
  if (g_refcount == 0) session_open(api_version, m, logfn);
  const struct lens_comm_info *ci = NULL;
  if (lens_comm_add(comm_id, name, rank, nranks, nnodes, &ci) != 0) {
    lens_log_once(&g_table_full_once, LENS_LOG_WARN,
                  "nccl-lens: more than %d communicators alive; ignoring the events of the new ones", LENS_MAX_COMMS);
    if (g_refcount == 0) session_close(1);
    pthread_mutex_unlock(&g_life_mu);
    return LENS_NCCL_SUCCESS;
  }
  g_refcount++;
  struct lens_comm_rec r;
  memset(&r, 0, sizeof r);
  r.context = ci->context;
  r.comm_id = comm_id;
  r.rank = rank;
  r.nranks = nranks;
  r.nnodes = nnodes;
  r.comm_index = ci->comm_index;
  r.init_mono_ns = lens_mono_ns();
  r.api_version = (uint32_t)api_version;
  snprintf(r.name, sizeof r.name, "%s", name ? name : "");
  lens_writer_post(LENS_CHUNK_COMM, &r, sizeof r);
  if (lens_nvtx_comm_init) lens_nvtx_comm_init(ci);
  if (mask) {
    __atomic_store_n(mask, m, __ATOMIC_RELAXED);
    lens_mask_ptr = mask;
  }
  if (!g_slots_ok)
    lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: no thread buffers; events are counted as dropped");
  *context = (void *)(uintptr_t)ci->context;
  pthread_mutex_unlock(&g_life_mu);
  /* Mark this thread as an init thread (claims its slot off the hot path). */
  struct lens_tslot *s = lens_tslot_get();
  if (s) lens_tslot_add_role(s, LENS_ROLE_INIT);
  return LENS_NCCL_SUCCESS;
}

lens_nccl_result_t lens_session_finalize(void *context) {
  uint64_t ctx = (uint64_t)(uintptr_t)context;
  if (ctx == LENS_CTX_NOOP || !ctx) return LENS_NCCL_SUCCESS;
  struct lens_tslot *s = lens_tslot_get();
  if (s) lens_tslot_add_role(s, LENS_ROLE_INIT);
  pthread_mutex_lock(&g_life_mu);
  const struct lens_comm_info *ci = lens_comm_remove(ctx);
  if (!ci) {
    pthread_mutex_unlock(&g_life_mu);
    lens_log_once(&g_fini_bad_once, LENS_LOG_WARN, "nccl-lens: finalize with an unknown context; ignored");
    return LENS_NCCL_SUCCESS;
  }
  struct lens_comm_fini f = {ctx, lens_mono_ns(), ci->comm_index, 0};
  lens_writer_post(LENS_CHUNK_COMM_FINI, &f, sizeof f);
  if (--g_refcount == 0) session_close(1);
  pthread_mutex_unlock(&g_life_mu);
  return LENS_NCCL_SUCCESS;
}

/* Exit without finalize: flush what the rings hold and mark the end. The
 * lock may be held by a thread frozen mid-init; do not wait for ever. */
static void at_exit(void) {
  int locked = 0;
  for (int i = 0; i < 200 && !(locked = pthread_mutex_trylock(&g_life_mu) == 0); i++) usleep(5000);
  if (g_refcount > 0 && g_session_pid == getpid()) {
    g_refcount = 0;
    session_close(2);
  } else if (g_session_pid == getpid()) {
    /* The last finalize stopped waiting for a slow writer; the process ends
     * now and would cut the trace short: give the writer one more bounded
     * wait to write the end of the trace. */
    lens_writer_wait_done(lens_config_get()->flush_timeout_ms);
  }
  if (locked) pthread_mutex_unlock(&g_life_mu);
}

int lens_session_refcount(void) {
  pthread_mutex_lock(&g_life_mu);
  int r = g_refcount;
  pthread_mutex_unlock(&g_life_mu);
  return r;
}
