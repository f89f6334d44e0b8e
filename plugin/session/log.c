/* Logging through NCCL's logger; the line is formatted here so NCCL's
 * variadic logger only ever sees "%s". Never called on the hot path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "hooks.h"
#include "log.h"
#include "log_internal.h"
#include "nccl-lens/trace_format.h"

static lens_nccl_logger_t g_logfn;

void lens_log_set_logger(lens_nccl_logger_t fn) { __atomic_store_n(&g_logfn, fn, __ATOMIC_RELEASE); }

/* 1/on/true/yes turn it on; 0/off/false/no/empty leave it off; anything else
 * leaves it off and says so once (on stderr: there is no logger yet). */
static int debug_on(void) {
  static int warned;
  const char *v = getenv("NCCL_LENS_DEBUG");
  if (!v || !*v) return 0;
  static const char *const on[] = {"1", "on", "true", "yes"}, *const off[] = {"0", "off", "false", "no"};
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(v, on[i])) return 1;
    if (!strcasecmp(v, off[i])) return 0;
  }
  if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "nccl-lens: NCCL_LENS_DEBUG: '%.32s' is not one of 1/on/true/yes or 0/off/false/no; off\n", v);
  return 0;
}

/* A value quoted into a line (an environment variable, a path) must not
 * start a second, forged line: control characters become '?'. */
static void one_line(char *line) {
  for (unsigned char *c = (unsigned char *)line; *c; c++)
    if (*c < 0x20 || *c == 0x7f) *c = '?';
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
  one_line(line);
  emit(level, line);
}

void lens_log_once(int *once, int level, const char *fmt, ...) {
  if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  one_line(line);
  emit(level, line);
  if (n >= 0) lens_log_mirror(level, line);
}

/* Mirror into the trace: the reader shows what went wrong where it happened
 * (summary's and report's "plugin messages"). */
void lens_log_mirror(int level, const char *line) {
  uint32_t len = (uint32_t)strnlen(line, 511);
  struct lens_note_hdr *h = malloc(sizeof *h + len);
  if (!h) return;
  h->at_mono_ns = lens_mono_ns();
  h->level = (uint32_t)level;
  h->len = len;
  memcpy(h + 1, line, len);
  for (uint32_t i = 0; i < len; i++) /* one line, whatever the caller quoted (see one_line) */
    if ((unsigned char)((char *)(h + 1))[i] < 0x20 || ((char *)(h + 1))[i] == 0x7f) ((char *)(h + 1))[i] = '?';
  lens_writer_submit(LENS_CHUNK_NOTE, h, (uint32_t)(sizeof *h + len));
}
