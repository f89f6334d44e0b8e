/* Logging through NCCL's logger; the line is formatted here so NCCL's
 * variadic logger only ever sees "%s". Never called on the hot path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hooks.h"
#include "log.h"
#include "log_internal.h"
#include "nccl-lens/trace_format.h"

static lens_nccl_logger_t g_logfn;

void lens_log_set_logger(lens_nccl_logger_t fn) { __atomic_store_n(&g_logfn, fn, __ATOMIC_RELEASE); }

static int debug_on(void) {
  const char *v = getenv("NCCL_LENS_DEBUG");
  return v && *v && strcmp(v, "0") != 0;
}

static void emit(int level, const char *line) {
  lens_nccl_logger_t fn = __atomic_load_n(&g_logfn, __ATOMIC_ACQUIRE);
  if (fn)
    fn(level, LENS_NCCL_SUBSYS_PROFILE, __FILE__, __LINE__, "%s", line);
  else if (debug_on())
    fprintf(stderr, "%s\n", line);
}

void lens_log(int level, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  emit(level, line);
}

void lens_log_once(int *once, int level, const char *fmt, ...) {
  if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  emit(level, line);
  /* Mirror into the trace: the reader shows what went wrong where it happened. */
  if (n < 0) return;
  uint32_t len = (uint32_t)strnlen(line, sizeof line);
  struct lens_note_hdr *h = malloc(sizeof *h + len);
  if (!h) return;
  h->at_mono_ns = lens_mono_ns();
  h->level = (uint32_t)level;
  h->len = len;
  memcpy(h + 1, line, len);
  lens_writer_submit(LENS_CHUNK_NOTE, h, (uint32_t)(sizeof *h + len));
}
