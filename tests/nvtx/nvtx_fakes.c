/* Small stand-ins for the plugin core's services, so the NVTX emitter's
 * files can be tested alone: a comm table, a config from the environment
 * (as the core parses it: NCCL_LENS_NVTX, default 1), and loggers that count
 * lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hooks.h"
#include "log.h"
#include "nvtx_fakes.h"

int lens_nvtx_active;
int lens_cupti_active;
uint32_t lens_kernel_ch_role = LENS_ROLE_PROXY; /* the core sets it per NCCL version; tests may change it */
int fake_log_lines;

static struct lens_comm_info comms[FAKE_MAX_COMMS];
static int n_comms;

const struct lens_comm_info *fake_comm_add(uint64_t context, int rank, int nranks, const char *name) {
  struct lens_comm_info *c = &comms[n_comms++];
  memset(c, 0, sizeof(*c));
  c->context = context;
  c->comm_id = 0xC0FFEE00ull + context; /* distinct per comm, checked by tests */
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = 1;
  c->comm_index = (uint32_t)(n_comms - 1);
  c->name = name;
  return c;
}

const struct lens_comm_info *lens_comm_lookup(uint64_t context) {
  for (int i = 0; i < n_comms; i++)
    if (comms[i].context == context) return &comms[i];
  return NULL;
}

const struct lens_config *lens_config_get(void) {
  static struct lens_config cfg;
  static int done;
  if (!done) {
    const char *v = getenv("NCCL_LENS_NVTX");
    cfg.nvtx = v ? atoi(v) : 1;
    done = 1;
  }
  return &cfg;
}

void lens_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (getenv("FAKE_LOG_VERBOSE")) vfprintf(stderr, fmt, ap), fputc('\n', stderr);
  va_end(ap);
  __atomic_fetch_add(&fake_log_lines, 1, __ATOMIC_RELAXED);
}

void lens_log_once(int *once, int level, const char *fmt, ...) {
  if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED)) return;
  __atomic_fetch_add(&fake_log_lines, 1, __ATOMIC_RELAXED);
}

/* ---- record builders ---- */
static uint64_t seqs[FAKE_MAX_SLOTS];

uint64_t fake_id(unsigned type, unsigned slot) { return LENS_ID_MAKE(type, slot, ++seqs[slot]); }

const struct lens_rec_start *fake_rec(struct fake_rec *r, unsigned type, uint64_t id, uint64_t parent,
                                      uint64_t context, int rank, const void *payload, size_t payload_len) {
  memset(r, 0, sizeof(*r));
  r->s.h.size = (uint16_t)((sizeof(r->s) + payload_len + 7) & ~7ul);
  r->s.h.kind = LENS_REC_START;
  r->s.h.type = (uint8_t)type;
  r->s.id = id;
  r->s.parent = parent;
  r->s.context = context;
  r->s.rank = rank;
  if (payload_len) memcpy(r->payload, payload, payload_len);
  return &r->s;
}
