/* NCCL_LENS_* configuration, parsed once at the first init. A bad value is
 * logged once and replaced by the default (see README "Configuration"). */
#ifndef NCCL_LENS_PLUGIN_CONFIG_H
#define NCCL_LENS_PLUGIN_CONFIG_H

#include <stdint.h>

/* NCCL_LENS_COMPRESS: how the writer stores event records (docs/configuration.md). */
enum lens_compress { LENS_COMPRESS_NONE = 0, LENS_COMPRESS_PACKED = 1, LENS_COMPRESS_ZSTD = 2 };
#define LENS_COMPRESS_DEFAULT LENS_COMPRESS_ZSTD

enum lens_cupti_mode { LENS_CUPTI_OFF = 0, LENS_CUPTI_AUTO = 1, LENS_CUPTI_ON = 2 };

struct lens_config {
  int disable;                /* NCCL_LENS_DISABLE (0) */
  char out_dir[512];          /* NCCL_LENS_OUTPUT_DIR (".") */
  int event_mask;             /* NCCL_LENS_EVENT_MASK (names or number) */
  uint32_t buffer_bytes;      /* NCCL_LENS_BUFFER_SIZE per thread (e.g. "4M") */
  uint32_t max_threads;       /* NCCL_LENS_MAX_THREADS */
  uint32_t writer_period_us;  /* NCCL_LENS_WRITER_PERIOD_US */
  int use_tsc;                /* NCCL_LENS_TSC (1 = use TSC when invariant) */
  int nvtx;                   /* NCCL_LENS_NVTX (1) */
  enum lens_cupti_mode cupti; /* NCCL_LENS_CUPTI (off) */
  char registry_dir[512];     /* NCCL_LENS_REGISTRY_DIR ("" = per user: $XDG_RUNTIME_DIR/nccl-lens, else /tmp/nccl-lens-<uid>) */
  uint32_t flush_timeout_ms;  /* NCCL_LENS_FLUSH_TIMEOUT_MS (1000): longest finalize/exit waits for the writer */
  int recorder;               /* NCCL_LENS_MODE (trace): recorder = keep the last events in memory, dump on demand */
  uint64_t recorder_bytes;    /* NCCL_LENS_RECORDER_SIZE (64M): the recorder's bound */
  uint32_t hang_timeout_s;    /* NCCL_LENS_HANG_TIMEOUT (60): no progress with work in flight this long = a hang */
  uint32_t slow_ms;           /* NCCL_LENS_SLOW_MS (0 = off): recorder dump when a kernel channel's GPU span exceeds it */
  int compress;               /* NCCL_LENS_COMPRESS (zstd): enum lens_compress */
  int zstd_level;             /* NCCL_LENS_ZSTD_LEVEL (-1, LENS_ZSTD_LEVEL_DEFAULT) */
  int live;                   /* NCCL_LENS_LIVE (1): publish the live page for the agent */
  uint32_t live_period_ms;    /* NCCL_LENS_LIVE_PERIOD_MS (500, 10..60000) */
  uint32_t dump_interval_s;   /* NCCL_LENS_DUMP_INTERVAL (60): at most one requested recorder dump this often */
};

/* Valid after the first init; never NULL. */
const struct lens_config *lens_config_get(void);

#endif
