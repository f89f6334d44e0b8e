/* --kineto DIR: each simulated rank's torch.profiler (Kineto) trace, written
 * from the driver's own record of what it did (its truth ops: the API call,
 * the launch bracket, the true kernel span), in the layout of spec
 * pytorch.md §1 (docs/kineto-import.md):
 *   - top: schemaVersion, deviceProperties, distributedInfo (rank,
 *     world_size, pg_config), displayTimeUnit, baseTimeNanoseconds (the
 *     first time floored to a multiple of 7,889,238 s, as Kineto does),
 *     traceEvents, traceName;
 *   - per collective: c10d::<op>_ and record_param_comms CPU ops (External
 *     id, Rank, collective args, Seq), the nccl:<op> annotation,
 *     cuLaunchKernelEx (cuda_driver, correlation), an ac2g flow, and the
 *     ncclDevKernel_<Func>_RING_LL kernel on pid = device, tid = stream with
 *     correlation, External id, collective args and Seq.
 * Times: epoch ns of the host's wall clock (this process's CLOCK_MONOTONIC
 * moved by REALTIME - MONOTONIC), in µs with three decimals relative to the
 * base. A multi-host run's node i writes its wall clock i x
 * RP_KINETO_NODE_WALL_ERR_NS off (a host's NTP error; the truth's
 * kineto_wall_error_ns), so that the reader's alignment has something to
 * find. Seq: the collective's order on its communicator (PyTorch's process
 * group sequence number), the same on every rank.
 * --kineto-layout 2023 writes the layout of before May 2024 instead (as the
 * HTA test files have it): no baseTimeNanoseconds, ts and dur in whole epoch
 * µs (a µs clock: both ends floored), distributedInfo with backend, rank and
 * world_size only, ncclKernel_<Func>_RING_LL_Sum_float kernels without
 * collective args or Seq and with External id = correlation,
 * cudaLaunchKernel (cuda_runtime), record_param_comms without collective
 * args (its own External id: only its span encloses the launch). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_internal.h"
#include "replay/rp_kineto.h"
#include "replay/rp_truth.h"

#define KINETO_BASE_STEP_NS (7889238ull * 1000000000ull)
#define STREAM_BASE 13 /* the NCCL streams' ids: 13 + communicator set */
/* ops after a grouped p2p op searched for the rest of its group: the group's ops are written one after the
 * other by its thread, other local ranks' and communicators' ops between them (at most one group per comm) */
#define RP_KINETO_GROUP_LOOKAHEAD (4 * RP_MAX_COMMSETS * RP_MAX_LOCAL)

int64_t rp_kineto_wall_error_ns(const struct rp_node *n) {
  return n->nodes > 1 ? (int64_t)n->node * RP_KINETO_NODE_WALL_ERR_NS : 0;
}

static const char *coll_name(int func) {
  static const char *const v[] = {"allreduce", "_allgather_base", "_reduce_scatter_base", "broadcast",
                                  "reduce",    "send",            "recv"};
  return func >= 0 && func < RP_NFUNC ? v[func] : "unknown";
}
static const char *annotation(int func) {
  static const char *const v[] = {"nccl:all_reduce", "nccl:_all_gather_base", "nccl:_reduce_scatter_base",
                                  "nccl:broadcast",  "nccl:reduce",           "nccl:send",
                                  "nccl:recv"};
  return func >= 0 && func < RP_NFUNC ? v[func] : "nccl:unknown";
}
static const char *kernel_func(int func) {
  static const char *const v[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv",
                                  "SendRecv"};
  return func >= 0 && func < RP_NFUNC ? v[func] : "Generic";
}

/* PyTorch's dtype name and size of an NCCL datatype name. */
static const char *torch_dtype(const char *d, uint64_t *size) {
  static const struct { const char *nccl, *torch; uint64_t size; } t[] = {
      {"ncclFloat32", "Float", 4},  {"ncclFloat", "Float", 4},       {"ncclFloat16", "Half", 2},
      {"ncclHalf", "Half", 2},      {"ncclBfloat16", "BFloat16", 2}, {"ncclFloat64", "Double", 8},
      {"ncclDouble", "Double", 8},  {"ncclInt32", "Int", 4},         {"ncclInt", "Int", 4},
      {"ncclInt64", "Long", 8},     {"ncclUint8", "Byte", 1},        {"ncclInt8", "Char", 1},
      {"ncclChar", "Char", 1},      {"ncclUint32", "UInt32", 4},     {"ncclUint64", "UInt64", 8}};
  for (size_t i = 0; d && i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(d, t[i].nccl)) return *size = t[i].size, t[i].torch;
  *size = 1;
  return "Byte";
}

static int old_layout; /* --kineto-layout 2023 (one writer at a time: the end of a node's run) */

/* µs with three decimals of an epoch ns against the base (2023: whole epoch µs). */
static void put_us(FILE *f, int64_t ns, int64_t base) {
  int64_t r = ns - base;
  if (r < 0) r = 0;
  if (old_layout) fprintf(f, "%" PRId64, r / 1000);
  else fprintf(f, "%" PRId64 ".%03" PRId64, r / 1000, r % 1000);
}

static void put_dur(FILE *f, int64_t ns) { put_us(f, ns, 0); }

/* A span from..to: its start, then its duration as the clock's resolution gives it. */
static void put_span(FILE *f, int64_t from, int64_t to, int64_t base) {
  put_us(f, from, base);
  fputs(", \"dur\": ", f);
  if (old_layout) fprintf(f, "%" PRId64, (to - base) / 1000 - (from - base) / 1000);
  else put_dur(f, to - from);
}

static void ranks_list(FILE *f, int nranks) {
  fputc('"', f);
  fputc('[', f);
  for (int r = 0; r < nranks; r++) fprintf(f, "%s%d", r ? ", " : "", r);
  fputs("]\"", f);
}

/* The collective args PyTorch copies onto the CPU op and the kernel. */
static void coll_args(FILE *f, const struct rp_truth_op *o, const struct rp_comm *c, int64_t seq) {
  uint64_t es;
  const char *dt = torch_dtype(o->datatype, &es);
  uint64_t count = o->bytes / (es ? es : 1), in = count, out = count;
  if (o->func == RP_ALLGATHER) out = count * (uint64_t)c->nranks;
  if (o->func == RP_REDUCESCATTER) in = count * (uint64_t)c->nranks;
  fprintf(f, ",\"Collective name\":\"%s\",\"In msg nelems\":%" PRIu64 ",\"Out msg nelems\":%" PRIu64
             ",\"Group size\":%d,\"dtype\":\"%s\",\"In split size\":\"[]\",\"Out split size\":\"[]\","
             "\"Process Group Name\":\"%d\",\"Process Group Description\":\"%s\",\"Process Group Ranks\":",
          coll_name(o->func), in, out, c->nranks, dt, c->set, c->set ? "undefined" : "default_pg");
  ranks_list(f, c->nranks);
  if (seq >= 0) fprintf(f, ",\"Seq\":%" PRId64, seq);
}

/* One rank's file: the ops of the communicators of local GPU `local`. */
static int write_rank(struct rp_node *n, int local, const char *dir, int64_t wall_off) {
  const struct rp_comm *c0 = NULL;
  for (int i = 0; i < n->ncomm_sets * n->rpn; i++)
    if (n->comms[i].local == local && (!c0 || n->comms[i].set < c0->set)) c0 = &n->comms[i];
  if (!c0) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/rank-%d.json", dir, c0->rank);
  /* a predictable name in a directory the user named: never through a link, never over a file */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "nccl-lens replay: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return -1;
  }
  int nops = atomic_load(&n->truth->nops);
  if (nops > RP_TRUTH_MAX_OPS) nops = RP_TRUTH_MAX_OPS;
  int64_t first = INT64_MAX;
  for (int i = 0; i < nops; i++) {
    const struct rp_truth_op *o = rp_truth_op_at(n->truth, i);
    if (o && o->comm >= 0 && n->comms[o->comm].local == local && o->api_ns && o->api_ns < first) first = o->api_ns;
  }
  if (first == INT64_MAX) first = rp_now();
  int64_t base = (int64_t)(((uint64_t)(first + wall_off) / KINETO_BASE_STEP_NS) * KINETO_BASE_STEP_NS);
  int world = n->nodes * n->rpn;
  if (old_layout) { /* 2023: no base (epoch µs), no device properties, distributedInfo without pg_config */
    base = 0;
    fprintf(f, "{\"schemaVersion\": 1, \"record_shapes\": 1, \"distributedInfo\": {\"backend\": \"nccl\", "
               "\"rank\": %d, \"world_size\": %d}, \"traceEvents\": [\n",
            c0->rank, world);
  } else {
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": %d, \"name\": \"nccl-lens replay GPU\", "
               "\"totalGlobalMem\": 85899345920, \"computeMajor\": 9, \"computeMinor\": 0}],\n",
            local);
    fprintf(f, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, \"pg_count\": %d, "
               "\"pg_config\": [",
            c0->rank, world, n->ncomm_sets);
    for (int s = 0; s < n->ncomm_sets; s++) {
      fprintf(f, "%s{\"pg_name\": \"%d\", \"pg_desc\": \"%s\", \"backend_config\": \"cuda:nccl\", \"pg_size\": %d, "
                 "\"ranks\": ",
              s ? ", " : "", s, s ? "undefined" : "default_pg", c0->nranks);
      ranks_list(f, c0->nranks);
      fputc('}', f);
    }
    fprintf(f, "], \"nccl_version\": \"2.28.9\"},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRId64
               ",\n  \"traceEvents\": [\n",
            base);
  }
  pid_t pid = getpid();
  fprintf(f, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": "
             "\"python\"}},\n  {\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": %d, \"tid\": 0, \"args\": "
             "{\"labels\": \"GPU %d\"}}",
          (int)pid, local, local);
  int64_t seqs[RP_MAX_COMMSETS * RP_MAX_LOCAL] = {0};
  int64_t ext = 1000, corr = 1;
  int64_t last_p2p_start[RP_MAX_COMMSETS * RP_MAX_LOCAL] = {0};
  for (int i = 0; i < nops; i++) {
    const struct rp_truth_op *o = rp_truth_op_at(n->truth, i);
    if (!o || o->comm < 0 || o->comm >= n->ncomm_sets * n->rpn) continue;
    const struct rp_comm *c = &n->comms[o->comm];
    if (c->local != local || o->graph_replay == -2) continue; /* a capture launches nothing */
    int64_t seq = o->is_p2p || old_layout ? -1 : seqs[o->comm]++;
    if (!o->kernel_start || o->kernel_end <= o->kernel_start) continue; /* never ran (a hang) */
    /* A send and a receive grouped together share one launch and one kernel, whose span is the group's: the
     * truth times each op's part of it (the second starts where the first ends), so the launch, not the
     * kernel start, says which ops are one kernel. */
    int64_t group = o->launch_start ? o->launch_start : o->kernel_start;
    if (o->is_p2p && group == last_p2p_start[o->comm]) continue;
    if (o->is_p2p) last_p2p_start[o->comm] = group;
    int64_t g_start = o->kernel_start, g_end = o->kernel_end;
    for (int i2 = i + 1; o->is_p2p && i2 < nops && i2 <= i + RP_KINETO_GROUP_LOOKAHEAD; i2++) {
      const struct rp_truth_op *p = rp_truth_op_at(n->truth, i2);
      if (!p || p->comm != o->comm || !p->is_p2p || !p->kernel_start || p->kernel_end <= p->kernel_start) continue;
      if ((p->launch_start ? p->launch_start : p->kernel_start) != group) continue;
      if (p->kernel_start < g_start) g_start = p->kernel_start;
      if (p->kernel_end > g_end) g_end = p->kernel_end;
    }
    int eager = o->launch_start && o->launch_end >= o->launch_start && o->api_ns;
    int64_t k = corr++, e = old_layout ? k : ext++; /* 2023: the kernel's External id is its correlation */
    int stream = STREAM_BASE + c->set;
    if (eager) {
      int64_t a = o->api_ns + wall_off, le = o->launch_end + wall_off, ls = o->launch_start + wall_off;
      int64_t end = le + 1000;
      fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::%s_\", \"pid\": %d, \"tid\": %d, "
                 "\"ts\": ",
              coll_name(o->func), (int)pid, o->tid);
      put_span(f, a, end, base);
      fprintf(f, ", \"args\": {\"External id\": %" PRId64 "}}", ext + 500000);
      fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": %d, "
                 "\"tid\": %d, \"ts\": ",
              (int)pid, o->tid);
      put_span(f, old_layout ? a : a + 100, end - 100, base); /* 2023: whole µs; it must enclose the launch */
      if (old_layout) {
        fprintf(f, ", \"args\": {\"External id\": %" PRId64 ", \"Input Dims\": [[%" PRIu64 "], [], []]}}",
                ext++ + 100000, o->count);
      } else {
        fprintf(f, ", \"args\": {\"External id\": %" PRId64 ", \"Rank\": %d", e, c->rank);
        coll_args(f, o, c, seq);
        fputs("}}", f);
        fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": %d, "
                   "\"tid\": %d, \"ts\": ",
                annotation(o->func), (int)pid, o->tid);
        put_span(f, ls - 50 > a + 100 ? ls - 50 : a + 100, le + 50, base);
        fprintf(f, ", \"args\": {\"External id\": %" PRId64 "}}", e);
      }
      fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": ",
              old_layout ? "cuda_runtime" : "cuda_driver", old_layout ? "cudaLaunchKernel" : "cuLaunchKernelEx",
              (int)pid, o->tid);
      put_span(f, ls, le, base);
      fprintf(f, ", \"args\": {\"cbid\": %d, \"correlation\": %" PRId64 ", \"External id\": %" PRId64 "}}",
              old_layout ? 211 : 652, k, e);
      fprintf(f, ",\n  {\"ph\": \"s\", \"id\": %" PRId64 ", \"pid\": %d, \"tid\": %d, \"ts\": ", k, (int)pid, o->tid);
      put_us(f, ls, base);
      fputs(", \"cat\": \"ac2g\", \"name\": \"ac2g\"}", f);
    }
    int64_t ks = g_start + wall_off, ke = g_end + wall_off;
    if (old_layout)
      fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_%s_RING_LL_Sum_float"
                 "(ncclDevComm*, unsigned long, ncclWork*)\", \"pid\": %d, \"tid\": %d, \"ts\": ",
              kernel_func(o->func), local, stream);
    else
      fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_%s_RING_LL"
                 "(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": %d, \"tid\": %d, \"ts\": ",
              kernel_func(o->func), local, stream);
    put_span(f, ks, ke, base);
    fprintf(f, ", \"args\": {\"External id\": %" PRId64 ", \"queued\": 0, \"device\": %d, \"context\": 1, "
               "\"stream\": %d, \"correlation\": %" PRId64 ", \"grid\": [%d, 1, 1], \"block\": [512, 1, 1]",
            e, local, stream, k, o->nChannels);
    if (!old_layout) coll_args(f, o, c, seq);
    fputs("}}", f);
    if (eager) {
      fprintf(f, ",\n  {\"ph\": \"f\", \"id\": %" PRId64 ", \"pid\": %d, \"tid\": %d, \"ts\": ", k, local, stream);
      put_us(f, ks, base);
      fputs(", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}", f);
    }
  }
  fprintf(f, "\n  ],\n  \"traceName\": \"rank-%d.json\"\n}\n", c0->rank);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    fprintf(stderr, "nccl-lens replay: writing %s failed\n", path);
    return -1;
  }
  return 0;
}

int rp_kineto_write(struct rp_node *n, const char *dir) {
  if (mkdir(dir, 0755) && errno != EEXIST) {
    fprintf(stderr, "nccl-lens replay: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  rp_couple_settle(n); /* coupled GPUs: every kernel's end is fixed */
  /* this process's wall clock: REALTIME - MONOTONIC, plus the simulated host error */
  int64_t wall_off = (n->board ? n->board_delta : rp_board_delta()) + rp_kineto_wall_error_ns(n);
  int rc = 0;
  old_layout = n->o->kineto_2023;
  for (int l = 0; l < n->rpn; l++) rc |= write_rank(n, l, dir, wall_off);
  return rc;
}
