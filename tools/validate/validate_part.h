/* validate read host group by host group (tools/cli/passes.h): each group's
 * model, analysed by the driver's load (GPU clock maps, CUPTI join, flags),
 * is mapped to a partial holding the counts validate prints (files' events,
 * CUPTI join figures, KernelCh totals and flags, each clock map's drift
 * measured or not and its exact offset) and the launches and channels it may
 * list, written to a spool file (at most --limit of each a group: no more
 * can be listed of the whole job). The partials merge in input order into
 * what lens_validate_print writes. */
#ifndef NCCL_LENS_VALIDATE_PART_H
#define NCCL_LENS_VALIDATE_PART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/spool.h"
#include "reader/lensread.h"

#define LENS_VALIDATE_N_FLAGS 9 /* LENS_ACC_* bits validate names (validate_print.c) */
/* A KernelCh with any of them is flagged: --json lists it whatever its size
 * (lens_fmt_json_ok_listed); a launch is flagged by its own
 * no_kernel_record or by a flagged channel. */
#define LENS_VALIDATE_FLAGGED ((1u << LENS_VALIDATE_N_FLAGS) - 1)

/* One listed launch, as written in the spool; its channels follow it. */
struct lens_vl_launch {
  uint64_t id, ext_id;
  int32_t proc;            /* the group's: add its base */
  int32_t kernel_index;    /* the group's model->kernels, -1 none */
  uint32_t corr, dev, stream, grid_x, graph_id;
  uint64_t k_start, k_end;
  uint32_t n_ch;
  uint8_t no_kernel_record;
  uint8_t flagged;         /* no_kernel_record, or a channel with a LENS_VALIDATE_FLAGGED flag */
};

/* One listed KernelCh. */
struct lens_vl_channel {
  uint64_t id, start_gpu, stop_gpu, start_mono, stop_mono, span_base;
  int64_t notice_lag;
  int32_t channel;
  uint32_t flags;
  uint8_t op_type, time_source, overrun, checked;
  uint8_t lag_known;       /* notice_lag measured (0 and below 0 too): lens_gpu_notice_lag_known */
  char inside[8];          /* "yes", "no", "unknown" */
  char func[96];           /* "AllReduce" or "AllReduce, backward" */
};

/* The CUPTI join figures of lens_gpu_report, summed over groups. */
struct lens_vl_cupti {
  int have_report, cupti_available;
  char note[256];          /* the first group's note */
  char graph_join[16];     /* the first group's that is not "none" */
  size_t blobs, blob_errors, records, kernel_records, ext_records, api_records, kernels_joined, kernels_graph,
      kernels_graph_joined, foreign_ext_ids, launches_with_ext, launches_no_kernel, kch_cupti_checked,
      kernels_contradict;
};

struct lens_validate_part {
  char spool[32];          /* its listed launches, then (from orphans_at) its listed channels without a launch */
  uint64_t orphans_at;
  size_t launches, launches_listed;      /* all; written */
  size_t orphans, orphans_listed;        /* channels without a launch: all; written */
  size_t launches_ok, orphans_ok;        /* of all, those not flagged */
  size_t kch, mapped, bad, unmapped;
  size_t flags[LENS_VALIDATE_N_FLAGS];
  struct lens_vl_cupti cupti;
  uint64_t *file_events; size_t n_files; /* per file of the group */
  uint8_t *map_fixed; int64_t *map_offset; size_t n_maps; /* per clock map: drift not measured; host - gpu at gpu_from */
};

struct lens_validate_map_ctx {
  struct lens_spool_dir *spool;
  long limit;              /* launches (and orphan channels) a group lists, -1 all */
  int ok_capped;           /* --json's default: every flagged launch and channel, the ok ones while
                            * lens_fmt_json_ok_listed says (a group writes no more than the job lists) */
};

void *lens_validate_map(struct lens_model *m, void *ctx);
void lens_validate_part_free(void *part);

/* The merged view: totals, per file and per clock map, over every group. */
struct lens_validate_job {
  struct lens_validate_part sum;   /* counts summed; file_events and map_* indexed like skel's tables */
  const struct lens_validate_part *const *parts; size_t n_parts;
  const struct lens_spool_dir *spool;
  const struct lens_model_base *bases;
};

/* 0, or -1 out of memory. */
int lens_validate_merge(const struct lens_model *skel, const struct lens_validate_part *const *parts, size_t n,
                        const struct lens_model_base *bases, const struct lens_spool_dir *spool,
                        struct lens_validate_job *out);
void lens_validate_job_free(struct lens_validate_job *j);

#endif
