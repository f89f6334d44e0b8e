/* ncclProfiler_v6 (NCCL 2.29+): the v5 members plus the copy-engine events
 * (CeColl, CeSync, CeBatch). Same function signatures as v5. */
#include "adapter.h"
#include "record.h"

static void start_ce_coll(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_coll *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_CE_COLL,
                                              sizeof(struct lens_p_ce_coll), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_ce_coll *p = (void *)(r + 1);
  p->seq = d->seqNumber;
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->send_buff = (uint64_t)(uintptr_t)d->sendBuff;
  p->recv_buff = (uint64_t)(uintptr_t)d->recvBuff;
  p->count = d->count;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->sync_strategy = (lens_str_t)(uintptr_t)d->syncStrategy;
  p->stream = (uint64_t)(uintptr_t)d->stream;
  p->root = d->root;
  p->intra_batch_sync = d->intraBatchSync;
  p->batch_size = d->batchSize;
  p->num_batches = d->numBatches;
  p->ce_seq_num = d->ceSeqNum;
  p->reserved = 0;
  lens_start_end(&w, h);
}

static void start_ce_sync(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_sync *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_CE_SYNC,
                                              sizeof(struct lens_p_ce_sync), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_ce_sync *p = (void *)(r + 1);
  p->is_complete = d->isComplete;
  p->n_ranks = d->nRanks;
  lens_start_end(&w, h);
}

static void start_ce_batch(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_batch *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_CE_BATCH,
                                              sizeof(struct lens_p_ce_batch), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_ce_batch *p = (void *)(r + 1);
  p->total_bytes = d->totalBytes;
  p->num_ops = d->numOps;
  p->use_intra_sync = d->useIntraSync;
  lens_start_end(&w, h);
}

static lens_nccl_result_t v6_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(6, context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v6_start(void *context, void **eHandle, lens_nccl_descr_v6_t *d) {
  int t = lens_type_index(d->type, LENS_T_COUNT);
  uint64_t parent = (uint64_t)(uintptr_t)d->parentObj;
  switch (t) {
  case LENS_T_CE_COLL: start_ce_coll(context, eHandle, parent, d->rank, &d->ceColl); break;
  case LENS_T_CE_SYNC: start_ce_sync(context, eHandle, parent, d->rank, &d->ceCollSync); break;
  case LENS_T_CE_BATCH: start_ce_batch(context, eHandle, parent, d->rank, &d->ceCollBatch); break;
  default:
    if (t < 0 || lens_start_v5_member(context, eHandle, t, parent, d->rank, &d->groupApi) != 0)
      lens_start_unknown(eHandle, d->type);
  }
  return LENS_NCCL_SUCCESS;
}

static lens_nccl_result_t v6_record(void *h, lens_nccl_state_t s, lens_nccl_state_args_v6_t *a) {
  return lens_record_state(h, s, a);
}

__attribute__((visibility("default"))) lens_nccl_profiler_v6_t ncclProfiler_v6 = {
    .name = "lens",
    .init = v6_init,
    .startEvent = v6_start,
    .stopEvent = lens_stop_event,
    .recordEventState = v6_record,
    .finalize = lens_session_finalize,
};
