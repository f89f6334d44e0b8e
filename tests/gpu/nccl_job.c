/* lens-nccl-job: a small real NCCL job, for checking nccl-lens on a machine
 * with a GPU (CI has none: see tests/gpu/run_gpu_check.sh and docs/gpu-check.md).
 *
 * Forks one process per rank. When there are fewer GPUs than ranks, ranks
 * share a GPU and each gets its own NCCL_HOSTID: NCCL then sees one "node"
 * per rank (it refuses two ranks of one node on one GPU) and connects them
 * with its network transport over loopback sockets, so the proxy progress
 * thread, ProxyOp/ProxyStep and NetPlugin events are all real.
 *
 * Each rank runs: AllReduce over a range of sizes, grouped Send/Recv around
 * the ring, AllGather, ReduceScatter, Broadcast, a CUDA graph of AllReduces
 * replayed several times, then timed 8-byte AllReduces: batched enqueues (the
 * host cost where the plugin's callbacks land) and single round trips. It
 * prints one JSON line per rank, which run_gpu_check.sh compares with and
 * without the plugin.
 *
 * Two dedicated phases replace that sequence when asked for (each after a
 * barrier: a few 8-byte AllReduces, each waited for):
 *   -L RANK:US[:OPS]  a late rank: OPS (default 200) AllReduces of 1 MiB,
 *                     each waited for on every rank; RANK sleeps US before
 *                     each call, so every other rank's kernel waits about US
 *                     for it (the job view must name RANK and must not count
 *                     the sleep as execution: check_late_rank.py);
 *   -H RANK[:S]       a rank that never calls: after the barrier RANK stops
 *                     calling NCCL, sleeps S seconds (default 20) and exits
 *                     through exit() without finalizing (a recorder-mode
 *                     plugin dumps then), while every other rank calls one
 *                     more AllReduce, which cannot complete; they give up S +
 *                     10 s later (or when NCCL reports an error) without
 *                     finalizing. The job exits 3 when the hang was made as
 *                     asked (check_hang.py reads the dumps).
 * With both, the late phase runs first. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared_id {
  volatile int ready;
  ncclUniqueId id;
};

struct job_opts {
  int nranks;
  int iters;   /* per size and per collective */
  int latency; /* 8-byte AllReduces in the timed loop */
  int graph_replays;
  int late_rank, late_us, late_ops; /* -L; late_rank -1: no late phase */
  int hang_rank, hang_s;            /* -H; hang_rank -1: no hang */
};

/* Exit status of a rank that stopped calling as -H asked, of a rank left
 * waiting in the hung AllReduce, and of the job when both happened. */
enum { EXIT_HANG_MADE = 3, EXIT_LEFT_WAITING = 4 };
#define MAX_RANKS 1024
#define LATE_PHASE_ELEMS (256u << 10) /* 1 MiB of floats: a size no other phase uses */

#define CUDA_OK(x)                                                                    \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #x, cudaGetErrorString(e_));         \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)
#define NCCL_OK(x)                                                                    \
  do {                                                                                \
    ncclResult_t r_ = (x);                                                            \
    if (r_ != ncclSuccess) {                                                          \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #x, ncclGetErrorString(r_));         \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* nanosleep, not usleep: usleep may refuse a second or more. */
static void sleep_us(int us) {
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A barrier: 8-byte AllReduces, each waited for, so that what follows
 * starts on every rank at about the same time. */
static int barrier(int rank, ncclComm_t comm, cudaStream_t st, float *send, float *recv) {
  for (int i = 0; i < 5; i++) {
    NCCL_OK(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, st));
    CUDA_OK(cudaStreamSynchronize(st));
  }
  return 0;
}

/* -L: the late rank sleeps before each call; every rank waits for each op,
 * so each op's wait is the sleep, not a queue built up over the phase. */
static int late_phase(int rank, const struct job_opts *o, ncclComm_t comm, cudaStream_t st, float *send,
                      float *recv) {
  double *op = calloc((size_t)o->late_ops, sizeof *op);
  if (!op) return 1;
  for (int i = 0; i < o->late_ops; i++) {
    if (rank == o->late_rank) sleep_us(o->late_us);
    double a = now_us();
    ncclResult_t r = ncclAllReduce(send, recv, LATE_PHASE_ELEMS, ncclFloat, ncclSum, comm, st);
    cudaError_t e = r == ncclSuccess ? cudaStreamSynchronize(st) : cudaSuccess;
    if (r != ncclSuccess || e != cudaSuccess) {
      fprintf(stderr, "rank %d: late phase op %d: %s\n", rank, i,
              r != ncclSuccess ? ncclGetErrorString(r) : cudaGetErrorString(e));
      free(op);
      return 1;
    }
    op[i] = now_us() - a;
  }
  qsort(op, (size_t)o->late_ops, sizeof *op, cmp_double);
  /* call -> completion seen by the host: the late rank's is about the
   * execution, the others' about the sleep plus the execution */
  printf("{\"rank\":%d,\"pid\":%d,\"phase\":\"late\",\"late_rank\":%d,\"late_us\":%d,\"ops\":%d,"
         "\"bytes\":%zu,\"call_to_done_med_us\":%.1f,\"call_to_done_p90_us\":%.1f}\n",
         rank, (int)getpid(), o->late_rank, o->late_us, o->late_ops, (size_t)LATE_PHASE_ELEMS * sizeof(float),
         op[o->late_ops / 2], op[(o->late_ops * 9) / 10]);
  fflush(stdout);
  free(op);
  return 0;
}

/* -H: the hang rank stops calling and leaves through exit() (atexit
 * handlers, the plugin's among them, run; the communicator is never
 * finalized); the others call one AllReduce that cannot complete and poll
 * it, so that NCCL's own error report, if it gives one, is seen. */
static int hang_phase(int rank, const struct job_opts *o, ncclComm_t comm, cudaStream_t st, float *send,
                      float *recv) {
  if (rank == o->hang_rank) {
    printf("{\"rank\":%d,\"pid\":%d,\"phase\":\"hang\",\"role\":\"stopped calling\",\"sleep_s\":%d}\n", rank,
           (int)getpid(), o->hang_s);
    fflush(stdout);
    sleep((unsigned)o->hang_s);
    exit(EXIT_HANG_MADE);
  }
  printf("{\"rank\":%d,\"pid\":%d,\"phase\":\"hang\",\"role\":\"calling an AllReduce that cannot complete\"}\n",
         rank, (int)getpid());
  fflush(stdout);
  NCCL_OK(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, st));
  double give_up = now_us() + (o->hang_s + 10) * 1e6;
  const char *why = "gave up waiting";
  for (;;) {
    cudaError_t e = cudaStreamQuery(st);
    if (e == cudaSuccess) {
      fprintf(stderr, "rank %d: the AllReduce completed without rank %d\n", rank, o->hang_rank);
      return 1;
    }
    if (e != cudaErrorNotReady) {
      why = cudaGetErrorString(e);
      break;
    }
    ncclResult_t ar = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &ar) == ncclSuccess && ar != ncclSuccess && ar != ncclInProgress) {
      why = ncclGetErrorString(ar);
      break;
    }
    if (now_us() > give_up) break;
    usleep(10000);
  }
  fprintf(stderr, "rank %d: left waiting in the AllReduce: %s\n", rank, why);
  return EXIT_LEFT_WAITING;
}

static int run_dedicated(int rank, const struct job_opts *o, ncclComm_t comm, cudaStream_t st, float *send,
                         float *recv) {
  if (barrier(rank, comm, st, send, recv) != 0) return 1;
  if (o->late_rank >= 0 && late_phase(rank, o, comm, st, send, recv) != 0) return 1;
  if (o->hang_rank >= 0) {
    if (o->late_rank >= 0 && barrier(rank, comm, st, send, recv) != 0) return 1;
    return hang_phase(rank, o, comm, st, send, recv);
  }
  return 0;
}

static int run_rank(int rank, const struct job_opts *o, struct shared_id *sid) {
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  if (ndev < o->nranks) {
    char host[64];
    snprintf(host, sizeof host, "lens-job-node%d", rank);
    setenv("NCCL_HOSTID", host, 1);
  }
  CUDA_OK(cudaSetDevice(rank % ndev));
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&sid->id));
    __atomic_store_n(&sid->ready, 1, __ATOMIC_RELEASE);
  } else {
    while (!__atomic_load_n(&sid->ready, __ATOMIC_ACQUIRE)) usleep(1000);
  }
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, o->nranks, sid->id, rank));

  const size_t max_elems = 16u << 20; /* 64 MiB of floats */
  float *send, *recv;
  CUDA_OK(cudaMalloc((void **)&send, max_elems * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&recv, max_elems * o->nranks * sizeof(float)));
  CUDA_OK(cudaMemset(send, 0, max_elems * sizeof(float)));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (o->late_rank >= 0 || o->hang_rank >= 0) {
    int rc = run_dedicated(rank, o, comm, st, send, recv);
    if (rc != 0) return rc; /* a hang leaves the communicator as it is: no finalize */
    NCCL_OK(ncclCommFinalize(comm));
    NCCL_OK(ncclCommDestroy(comm));
    return 0;
  }

  /* AllReduce from 1 KiB to 64 MiB. */
  for (size_t n = 256; n <= max_elems; n *= 8)
    for (int i = 0; i < o->iters; i++) NCCL_OK(ncclAllReduce(send, recv, n, ncclFloat, ncclSum, comm, st));
  CUDA_OK(cudaStreamSynchronize(st));

  /* Grouped Send/Recv around the ring. */
  int next = (rank + 1) % o->nranks, prev = (rank + o->nranks - 1) % o->nranks;
  for (int i = 0; i < o->iters; i++) {
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(send, 1u << 20, ncclFloat, next, comm, st));
    NCCL_OK(ncclRecv(recv, 1u << 20, ncclFloat, prev, comm, st));
    NCCL_OK(ncclGroupEnd());
  }
  /* The other collectives once each size class. */
  for (int i = 0; i < o->iters; i++) {
    NCCL_OK(ncclAllGather(send, recv, 1u << 18, ncclFloat, comm, st));
    NCCL_OK(ncclReduceScatter(send, recv, 1u << 18, ncclFloat, ncclSum, comm, st));
    NCCL_OK(ncclBroadcast(send, recv, 1u << 18, ncclFloat, 0, comm, st));
  }
  CUDA_OK(cudaStreamSynchronize(st));

  /* A CUDA graph of three AllReduces, replayed. */
  if (o->graph_replays > 0) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; i++) NCCL_OK(ncclAllReduce(send, recv, 1u << 16, ncclFloat, ncclSum, comm, st));
    CUDA_OK(cudaStreamEndCapture(st, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < o->graph_replays; i++) CUDA_OK(cudaGraphLaunch(ge, st));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));
  }

  /* Host cost of the enqueue, where the plugin's callbacks land: batches of
   * 64 8-byte AllReduces enqueued back to back (no wait between them, so the
   * GPU's pace does not enter), per-op time per batch; then the round trip of
   * single ops. */
  enum { BATCH = 64 };
  int nbatch = o->latency / BATCH;
  double *enq = calloc((size_t)nbatch + 1, sizeof *enq);
  if (!enq) return 1;
  for (int b = 0; b < nbatch; b++) {
    double a = now_us();
    for (int i = 0; i < BATCH; i++) NCCL_OK(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, st));
    enq[b] = (now_us() - a) / BATCH;
    CUDA_OK(cudaStreamSynchronize(st));
  }
  qsort(enq, (size_t)nbatch, sizeof *enq, cmp_double);
  double enq_med = nbatch ? enq[nbatch / 2] : 0;
  double enq_p90 = nbatch ? enq[(nbatch * 9) / 10] : 0;
  free(enq);
  int rt_ops = o->latency / 4;
  double t0 = now_us();
  for (int i = 0; i < rt_ops; i++) {
    NCCL_OK(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, st));
    CUDA_OK(cudaStreamSynchronize(st));
  }
  double loop_us = now_us() - t0;

  int version = 0;
  ncclGetVersion(&version);
  printf("{\"rank\":%d,\"pid\":%d,\"nccl_version\":%d,\"enqueue_ops\":%d,\"enqueue_med_us\":%.3f,"
         "\"enqueue_p90_us\":%.3f,\"round_trip_ops\":%d,\"round_trip_us\":%.3f}\n",
         rank, (int)getpid(), version, nbatch * BATCH, enq_med, enq_p90, rt_ops, rt_ops ? loop_us / rt_ops : 0.0);
  fflush(stdout);

  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaStreamDestroy(st));
  CUDA_OK(cudaFree(send));
  CUDA_OK(cudaFree(recv));
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* "A:B[:C]" into up to n ints within their ranges; the parts after the
 * first may be left out (their defaults stay). 0, or -1 on a bad value. */
static int parse_ints(const char *s, int n, const int *lo, const int *hi, int **out) {
  char buf[64];
  if (strlen(s) >= sizeof buf) return -1;
  strcpy(buf, s);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  int k = 0;
  for (; tok && k < n; k++, tok = strtok_r(NULL, ":", &save))
    if (parse_int(tok, lo[k], hi[k], out[k]) != 0) return -1;
  if (k == 0 || tok || s[0] == ':' || s[strlen(s) - 1] == ':' || strstr(s, "::")) return -1;
  return 0;
}

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [-n ranks] [-i iters] [-l latency-ops] [-g graph-replays]\n"
          "       [-L RANK:US[:OPS]] [-H RANK[:S]]\n"
          "  -L RANK:US[:OPS]  instead of the usual sequence: OPS (200) AllReduces of 1 MiB, RANK sleeping US\n"
          "                    microseconds (1..10000000) before each call\n"
          "  -H RANK[:S]       after a barrier (and -L's phase), RANK stops calling, sleeps S seconds (20; 1..3600)\n"
          "                    and exits without finalize, while the others call one more AllReduce, which cannot\n"
          "                    complete; exit status 3 when the hang was made so\n",
          argv0);
  return 2;
}

int main(int argc, char **argv) {
  struct job_opts o = {.nranks = 2, .iters = 5, .latency = 2000, .graph_replays = 10, .late_rank = -1,
                       .late_us = 0, .late_ops = 200, .hang_rank = -1, .hang_s = 20};
  int opt;
  while ((opt = getopt(argc, argv, "n:i:l:g:L:H:h")) != -1) {
    if (opt == 'L') {
      int lo[3] = {0, 1, 1}, hi[3] = {MAX_RANKS - 1, 10000000, 1000000};
      int *dst[3] = {&o.late_rank, &o.late_us, &o.late_ops};
      o.late_us = 0;
      if (parse_ints(optarg, 3, lo, hi, dst) != 0 || o.late_us == 0) return usage(argv[0]);
      continue;
    }
    if (opt == 'H') {
      int lo[2] = {0, 1}, hi[2] = {MAX_RANKS - 1, 3600};
      int *dst[2] = {&o.hang_rank, &o.hang_s};
      if (parse_ints(optarg, 2, lo, hi, dst) != 0) return usage(argv[0]);
      continue;
    }
    int *dst = opt == 'n' ? &o.nranks : opt == 'i' ? &o.iters : opt == 'l' ? &o.latency
             : opt == 'g' ? &o.graph_replays : NULL;
    int lo = opt == 'n' ? 1 : 0, hi = opt == 'n' ? MAX_RANKS : 1000000;
    if (!dst || parse_int(optarg, lo, hi, dst) != 0) return usage(argv[0]);
  }
  if (optind != argc) return usage(argv[0]);
  if (o.late_rank >= o.nranks || o.hang_rank >= o.nranks) {
    fprintf(stderr, "%s: -L/-H name rank %d, but the job has ranks 0..%d\n", argv[0],
            o.late_rank >= o.nranks ? o.late_rank : o.hang_rank, o.nranks - 1);
    return 2;
  }
  if ((o.hang_rank >= 0 || o.late_rank >= 0) && o.nranks < 2) {
    fprintf(stderr, "%s: -L and -H need at least 2 ranks\n", argv[0]);
    return 2;
  }
  struct shared_id *sid = mmap(NULL, sizeof *sid, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sid == MAP_FAILED) {
    perror("lens-nccl-job: mmap");
    return 1;
  }
  /* Loopback sockets for bootstrap and the network transport, unless the user chose. */
  setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  pid_t pids[MAX_RANKS];
  for (int r = 0; r < o.nranks; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("lens-nccl-job: fork");
      return 1;
    }
    if (p == 0) _exit(run_rank(r, &o, sid));
    pids[r] = p;
  }
  /* Without -H every rank must exit 0; with it, the hang rank 3 and the
   * others 4 (left waiting), which is the job's success: exit 3. */
  int failed = 0, hang_ok = o.hang_rank >= 0;
  for (int r = 0; r < o.nranks; r++) {
    int status;
    if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status)) {
      failed = 1, hang_ok = 0;
      continue;
    }
    int want = o.hang_rank < 0 ? 0 : r == o.hang_rank ? EXIT_HANG_MADE : EXIT_LEFT_WAITING;
    if (WEXITSTATUS(status) != want) failed = 1, hang_ok = 0;
  }
  if (hang_ok) return EXIT_HANG_MADE;
  if (failed) fprintf(stderr, "lens-nccl-job: a rank failed\n");
  return failed;
}
