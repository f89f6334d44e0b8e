/* Loading traces for a subcommand: progress on a terminal, analyses run when
 * linked (GPU first, then starvation), one-line errors. Used by export,
 * summary and demo. */
#ifndef NCCL_LENS_LOAD_TRACES_H
#define NCCL_LENS_LOAD_TRACES_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"

struct lens_load_opts {
  const char *const *cupti_files; size_t n_cupti_files; /* raw CUPTI buffers saved on a GPU machine */
  uint64_t min_wait_ns;                                 /* starvation: ignore shorter waits */
  int no_progress;                                      /* no progress line (several loads run at once) */
  uint32_t load_flags;                                  /* LENS_LOAD_* (lensread.h) */
  /* A time window built at load (lens_model_load_window), or NULL: the
   * selection must then still be applied. Its keep_types are set here: what
   * the GPU analysis reads. Scheduler samples (the starvation analysis
   * reads every event) make it a full load. events_total is set. */
  struct lens_load_window *window;
  int no_notes;                                         /* the caller says lens_cli_load_notes itself */
};

/* NULL after printing one error line ("nccl-lens <cmd>: ..."). Analysis
 * failures are warnings (one line each); the model is still returned. */
/* One note per input read once (the same trace given twice), one warning per
 * file cut short or holding only its header: what every command that loads
 * traces says on stderr before its output. */
void lens_cli_load_notes(const char *cmd, const struct lens_model *m);
struct lens_model *lens_cli_load(const char *cmd, const char *const *paths, size_t n, const struct lens_load_opts *o);

/* Parses a non-negative integer option value; -1 if invalid. */
int lens_cli_parse_u64(const char *s, uint64_t *out);

#endif
