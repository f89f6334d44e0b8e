/* Per-model storage of the GPU analysis (private to tools/analysis/gpu/gpu_*.c). */
#ifndef NCCL_LENS_GPU_STATE_H
#define NCCL_LENS_GPU_STATE_H

#include "gpu_analysis.h"
#include "gpu_index.h"

struct lens_gpu_state {
  const struct lens_model *m;
  /* The model this state belongs to: a freed model's address can come back
   * for a new one (when lens_model_free did not call lens_gpu_release). */
  const void *fp_priv, *fp_events;
  struct lens_gpu_report report;
  struct lens_cupti_blob *extra; size_t n_extra; /* --cupti-buffer files; data owned */
  struct lens_gpu_index launches; /* KernelLaunch: (proc, event id) -> event */
  struct lens_gpu_index ops;      /* Coll/P2p: (proc, launch_id) -> event */
  struct lens_gpu_state *next;
};

#endif
