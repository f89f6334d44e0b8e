/* NCCL_LENS_* environment, parsed once at the first init. Every bad value
 * is logged once, naming the variable and the default used instead. */
#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_parse.h"
#include "lens_pack_chunk.h"
#include "log.h"
#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/registry.h"

static struct lens_config g_cfg;
static int g_loaded;

static void defaults(struct lens_config *c) {
  memset(c, 0, sizeof *c);
  c->disable = 0;
  strcpy(c->out_dir, ".");
  c->event_mask = LENS_EVENT_MASK_DEFAULT;
  c->buffer_bytes = 4u << 20;
  c->max_threads = 128;
  c->writer_period_us = 10000;
  c->use_tsc = 1;
  c->nvtx = 1;
  c->cupti = LENS_CUPTI_OFF; /* CUPTI adds ~10 us to each NCCL launch on an H100: opt in (docs/gpu-check.md) */
  c->registry_dir[0] = 0; /* per user (lens_registry_default_dir), resolved by the writer */
  c->flush_timeout_ms = 1000;
  c->recorder = 0;
  c->recorder_bytes = 64u << 20;
  c->compress = LENS_COMPRESS_DEFAULT;
  c->zstd_level = LENS_ZSTD_LEVEL_DEFAULT;
  c->hang_timeout_s = 60;
  c->live = 1;
  c->live_period_ms = 500;
  c->dump_interval_s = 60;
}

static const struct {
  const char *name;
  int bits;
} k_mask_names[] = {
    {"group", LENS_EV_GROUP},         {"coll", LENS_EV_COLL},
    {"p2p", LENS_EV_P2P},             {"proxyop", LENS_EV_PROXY_OP},
    {"proxystep", LENS_EV_PROXY_STEP}, {"proxyctrl", LENS_EV_PROXY_CTRL},
    {"kernelch", LENS_EV_KERNEL_CH},  {"netplugin", LENS_EV_NET_PLUGIN},
    {"net", LENS_EV_NET_PLUGIN},      {"groupapi", LENS_EV_GROUP_API},
    {"collapi", LENS_EV_COLL_API},    {"p2papi", LENS_EV_P2P_API},
    {"kernellaunch", LENS_EV_KERNEL_LAUNCH}, {"cecoll", LENS_EV_CE_COLL},
    {"cesync", LENS_EV_CE_SYNC},      {"cebatch", LENS_EV_CE_BATCH},
    {"kernelphase", LENS_EV_KERNEL_PHASE | LENS_EV_KERNEL_CH}, /* NCCL needs KernelCh under it */
    {"all", LENS_EV_ALL_V6},          {"default", LENS_EVENT_MASK_DEFAULT},
    {"none", 0},
};

/* Decimal, or hex with 0x; nothing else may follow. */
static int parse_uint(const char *s, uint64_t *out) {
  while (isspace((unsigned char)*s)) s++;
  if (!*s || *s == '-' || *s == '+') return -1;
  int base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
    if (!isxdigit((unsigned char)*s)) return -1;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || end == s) return -1;
  while (isspace((unsigned char)*end)) end++;
  if (*end) return -1;
  *out = v;
  return 0;
}

int lens_parse_mask(const char *s, int *out) {
  uint64_t v;
  if (isdigit((unsigned char)s[strspn(s, " \t")])) {
    if (parse_uint(s, &v) != 0 || v > LENS_EV_ALL_V7) return -1;
    *out = (int)v;
    return 0;
  }
  int mask = 0, any = 0;
  char buf[256];
  if (strlen(s) >= sizeof buf) return -1;
  strcpy(buf, s);
  for (char *save = NULL, *tok = strtok_r(buf, ",|+ \t", &save); tok; tok = strtok_r(NULL, ",|+ \t", &save)) {
    int found = 0;
    for (size_t i = 0; i < sizeof k_mask_names / sizeof k_mask_names[0]; i++)
      if (strcasecmp(tok, k_mask_names[i].name) == 0) {
        mask |= k_mask_names[i].bits;
        found = 1;
        break;
      }
    if (!found) return -1;
    any = 1;
  }
  if (!any) return -1;
  *out = mask;
  return 0;
}

/* "4M", "65536", "512k", "1G" (binary units, optional trailing B/iB). */
int lens_parse_size(const char *s, uint64_t *out) {
  char *end;
  while (isspace((unsigned char)*s)) s++;
  if (!isdigit((unsigned char)*s)) return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  uint64_t mul = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K': mul = 1ull << 10; end++; break;
  case 'M': mul = 1ull << 20; end++; break;
  case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'b' || *end == 'B') end++;
  if (*end) return -1;
  if (v > UINT64_MAX / mul) return -1;
  *out = v * mul;
  return 0;
}

static void bad(const char *var, const char *val, const char *dflt, int *nbad) {
  char line[512];
  snprintf(line, sizeof line, "nccl-lens: bad value %s=\"%s\"; using the default %s", var, val, dflt);
  lens_log(LENS_LOG_WARN, "%s", line);
  lens_log_mirror(LENS_LOG_WARN, line); /* the trace says it too: summary's "plugin messages" */
  (*nbad)++;
}

static void parse_bool(const char *var, int *dst, int dflt, int *nbad) {
  const char *v = getenv(var);
  if (!v) return;
  if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !strcasecmp(v, "no"))
    *dst = 0;
  else if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcasecmp(v, "yes"))
    *dst = 1;
  else
    bad(var, v, dflt ? "1" : "0", nbad);
}

/* Decimal with an optional '-' (no '+', no hex), spaces around it as
 * parse_uint allows. */
static int parse_int(const char *s, int64_t *out) {
  while (isspace((unsigned char)*s)) s++;
  int neg = *s == '-';
  uint64_t mag;
  if (!isdigit((unsigned char)s[neg]) || (s[neg] == '0' && (s[neg + 1] == 'x' || s[neg + 1] == 'X')) ||
      parse_uint(s + neg, &mag) != 0 || mag > (uint64_t)INT64_MAX)
    return -1;
  *out = neg ? -(int64_t)mag : (int64_t)mag;
  return 0;
}

static void parse_int_range(const char *var, int *dst, int lo, int hi, const char *dflt, int *nbad) {
  const char *v = getenv(var);
  int64_t x;
  if (!v) return;
  if (parse_int(v, &x) != 0 || x < lo || x > hi)
    bad(var, v, dflt, nbad);
  else
    *dst = (int)x;
}

static void parse_u32_range(const char *var, uint32_t *dst, uint64_t lo, uint64_t hi, const char *dflt, int *nbad) {
  const char *v = getenv(var);
  uint64_t x;
  if (!v) return;
  if (parse_uint(v, &x) != 0 || x < lo || x > hi)
    bad(var, v, dflt, nbad);
  else
    *dst = (uint32_t)x;
}

static void parse_dir(const char *var, char *dst, size_t cap, const char *dflt, int *nbad) {
  const char *v = getenv(var);
  if (!v) return;
  if (!*v || strlen(v) >= cap)
    bad(var, v, dflt, nbad);
  else
    strcpy(dst, v);
}

static uint64_t round_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int lens_config_parse(struct lens_config *c) {
  int nbad = 0;
  const char *v;
  defaults(c);
  parse_bool("NCCL_LENS_DISABLE", &c->disable, 0, &nbad);
  parse_dir("NCCL_LENS_OUTPUT_DIR", c->out_dir, sizeof c->out_dir, "\".\"", &nbad);
  if ((v = getenv("NCCL_LENS_EVENT_MASK")) != NULL && lens_parse_mask(v, &c->event_mask) != 0)
    bad("NCCL_LENS_EVENT_MASK", v, "\"default\" (0x7f7e)", &nbad);
  if ((v = getenv("NCCL_LENS_BUFFER_SIZE")) != NULL) {
    uint64_t x;
    if (lens_parse_size(v, &x) != 0 || x < (64u << 10) || x > (1ull << 30))
      bad("NCCL_LENS_BUFFER_SIZE", v, "4M (allowed 64K..1G)", &nbad);
    else
      c->buffer_bytes = (uint32_t)round_pow2(x); /* rings index with a mask */
  }
  parse_u32_range("NCCL_LENS_MAX_THREADS", &c->max_threads, 1, 4096, "128 (allowed 1..4096)", &nbad);
  parse_u32_range("NCCL_LENS_WRITER_PERIOD_US", &c->writer_period_us, 100, 10000000,
                  "10000 (allowed 100..10000000)", &nbad);
  parse_bool("NCCL_LENS_TSC", &c->use_tsc, 1, &nbad);
  parse_bool("NCCL_LENS_NVTX", &c->nvtx, 1, &nbad);
  if ((v = getenv("NCCL_LENS_CUPTI")) != NULL) {
    if (!strcasecmp(v, "auto"))
      c->cupti = LENS_CUPTI_AUTO;
    else if (!strcasecmp(v, "on") || !strcmp(v, "1"))
      c->cupti = LENS_CUPTI_ON;
    else if (!strcasecmp(v, "off") || !strcmp(v, "0"))
      c->cupti = LENS_CUPTI_OFF;
    else
      bad("NCCL_LENS_CUPTI", v, "off", &nbad);
  }
  if ((v = getenv("NCCL_LENS_REGISTRY_DIR")) != NULL && *v) /* empty: the per-user default */
    parse_dir("NCCL_LENS_REGISTRY_DIR", c->registry_dir, sizeof c->registry_dir,
              "(per user: $XDG_RUNTIME_DIR/nccl-lens, else /tmp/nccl-lens-<uid>)", &nbad);
  parse_bool("NCCL_LENS_LIVE", &c->live, 1, &nbad);
  parse_u32_range("NCCL_LENS_LIVE_PERIOD_MS", &c->live_period_ms, 10, 60000, "500 (allowed 10..60000)", &nbad);
  parse_u32_range("NCCL_LENS_DUMP_INTERVAL", &c->dump_interval_s, 0, 86400, "60 (allowed 0..86400 s)", &nbad);
  parse_u32_range("NCCL_LENS_FLUSH_TIMEOUT_MS", &c->flush_timeout_ms, 0, 600000, "1000 (allowed 0..600000)", &nbad);
  if ((v = getenv("NCCL_LENS_MODE")) != NULL) {
    if (!strcasecmp(v, "recorder"))
      c->recorder = 1;
    else if (strcasecmp(v, "trace"))
      bad("NCCL_LENS_MODE", v, "trace", &nbad);
  }
  if ((v = getenv("NCCL_LENS_RECORDER_SIZE")) != NULL) {
    uint64_t x;
    if (lens_parse_size(v, &x) != 0 || x < (1u << 20) || x > (64ull << 30))
      bad("NCCL_LENS_RECORDER_SIZE", v, "64M (allowed 1M..64G)", &nbad);
    else
      c->recorder_bytes = x;
  }
  if ((v = getenv("NCCL_LENS_COMPRESS")) != NULL) {
    if (!strcasecmp(v, "none"))
      c->compress = LENS_COMPRESS_NONE;
    else if (!strcasecmp(v, "packed"))
      c->compress = LENS_COMPRESS_PACKED;
    else if (!strcasecmp(v, "zstd"))
      c->compress = LENS_COMPRESS_ZSTD;
    else
      bad("NCCL_LENS_COMPRESS", v, "zstd (allowed none, packed, zstd)", &nbad);
  }
  parse_int_range("NCCL_LENS_ZSTD_LEVEL", &c->zstd_level, LENS_ZSTD_LEVEL_MIN, LENS_ZSTD_LEVEL_MAX,
                  "-1 (allowed -50..19)", &nbad);
  parse_u32_range("NCCL_LENS_HANG_TIMEOUT", &c->hang_timeout_s, 1, 86400, "60 (allowed 1..86400 s)", &nbad);
  parse_u32_range("NCCL_LENS_SLOW_MS", &c->slow_ms, 0, 3600000, "0 = off (allowed 0..3600000 ms)", &nbad);
  return nbad;
}

void lens_config_load_once(void) {
  if (g_loaded) return;
  lens_config_parse(&g_cfg);
  __atomic_store_n(&g_loaded, 1, __ATOMIC_RELEASE);
}

const struct lens_config *lens_config_get(void) {
  static struct lens_config dflt;
  static int dflt_ok;
  if (__atomic_load_n(&g_loaded, __ATOMIC_ACQUIRE)) return &g_cfg;
  if (!dflt_ok) { /* before the first init: the defaults, never NULL */
    defaults(&dflt);
    dflt_ok = 1;
  }
  return &dflt;
}
