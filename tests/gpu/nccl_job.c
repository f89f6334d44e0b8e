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
 * without the plugin. */
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
};

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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
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

int main(int argc, char **argv) {
  struct job_opts o = {.nranks = 2, .iters = 5, .latency = 2000, .graph_replays = 10};
  int opt;
  while ((opt = getopt(argc, argv, "n:i:l:g:h")) != -1) {
    int *dst = opt == 'n' ? &o.nranks : opt == 'i' ? &o.iters : opt == 'l' ? &o.latency
             : opt == 'g' ? &o.graph_replays : NULL;
    if (!dst || parse_int(optarg, opt == 'n' ? 1 : 0, 1000000, dst) != 0) {
      fprintf(stderr, "usage: %s [-n ranks] [-i iters] [-l latency-ops] [-g graph-replays]\n", argv[0]);
      return 2;
    }
  }
  struct shared_id *sid = mmap(NULL, sizeof *sid, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sid == MAP_FAILED) {
    perror("lens-nccl-job: mmap");
    return 1;
  }
  /* Loopback sockets for bootstrap and the network transport, unless the user chose. */
  setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  for (int r = 0; r < o.nranks; r++) {
    pid_t p = fork();
    if (p < 0) {
      perror("lens-nccl-job: fork");
      return 1;
    }
    if (p == 0) _exit(run_rank(r, &o, sid));
  }
  int failed = 0;
  for (int r = 0; r < o.nranks; r++) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) fprintf(stderr, "lens-nccl-job: a rank failed\n");
  return failed;
}
