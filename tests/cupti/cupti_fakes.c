/* See cupti_fakes.h. */
#include "cupti_fakes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "hooks.h"
#include "log.h"

int lens_cupti_active;
int lens_nvtx_active;
int fake_log_lines;
char fake_last_log[1024];
int fake_chunks;
uint32_t fake_chunk_len;
uint8_t fake_chunk[256];
uint64_t fake_cupti_drops;

const struct lens_config *lens_config_get(void) {
  static struct lens_config cfg;
  const char *v = getenv("NCCL_LENS_CUPTI");
  cfg.cupti = !v || !strcmp(v, "auto") ? LENS_CUPTI_AUTO : !strcmp(v, "on") || !strcmp(v, "1") ? LENS_CUPTI_ON
                                                                                                 : LENS_CUPTI_OFF;
  return &cfg;
}

static void keep(const char *fmt, va_list ap) {
  vsnprintf(fake_last_log, sizeof(fake_last_log), fmt, ap);
  if (getenv("FAKE_LOG_VERBOSE")) fprintf(stderr, "log: %s\n", fake_last_log);
}

void lens_log(int level, const char *fmt, ...) {
  (void)level;
  va_list ap;
  va_start(ap, fmt);
  keep(fmt, ap);
  va_end(ap);
  fake_log_lines++;
}

void lens_log_once(int *once, int level, const char *fmt, ...) {
  (void)level;
  if (*once) return;
  *once = 1;
  va_list ap;
  va_start(ap, fmt);
  keep(fmt, ap);
  va_end(ap);
  fake_log_lines++;
}

int lens_writer_submit(uint16_t chunk_type, void *payload, uint32_t payload_len) {
  if (chunk_type == LENS_CHUNK_CUPTI) {
    fake_chunks++;
    fake_chunk_len = payload_len;
    memcpy(fake_chunk, payload, payload_len < sizeof(fake_chunk) ? payload_len : sizeof(fake_chunk));
  }
  free(payload);
  return 0;
}

void lens_drops_add_cupti(uint64_t n) { fake_cupti_drops += n; }

const struct lens_comm_info *lens_comm_lookup(uint64_t context) {
  (void)context;
  return NULL;
}

uint64_t lens_now_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
