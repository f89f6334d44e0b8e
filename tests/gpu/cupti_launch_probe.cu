// lens-cupti-launch-probe: which CUPTI settings give driver-API and
// external-correlation records for a kernel launched the way NCCL launches
// (cuLaunchKernelEx through a driver entry point), on a real GPU, and what
// each setting costs per launch.
// Usage: lens-cupti-launch-probe MODE [FLAGS]
//   MODE   cbids        cuptiActivityEnableDriverApi for the launch cbids only
//          driver       CUPTI_ACTIVITY_KIND_DRIVER (every driver API)
//          both         cbids, then KIND_DRIVER
//          kernel-only  CONCURRENT_KERNEL alone (no correlation)
//   FLAGS  late  make the CUDA context and fetch the entry point before CUPTI
//                is touched, as under NCCL (the plugin attaches at comm init);
//                also times 20000 launches before and after
//          nocb  no CUPTI callbacks enabled (the plugin enables none)
// Build (not part of CMake: needs nvcc and a GPU to mean anything):
//   nvcc -arch=sm_90 -o lens-cupti-launch-probe tests/gpu/cupti_launch_probe.cu -lcupti -lcuda
// Results: docs/gpu-check.md.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void tiny(int *p) { if (p) p[threadIdx.x] += 1; }

static unsigned long long n_kernel, n_api, n_ext, n_other, n_cb_launch, n_ext_match;
static unsigned long long api_corr[64];
static int n_api_corr;

#define CK(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char *s_; cuptiGetResultString(r_, &s_); \
  printf("%s: %s\n", #x, s_); } } while (0)

static void CUPTIAPI buf_req(uint8_t **b, size_t *sz, size_t *max) {
  *sz = 1 << 20; *b = (uint8_t *)aligned_alloc(8, *sz); *max = 0;
}
static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: n_kernel++; break;
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)r;
      n_api++;
      if (n_api_corr < 64) api_corr[n_api_corr++] = a->correlationId;
      if (n_api <= 2) printf("  api record cbid %u corr %u\n", a->cbid, a->correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      CUpti_ActivityExternalCorrelation *e = (CUpti_ActivityExternalCorrelation *)r;
      n_ext++;
      if (n_ext <= 2) printf("  ext record kind %d ext %llu corr %u\n", (int)e->externalKind,
                             (unsigned long long)e->externalId, e->correlationId);
      if (e->externalId >= 1000) n_ext_match++;
      break;
    }
    default: n_other++;
    }
  }
  free(b);
}
static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data) {
  const CUpti_CallbackData *cd = (const CUpti_CallbackData *)data;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && cd->callbackSite == CUPTI_API_ENTER) {
    n_cb_launch++;
    if (n_cb_launch <= 2) printf("  callback cbid %u (%s) corr %u\n", id, cd->functionName, cd->correlationId);
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);

// Launches n kernels as NCCL does; push/pop an external id around each when asked.
static double launch_n(launch_ex_t pfn, CUfunction fn, cudaStream_t st, int *d, int n, int ext) {
  double t0 = now_us();
  for (int i = 0; i < n; i++) {
    if (ext) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 1000 + i);
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32; cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = (CUstream)st;
    void *args[] = {&d};
    CUresult r = pfn(&cfg, fn, args, NULL);
    if (r != CUDA_SUCCESS) printf("cuLaunchKernelEx: %d\n", (int)r);
    if (ext) {
      uint64_t last;
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
    }
    if ((i & 255) == 255) cudaStreamSynchronize(st);
  }
  cudaStreamSynchronize(st);
  return (now_us() - t0) / n;
}

// MODE: cbids | driver | both | kernel-only ; FLAGS (any of): late nocb
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "cbids";
  const char *flags = argc > 2 ? argv[2] : "";
  int late = strstr(flags, "late") != NULL, nocb = strstr(flags, "nocb") != NULL;
  const CUpti_CallbackId cbids[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz};
  int *d = NULL;
  cudaStream_t st;
  void *pfn = NULL;
  CUfunction fn;
  cudaDriverEntryPointQueryResult q;
  // NCCL's order ("late"): CUDA context and driver entry points exist before CUPTI is touched.
  if (late) {
    cudaMalloc(&d, 256 * sizeof(int));
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &pfn, 12000, cudaEnableDefault, &q);
    cudaGetFuncBySymbol(&fn, (const void *)tiny);
    double base = launch_n((launch_ex_t)pfn, fn, st, d, 20000, 0);
    printf("launch cost without CUPTI: %.3f us\n", base);
  }
  CUpti_SubscriberHandle sub;
  CK(cuptiSubscribe(&sub, on_cb, NULL));
  if (!nocb)
    for (unsigned i = 0; i < 4; i++) CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbids[i]));
  CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (strcmp(mode, "kernel-only")) CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
  if (!strcmp(mode, "cbids") || !strcmp(mode, "both"))
    for (unsigned i = 0; i < 4; i++) CK(cuptiActivityEnableDriverApi(cbids[i], 1));
  if (!strcmp(mode, "driver") || !strcmp(mode, "both")) CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  if (!late) {
    cudaMalloc(&d, 256 * sizeof(int));
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &pfn, 12000, cudaEnableDefault, &q);
    cudaGetFuncBySymbol(&fn, (const void *)tiny);
  }
  launch_n((launch_ex_t)pfn, fn, st, d, 10, 1);
  tiny<<<1, 32, 0, st>>>(d); // runtime launch, no ext id
  cudaStreamSynchronize(st);
  CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  printf("mode %s %s: callbacks %llu, kernels %llu, driver api records %llu, ext corr records %llu (ours %llu), other %llu\n",
         mode, flags, n_cb_launch, n_kernel, n_api, n_ext, n_ext_match, n_other);
  if (late) {
    double with = launch_n((launch_ex_t)pfn, fn, st, d, 20000, strcmp(mode, "kernel-only") != 0);
    CK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    printf("launch cost with CUPTI (%s%s): %.3f us\n", mode, nocb ? ", no callbacks" : "", with);
  }
  return 0;
}
