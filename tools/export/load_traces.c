/* See load_traces.h. */
#include "export/load_traces.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cache.h"
#include "cli/cli.h"
#include "analysis/analyses.h"

static void progress(uint64_t done, uint64_t total) {
  lens_cli_progress("loading traces (MiB)", (long)(done >> 20), (long)(total >> 20));
}

int lens_cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* Through lens_cli_error: a spooled input ("-", x.lens.gz) is named as the user named it. */
void lens_cli_load_notes(const char *cmd, const struct lens_model *m) {
  for (size_t i = 0; i < m->n_same_traces; i++)
    lens_cli_error(cmd, "note: %s is %s %s: read once", m->same_traces[i].path,
                   m->same_traces[i].same_file ? "the same file as" : "a copy of the trace in", m->same_traces[i].same_as);
  /* A cut file is still read up to its last whole chunk (a killed job's
   * trace is exactly that): say so once per file, and go on. */
  for (size_t i = 0; i < m->n_files; i++) {
    /* One line per file: damage (chunks skipped inside it) with its cut, if any. */
    const struct lens_file *fl = &m->files[i];
    if (fl->damaged_bytes)
      lens_cli_error(cmd, "warning: %s is damaged: %llu chunks (%llu bytes) fail their CRC and were skipped%s%s%s",
                     fl->path, (unsigned long long)fl->damaged_chunks, (unsigned long long)fl->damaged_bytes,
                     fl->truncated_bytes ? "; it is also cut short (" : "", fl->truncated_bytes ? fl->truncation : "",
                     fl->truncated_bytes ? ")" : "");
    else if (m->files[i].truncated_bytes)
      lens_cli_error(cmd, "warning: %s is cut short (%s); read up to its last whole chunk, %llu bytes after it",
                     m->files[i].path, m->files[i].truncation, (unsigned long long)m->files[i].truncated_bytes);
    else if (!m->files[i].n_sessions)
      lens_cli_error(cmd, "warning: %s holds a header and nothing else: its process wrote no session "
                          "(killed right after opening it, or its disk was full)", m->files[i].path);
  }
}

/* The GPU memo of these files in the cache (cache.h, gpu_memo.c): for a
 * window, the whole run's clock maps and sequence flags without reading
 * every KernelCh. Not with CUPTI buffers given (their join reads every
 * launch). */
static int gpu_memo_key(const char *const *paths, size_t n, const struct lens_load_opts *o, struct lens_cache_key *k) {
  if (!lens_analyze_gpu || !lens_analyze_gpu_memo || !lens_gpu_memo_save || (o && o->n_cupti_files)) return -1;
  return lens_cache_key_make("gpu", paths, n, k);
}

/* After a full GPU analysis of these files: its memo stored (again, when
 * one was there: a few KiB a host group, and its age renewed). A window
 * that used a memo analysed only some KernelCh and stores none. */
static void gpu_memo_store(const struct lens_model *m, const struct lens_cache_key *k) {
  void *blob;
  size_t len;
  if (lens_gpu_memo_save(m, &blob, &len) == 0) lens_cache_put(k, blob, len);
  free(blob);
}

struct lens_model *lens_cli_load(const char *cmd, const char *const *paths, size_t n, const struct lens_load_opts *o) {
  char err[512];
  int quiet = o && o->no_progress;
  struct lens_model *m = NULL;
  struct lens_load_window *w;
  struct lens_cache_key key = {0};
  int keyed = gpu_memo_key(paths, n, o, &key) == 0, memo_used = 0;
  void *memo = NULL;
  size_t memo_len = 0;
  if (o && o->window && keyed) memo = lens_cache_get(&key, &memo_len);
again:
  w = o ? o->window : NULL;
  if (w) {
    /* The GPU analysis runs before the selection and fits each GPU's clock
     * from all its KernelCh: it reads them as the scan's columns
     * (kch_columns, m->kch_cols), the load building only the window's;
     * where it cannot (CUPTI evidence, a crafted file) they are built whole,
     * each with its parent Coll/P2p (its launch) and no further ancestor,
     * when the traces hold any GPU evidence or CUPTI buffers are given. Its
     * CUPTI join reaches kernels from every KernelLaunch (whose graph mark comes from its
     * ancestors) through the Coll/P2p of the launch: those too, with every
     * ancestor, when there is CUPTI evidence (docs/scale.md, "A time
     * window"). Without it no launch is joined, and a launch that pushed no
     * id is counted nowhere. */
    w->keep_types = w->keep_types_if = w->keep_types_cupti = w->keep_types_parent = 0;
    w->cupti_given = o->n_cupti_files > 0;
    w->kch_columns = lens_analyze_gpu != NULL; /* the fits read every KernelCh's columns, not its event */
    w->kch_no_light = memo != NULL;           /* the maps and sequence flags of the rest from the memo */
    if (lens_analyze_gpu) {
      w->keep_types_parent = 1u << LENS_T_KERNEL_CH;
      w->keep_types_cupti = 1u << LENS_T_KERNEL_LAUNCH | 1u << LENS_T_COLL | 1u << LENS_T_P2P;
      w->keep_types_if = o->n_cupti_files ? 0 : 1u << LENS_T_KERNEL_CH | 1u << LENS_T_KERNEL_LAUNCH;
    }
    m = lens_model_load_window(paths, n, o->load_flags, w, err, sizeof err, quiet ? NULL : progress);
    if (m && m->n_sched && lens_analyze_starvation) { /* it reads every event: the whole trace after all */
      lens_model_free(m);
      m = NULL;
      free(memo);
      memo = NULL;
    } else {
      w = NULL; /* done (or failed: err says why) */
    }
  }
  if (!o || !o->window || w) {
    m = lens_model_load_ex(paths, n, o ? o->load_flags : 0, err, sizeof err, quiet ? NULL : progress);
    if (m && w) w->events_total = m->n_events + m->n_pending_steps + m->folded_steps; /* a folded step is an event */
  }
  if (!quiet) lens_cli_progress(NULL, -1, 0);
  if (!m) {
    lens_cli_error(cmd, "%s", err);
    free(memo);
    lens_cache_key_free(&key);
    return NULL;
  }
  if (memo) { /* (never with CUPTI buffers given: gpu_memo_key) */
    int rc = lens_analyze_gpu_memo(m, memo, memo_len, err, sizeof err);
    free(memo);
    memo = NULL;
    if (rc > 0) { /* not this model's memo: loaded again, every KernelCh read for a full analysis */
      lens_model_free(m);
      m = NULL;
      goto again;
    }
    memo_used = 1;
    if (rc < 0) lens_cli_error(cmd, "warning: GPU analysis skipped: %s", err);
  }
  if (!(o && o->no_notes)) lens_cli_load_notes(cmd, m);
  for (size_t i = 0; o && i < o->n_cupti_files; i++) {
    if (!lens_model_add_cupti_file) {
      lens_cli_error(cmd, "--cupti-buffer needs the GPU analysis, which is not built in");
      lens_model_free(m);
      lens_cache_key_free(&key);
      return NULL;
    }
    if (lens_model_add_cupti_file(m, o->cupti_files[i], err, sizeof err)) {
      lens_cli_error(cmd, "%s", err);
      lens_model_free(m);
      lens_cache_key_free(&key);
      return NULL;
    }
  }
  if (!memo_used && lens_analyze_gpu) {
    if (lens_analyze_gpu(m, err, sizeof err)) lens_cli_error(cmd, "warning: GPU analysis skipped: %s", err);
    else if (keyed) gpu_memo_store(m, &key);
  }
  lens_cache_key_free(&key);
  free(m->kch_cols); /* read: the selection renumbers the events they name */
  m->kch_cols = NULL, m->n_kch_cols = 0;
  if (lens_analyze_starvation && m->n_sched) lens_analyze_starvation(m, o ? o->min_wait_ns : 0);
  return m;
}
