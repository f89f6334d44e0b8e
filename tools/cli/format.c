/* Formatting shared by every view (format.h). */
#include "cli/format.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lens_fmt_ns(double ns, char *buf, size_t len) {
  if (ns < 1e3) snprintf(buf, len, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, len, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, len, "%.2f ms", ns / 1e6);
  else snprintf(buf, len, "%.2f s", ns / 1e9);
}

/* The decimal exponent of g rounded to sig significant digits (9.996 at 3
 * digits is 10.0: exponent 1, not 0), from printf's own rounding. */
static int exp10_rounded(double g, int sig) {
  char e[48];
  snprintf(e, sizeof e, "%.*e", sig - 1, g);
  const char *x = strchr(e, 'e');
  return x ? atoi(x + 1) : 0;
}

const char *lens_fmt_gbps(double gbps, char *buf, size_t len) {
  if (!(gbps > 0) || !isfinite(gbps)) {
    snprintf(buf, len, "-");
    return buf;
  }
  int x = exp10_rounded(gbps, 3);
  if (x >= 3) {
    snprintf(buf, len, "%.0f", round(gbps)); /* half away from zero: 1234.5 -> 1235 */
    return buf;
  }
  int sig = 3;
  if (x < -3) { /* below 0.001: two digits keep it within LENS_FMT_GBPS_WIDTH */
    sig = 2;
    x = exp10_rounded(gbps, 2);
    if (x < -4) {
      snprintf(buf, len, "<0.0001");
      return buf;
    }
  }
  snprintf(buf, len, "%.*f", sig - 1 - x, gbps);
  return buf;
}

const char *lens_fmt_comm_id(uint64_t comm_id, char *buf) {
  snprintf(buf, LENS_COMM_ID_LEN, "0x%016" PRIx64, comm_id);
  return buf;
}

void lens_json_comm_id(FILE *f, uint64_t comm_id) { fprintf(f, "\"0x%016" PRIx64 "\"", comm_id); }

const char *lens_fmt_comm_name(const char *name) { return name && *name ? name : LENS_COMM_UNNAMED; }

const char *lens_fmt_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len) {
  if (name && *name) return name;
  snprintf(buf, len, "comm 0x%016" PRIx64, comm_id);
  return buf;
}

/* JSON key -> text words, for every cause a view names (job's straggler
 * causes, hang's and net's verdicts as they come). docs/cli.md lists them. */
static const struct {
  const char *key, *words;
} causes[] = {
    {"none", "none"},
    {"late_app_call", "late app call"},
    {"slow_enqueue", "slow enqueue"},
    {"slow_launch", "slow launch"},
    {"gpu_busy", "busy GPU"},
    {"starved_proxy", "starved proxy"},
    {"slow_link", "slow link"},
    {"unknown", "late or busy GPU"},
};

const char *lens_fmt_cause_words(const char *key) {
  for (size_t i = 0; key && i < sizeof causes / sizeof *causes; i++)
    if (!strcmp(causes[i].key, key)) return causes[i].words;
  return key;
}

int lens_parse_dump_note(const char *text, struct lens_dump_note *d) {
  static const char prefix[] = "nccl-lens recorder dump: ";
  memset(d, 0, sizeof *d);
  if (!text || strncmp(text, prefix, sizeof prefix - 1)) return 0;
  const char *why = text + sizeof prefix - 1, *store = strstr(why, " (store: ");
  size_t n = store ? (size_t)(store - why) : strlen(why);
  if (n >= sizeof d->why) n = sizeof d->why - 1;
  memcpy(d->why, why, n);
  d->why[n] = 0;
  const char *ev = store ? strstr(store, " chunks, ") : NULL;
  unsigned long long c = 0, r = 0;
  if (ev && sscanf(ev, " chunks, %llu evicted with %llu event records)", &c, &r) == 2) {
    d->evicted_chunks = c;
    d->evicted_records = r;
    d->have_counts = 1;
  }
  return 1;
}
