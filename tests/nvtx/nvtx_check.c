/* Checks over a recorded NVTX log shared by the NVTX tests (nvtx_check.h). */
#define _GNU_SOURCE
#include "nvtx_check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct nvtx_inject_log *nvtx_log_if_loaded(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return NULL;
  nvtx_inject_log_fn fn = (nvtx_inject_log_fn)dlsym(h, "nvtx_inject_log");
  return fn ? fn() : NULL; /* the handle stays open: NVTX holds the library anyway */
}

struct nvtx_inject_log *nvtx_log_load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct nvtx_inject_log *log = calloc(1, sizeof(*log));
  size_t head = offsetof(struct nvtx_inject_log, ev);
  if (!log || fread(log, 1, head, f) != head || log->count > NVTX_INJ_MAX_EVENTS ||
      fread(log->ev, sizeof(log->ev[0]), log->count, f) != log->count) {
    free(log);
    log = NULL;
  }
  fclose(f);
  return log;
}

int nvtx_domain_index(const struct nvtx_inject_log *log, const char *name) {
  for (int i = 0; i < log->n_domains; i++)
    if (strcmp(log->domains[i], name) == 0) return i;
  return -1;
}

int nvtx_category_named(const struct nvtx_inject_log *log, int domain, unsigned id, const char *name) {
  for (uint64_t i = 0; i < log->count; i++) {
    const struct nvtx_ev *e = &log->ev[i];
    if (e->kind == NVTX_EV_NAME_CATEGORY && e->domain == domain && e->id == id && strcmp(e->msg, name) == 0)
      return 1;
  }
  return 0;
}

const char *nvtx_ev_str(const struct nvtx_ev *e, int k) {
  size_t pos = strnlen(e->msg, NVTX_INJ_MSG) + 1;
  for (int i = 0; i < k && pos < NVTX_INJ_MSG; i++) pos += strnlen(e->msg + pos, NVTX_INJ_MSG - pos) + 1;
  return pos < NVTX_INJ_MSG ? e->msg + pos : "";
}

#define MAX_TIDS 64
struct tid_state {
  uint32_t tid;
  int depth;
  int open;
};

static struct tid_state *tid_get(struct tid_state *t, int *n, uint32_t tid) {
  for (int i = 0; i < *n; i++)
    if (t[i].tid == tid) return &t[i];
  if (*n >= MAX_TIDS) return NULL;
  t[*n].tid = tid;
  t[*n].depth = 0;
  t[*n].open = 0;
  return &t[(*n)++];
}

int nvtx_check_ranges(const struct nvtx_inject_log *log, int domain, struct nvtx_range_stats *st, char *err,
                      size_t errlen) {
  struct tid_state tids[MAX_TIDS];
  int n_tids = 0;
  memset(st, 0, sizeof(*st));
  uint64_t max_id = 0;
  for (uint64_t i = 0; i < log->count; i++)
    if (log->ev[i].kind == NVTX_EV_START && log->ev[i].id > max_id) max_id = log->ev[i].id;
  /* per range id: the tid that started it (0 = not started here), and ends seen */
  uint32_t *start_tid = calloc(max_id + 1, sizeof(uint32_t));
  uint8_t *ended = calloc(max_id + 1, 1);
  int rc = 0;
  for (uint64_t i = 0; i < log->count && rc == 0; i++) {
    const struct nvtx_ev *e = &log->ev[i];
    if (e->domain != domain) continue;
    struct tid_state *t;
    switch (e->kind) {
    case NVTX_EV_PUSH:
      st->pushes++;
      if ((t = tid_get(tids, &n_tids, e->tid))) t->depth++;
      break;
    case NVTX_EV_POP:
      st->pops++;
      t = tid_get(tids, &n_tids, e->tid);
      if (e->level < 0 || !t || t->depth == 0) {
        snprintf(err, errlen, "event %llu: pop without push on tid %u", (unsigned long long)e->seq, e->tid);
        rc = -1;
      } else {
        t->depth--;
      }
      break;
    case NVTX_EV_START:
      st->starts++;
      start_tid[e->id] = e->tid;
      if ((t = tid_get(tids, &n_tids, e->tid))) {
        t->open++;
        if (t->open > st->max_open_per_thread) st->max_open_per_thread = t->open;
      }
      break;
    case NVTX_EV_END:
      st->ends++;
      if (e->id == 0 || e->id > max_id || !start_tid[e->id]) {
        snprintf(err, errlen, "event %llu: end of unknown range id %llu", (unsigned long long)e->seq,
                 (unsigned long long)e->id);
        rc = -1;
      } else if (ended[e->id]++) {
        snprintf(err, errlen, "event %llu: range id %llu ended twice", (unsigned long long)e->seq,
                 (unsigned long long)e->id);
        rc = -1;
      } else if ((t = tid_get(tids, &n_tids, start_tid[e->id]))) {
        t->open--;
      }
      break;
    default: break;
    }
  }
  for (int i = 0; i < n_tids && rc == 0; i++)
    if (tids[i].depth != 0) {
      snprintf(err, errlen, "tid %u: %d pushes never popped", tids[i].tid, tids[i].depth);
      rc = -1;
    }
  for (uint64_t id = 1; id <= max_id && rc == 0; id++)
    if (start_tid[id] && !ended[id]) {
      /* only ranges of this domain were recorded in start_tid */
      snprintf(err, errlen, "range id %llu never ended", (unsigned long long)id);
      rc = -1;
    }
  free(start_tid);
  free(ended);
  return rc;
}
