/* Stand-ins for the plugin core (see nvtx_fakes.c) and ring-form record
 * builders for driving the NVTX emitter's hooks directly. */
#ifndef NCCL_LENS_TESTS_NVTX_FAKES_H
#define NCCL_LENS_TESTS_NVTX_FAKES_H

#include <stddef.h>
#include <stdint.h>

#include "hooks.h"

#define FAKE_MAX_COMMS 16
#define FAKE_MAX_SLOTS 64

extern int fake_log_lines;

const struct lens_comm_info *fake_comm_add(uint64_t context, int rank, int nranks, const char *name);

struct fake_rec {
  struct lens_rec_start s;
  uint8_t payload[128];
};
/* A fresh event id of this type on this thread slot. */
uint64_t fake_id(unsigned type, unsigned slot);
const struct lens_rec_start *fake_rec(struct fake_rec *r, unsigned type, uint64_t id, uint64_t parent,
                                      uint64_t context, int rank, const void *payload, size_t payload_len);

#endif
