/* lens-kineto-read [MiB] [--gz] [--keep PATH]: writes a Kineto trace of about
 * MiB MiB (default 1024) of the shape torch.profiler writes (CPU ops, runtime
 * launches, kernels with args, flows; one NCCL AllReduce in 8 kernels), then
 * reads it twice: the bare reader (lens_kineto_read, no-op callback) and the
 * job importer (lens_kineto_job_map). Prints MB/s per core (uncompressed JSON
 * bytes over the process's CPU time) and the peak RSS. Take figures on an
 * idle machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "job_part.h"
#include "kineto_job.h"
#include "kineto_read.h"

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long maxrss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static int nop(void *ctx, const struct lens_kineto_event *e) {
  (*(uint64_t *)ctx) += e->have & 1;
  return 0;
}

int main(int argc, char **argv) {
  long mib = 1024;
  int gz = 0;
  const char *keep = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gz")) gz = 1;
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else if ((mib = strtol(argv[i], NULL, 10)) <= 0) return fprintf(stderr, "usage: lens-kineto-read [MiB] [--gz] [--keep PATH]\n"), 2;
  }
  char path[256];
  if (keep) snprintf(path, sizeof path, "%s", keep);
  else snprintf(path, sizeof path, "/tmp/lens-kineto-bench-%d.json%s", (int)getpid(), gz ? ".gz" : "");
  gzFile z = gzopen(path, gz ? "wb1" : "wbT");
  if (!z) return perror(path), 1;
  gzprintf(z, "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n"
              "\"baseTimeNanoseconds\": 1767189312000000000,\n\"traceEvents\": [\n");
  uint64_t target = (uint64_t)mib << 20, written = 0, ts = 1000000000;
  long corr = 1;
  char ev[2048];
  for (int first = 1; written < target; first = 0) {
    for (int k = 0; k < 8; k++, corr++, ts += 50000) {
      int nccl = k == 7;
      int n = snprintf(ev, sizeof ev,
                       "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 4242, \"tid\": 4242, "
                       "\"ts\": %lu.%03lu, \"dur\": 31.250, \"args\": {\"External id\": %ld, \"Record function id\": 0, "
                       "\"Ev Idx\": %ld%s}},\n"
                       "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, "
                       "\"tid\": 4242, \"ts\": %lu.%03lu, \"dur\": 4.125, \"args\": {\"External id\": %ld, \"cbid\": 211, "
                       "\"correlation\": %ld}},\n"
                       "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, \"ts\": %lu.%03lu, "
                       "\"dur\": 120.500, \"args\": {\"External id\": %ld, \"queued\": 0, \"device\": 0, \"context\": 1, "
                       "\"stream\": %d, \"correlation\": %ld, \"registers per thread\": 96, \"shared memory\": 0, "
                       "\"blocks per SM\": 1.5, \"warps per SM\": 12.0, \"grid\": [132, 1, 1], \"block\": [256, 1, 1], "
                       "\"est. achieved occupancy %%\": 50%s}},\n"
                       "{\"ph\": \"f\", \"id\": %ld, \"pid\": 0, \"tid\": 7, \"ts\": %lu.%03lu, \"cat\": \"ac2g\", "
                       "\"name\": \"ac2g\", \"bp\": \"e\"}",
                       first && !k ? "" : ",\n", nccl ? "record_param_comms" : "aten::mm", ts / 1000, ts % 1000, corr,
                       corr,
                       nccl ? ", \"Collective name\": \"allreduce\", \"Rank\": 0, \"Process Group Name\": \"0\"" : "",
                       (ts + 2000) / 1000, (ts + 2000) % 1000, corr, corr,
                       nccl ? "ncclDevKernel_AllReduce_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                            : "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
                       nccl ? 13 : 7, (ts + 9000) / 1000, (ts + 9000) % 1000, corr, nccl ? 13 : 7, corr,
                       nccl ? ", \"Collective name\": \"allreduce\", \"In msg nelems\": 262144, \"Out msg nelems\": "
                              "262144, \"Group size\": 8, \"dtype\": \"Float\", \"Process Group Name\": \"0\", "
                              "\"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\""
                            : "",
                       corr, (ts + 9000) / 1000, (ts + 9000) % 1000);
      gzwrite(z, ev, (unsigned)n);
      written += (uint64_t)n;
    }
  }
  gzputs(z, "\n], \"traceName\": \"bench\"}\n");
  gzclose(z);
  char err[512];
  uint64_t cnt = 0;
  struct lens_kineto_info in;
  double c0 = cpu_s();
  if (lens_kineto_read(path, nop, &cnt, &in, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  double c1 = cpu_s();
  printf("reader:   %.0f MiB JSON%s, %llu events: %.1f MB/s per core (%.2f s CPU), peak RSS %ld MiB\n",
         (double)in.bytes / 1048576.0, gz ? " (gzip'd)" : "", (unsigned long long)in.events,
         (double)in.bytes / 1e6 / (c1 - c0), c1 - c0, maxrss_mb());
  struct lens_job_part p;
  struct lens_kineto_job_stats st;
  c0 = cpu_s();
  if (lens_kineto_job_map(path, &p, &st, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  c1 = cpu_s();
  printf("importer: %llu NCCL kernels, %zu records: %.1f MB/s per core (%.2f s CPU), peak RSS %ld MiB\n",
         (unsigned long long)st.nccl_kernels, p.n_recs, (double)in.bytes / 1e6 / (c1 - c0), c1 - c0, maxrss_mb());
  lens_job_part_free(&p);
  if (!keep) unlink(path);
  return 0;
}
