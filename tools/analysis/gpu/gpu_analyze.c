/* lens_analyze_gpu: the entry point, and the storage it keeps per model
 * (lensread's model has no slot for it, so a small list keyed by model). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses.h"
#include "file_read.h"
#include "gpu_kch.h"
#include "gpu_state.h"

static struct lens_gpu_state *states;
static pthread_mutex_t states_mu = PTHREAD_MUTEX_INITIALIZER;

/* An analysis's results kept in the state: the report, the indexes, the sequence flags. */
static void drop_state_results(struct lens_gpu_state *s) {
  free(s->report.kernel_flags);
  free(s->report.segs);
  memset(&s->report, 0, sizeof(s->report));
  lens_gpu_index_free(&s->launches);
  lens_gpu_index_free(&s->ops);
  free(s->seq);
  s->seq = NULL, s->n_seq = 0, s->seq_ambiguous = 0;
}

static void drop_state_data(struct lens_gpu_state *s) { /* never the model's own arrays */
  drop_state_results(s);
  for (size_t i = 0; i < s->n_extra; i++) free((void *)s->extra[i].data);
  free(s->extra);
  s->extra = NULL;
  s->n_extra = 0;
}

struct lens_gpu_state *lens_gpu_state(const struct lens_model *m, int create) {
  pthread_mutex_lock(&states_mu);
  struct lens_gpu_state *s = states;
  while (s && s->m != m) s = s->next;
  if (s && (s->fp_priv != m->priv || s->fp_events != m->events)) {
    drop_state_data(s); /* a new model at an old address: nothing carries over */
    s->fp_priv = m->priv;
    s->fp_events = m->events;
  }
  if (!s && create && (s = calloc(1, sizeof(*s)))) {
    s->m = m;
    s->fp_priv = m->priv;
    s->fp_events = m->events;
    s->next = states;
    states = s;
  }
  pthread_mutex_unlock(&states_mu);
  if (s && create) lens_model_on_free((struct lens_model *)m, lens_gpu_release); /* freed with the model */
  return s;
}

struct lens_gpu_report *lens_gpu_state_report(struct lens_gpu_state *s) { return &s->report; }

size_t lens_gpu_state_extra(struct lens_gpu_state *s, const struct lens_cupti_blob **blobs) {
  *blobs = s->extra;
  return s->n_extra;
}

const struct lens_gpu_report *lens_gpu_report_get(const struct lens_model *m) {
  struct lens_gpu_state *s = lens_gpu_state(m, 0);
  return s && s->report.graph_join ? &s->report : NULL;
}

static void clear_results(struct lens_model *m, struct lens_gpu_state *s) {
  free(m->kernels);
  m->kernels = NULL;
  m->n_kernels = 0;
  free(m->clock_maps);
  m->clock_maps = NULL;
  m->n_clock_maps = 0;
  drop_state_results(s);
}

void lens_gpu_release(struct lens_model *m) {
  pthread_mutex_lock(&states_mu);
  struct lens_gpu_state **pp = &states, *s;
  while ((s = *pp) && s->m != m) pp = &s->next;
  if (s) *pp = s->next;
  pthread_mutex_unlock(&states_mu);
  if (!s) return;
  clear_results(m, s);
  drop_state_data(s);
  free(s);
}

/* Saved CUPTI buffers are a few MiB per rank; 4 GiB is far beyond any. */
#define LENS_CUPTI_FILE_MAX (4ull << 30)

int lens_model_add_cupti_file(struct lens_model *m, const char *path, char *err, size_t err_len) {
  uint8_t *data;
  size_t len;
  /* Bounded: /dev/zero as a buffer would otherwise be read for ever. */
  if (lens_read_regular_file(path, LENS_CUPTI_FILE_MAX, "CUPTI buffer", &data, &len, err, err_len)) return -1;
  if (len == 0 || len % 8 != 0) {
    free(data);
    snprintf(err, err_len, "%s: %zu bytes is not a CUPTI activity buffer (records are 8-byte multiples)", path,
             len);
    return -1;
  }
  struct lens_gpu_state *s = lens_gpu_state(m, 1);
  struct lens_cupti_blob *v = s ? realloc(s->extra, (s->n_extra + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(data);
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  s->extra = v;
  s->extra[s->n_extra++] = (struct lens_cupti_blob){.proc = -1, .data = data, .len = len};
  return 0;
}

struct lens_gpu_report *lens_gpu_begin(struct lens_model *m, struct lens_gpu_state *s, struct lens_gpu_kch_table *t) {
  clear_results(m, s);
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_accuracy *a = &m->events[i].acc;
    a->flags &= LENS_ACC_STARVED; /* the starvation analysis owns that bit */
    a->cupti_kernel = -1;
    a->gpu_start_mono_ns = a->gpu_stop_mono_ns = 0;
    a->notice_lag_ns = 0;
    a->time_source = LENS_TS_HOST_NOTICE;
  }
  for (size_t q = 0; q < t->n; q++) t->v[q].flags = 0, t->v[q].cupti_kernel = -1;
  return &s->report;
}

int lens_gpu_analyze_rows(struct lens_model *m, struct lens_gpu_kch_table *t, char *err, size_t err_len) {
  struct lens_gpu_state *s = lens_gpu_state(m, 1);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  struct lens_gpu_report *r = lens_gpu_begin(m, s, t);
  if (lens_gpu_join(m, r, err, err_len) != 0) return -1;
  lens_gpu_fit_exclusions(t);
  if (lens_gpu_fit_clocks(m, r, t, err, err_len) != 0) return -1;
  lens_gpu_flag(m, r, t);
  return 0;
}

int lens_analyze_gpu(struct lens_model *m, char *err, size_t err_len) {
  struct lens_gpu_kch_table t;
  if (lens_gpu_kch_from_model(m, &t)) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  int rc = lens_gpu_analyze_rows(m, &t, err, err_len);
  lens_gpu_kch_free(&t);
  return rc;
}
