/* See trace_writer.h. */
#include "trace_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>

#include "lens_chunk.h"

struct out {
  FILE *f;
  uint64_t seq;
};

static int chunk(struct out *o, uint16_t type, const void *p, uint32_t len) {
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init(&h, type, 0, o->seq++, p, len);
  static const uint8_t zero[8];
  return fwrite(&h, sizeof(h), 1, o->f) == 1 && (!len || fwrite(p, len, 1, o->f) == 1) &&
                 fwrite(zero, 1, lens_chunk_padding(len), o->f) == lens_chunk_padding(len)
             ? 0
             : -1;
}

/* String ids on disk. */
static uint64_t str_id(const char *s) {
  if (!s) return 0;
  return !strcmp(s, "AllReduce") ? 1 : !strcmp(s, "Send") ? 2 : 3;
}

static int strings(struct out *o) {
  uint8_t buf[64];
  size_t n = 0;
  const char *names[] = {"AllReduce", "Send", "Recv"};
  for (uint32_t i = 0; i < 3; i++) {
    uint32_t id = i + 1;
    uint16_t len = (uint16_t)strlen(names[i]);
    memcpy(buf + n, &id, 4), memcpy(buf + n + 4, &len, 2), memcpy(buf + n + 6, names[i], len);
    n += 6 + len;
  }
  return chunk(o, LENS_CHUNK_STRINGS, buf, (uint32_t)n);
}

/* Records of one thread slot, in the order the thread produced them. */
struct recs {
  uint8_t *b;
  size_t n, cap;
  uint32_t count;
};

static void *rec(struct recs *r, size_t size) {
  size = (size + 7) & ~(size_t)7;
  if (r->n + size > r->cap) {
    r->cap = (r->cap + size) * 2;
    r->b = realloc(r->b, r->cap);
  }
  void *p = r->b + r->n;
  memset(p, 0, size);
  ((struct lens_rec_hdr *)p)->size = (uint16_t)size;
  r->n += size;
  r->count++;
  return p;
}

static void start(struct recs *r, const struct lens_event *e, uint64_t parent, const void *payload, size_t plen) {
  struct lens_rec_start *s = rec(r, sizeof(*s) + plen);
  s->h.kind = LENS_REC_START;
  s->h.type = (uint8_t)e->type;
  s->id = e->id;
  s->parent = parent;
  s->context = 0x1000;
  s->ts = e->start_mono_ns;
  memcpy(s + 1, payload, plen);
}

static void stop(struct recs *r, const struct lens_event *e) {
  struct lens_rec_stop *s = rec(r, sizeof(*s));
  s->h.kind = LENS_REC_STOP;
  s->h.type = (uint8_t)e->type;
  s->id = e->id;
  s->ts = e->stop_mono_ns;
}

static int flush(struct out *o, struct recs *r, uint32_t slot) {
  size_t len = sizeof(struct lens_events_hdr) + r->n;
  uint8_t *p = malloc(len);
  struct lens_events_hdr h = {slot, r->count};
  memcpy(p, &h, sizeof(h));
  memcpy(p + sizeof(h), r->b, r->n);
  int rc = chunk(o, LENS_CHUNK_EVENTS, p, (uint32_t)len);
  free(p);
  r->n = 0;
  r->count = 0;
  return rc;
}

int synth_write_trace(const struct synth *s, const char *path, int with_cupti_chunks, size_t chunk_bytes) {
  const struct lens_model *m = &s->m;
  struct out o = {fopen(path, "wb"), 0};
  if (!o.f) return -1;
  struct lens_file_hdr fh;
  lens_file_hdr_init(&fh, LENS_PRODUCER_PLUGIN, 1);
  int rc = fwrite(&fh, sizeof(fh), 1, o.f) == 1 ? 0 : -1;
  struct lens_session ss = {.pid = 4242, .nccl_api_version = 5, .start_mono_ns = (uint64_t)s->o.host_start_ns - 1000,
                            .start_real_ns = 1, .ts_clock = LENS_CLOCK_MONOTONIC, .hot_clock = LENS_CLOCK_MONOTONIC,
                            .event_mask = 0xFFF, .buffer_bytes = 1 << 20, .max_threads = 64, .outer_pid = 4242};
  snprintf(ss.host, sizeof(ss.host), "synth");
  snprintf(ss.plugin_version, sizeof(ss.plugin_version), "test");
  rc |= chunk(&o, LENS_CHUNK_SESSION, &ss, sizeof(ss));
  struct lens_comm_rec cr = {.context = 0x1000, .comm_id = 77, .rank = 0, .nranks = 2, .nnodes = 1,
                             .init_mono_ns = ss.start_mono_ns, .api_version = 5};
  rc |= chunk(&o, LENS_CHUNK_COMM, &cr, sizeof(cr));
  for (uint32_t t = 0; t < m->n_threads; t++) {
    struct lens_thread_rec tr = {.slot = m->threads[t].slot, .tid = m->threads[t].tid, .outer_tid = m->threads[t].tid,
                                 .roles = m->threads[t].roles, .proxy_rank = m->threads[t].proxy_rank,
                                 .proxy_comm_index = m->threads[t].proxy_rank >= 0 ? 0 : UINT32_MAX,
                                 .first_mono_ns = ss.start_mono_ns};
    snprintf(tr.name, sizeof(tr.name), t ? "ncclProxy" : "app");
    rc |= chunk(&o, LENS_CHUNK_THREAD, &tr, sizeof(tr));
  }
  rc |= strings(&o);
  struct recs app = {0}, proxy = {0};
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    uint64_t parent = e->parent >= 0 ? m->events[e->parent].id : 0;
    if (e->type == LENS_T_KERNEL_LAUNCH) {
      struct lens_p_kernel_launch p = {e->p.kernel_launch.stream, e->p.kernel_launch.ext_corr_id};
      start(&app, e, 0, &p, sizeof(p));
      stop(&app, e);
    } else if (e->type == LENS_T_COLL) {
      struct lens_p_coll p = {.seq = i, .func = str_id(e->p.coll.func), .count = 1024, .launch_id = e->p.coll.launch_id,
                              .n_channels = (uint8_t)s->o.channels};
      start(&app, e, 0, &p, sizeof(p));
      stop(&app, e);
    } else if (e->type == LENS_T_P2P) {
      struct lens_p_p2p p = {.func = str_id(e->p.p2p.func), .count = 1024, .launch_id = e->p.p2p.launch_id, .peer = 1};
      start(&app, e, 0, &p, sizeof(p));
      stop(&app, e);
    } else if (e->type == LENS_T_KERNEL_CH) {
      struct lens_p_kernel_ch p = {.start_gpu_ns = e->p.kernel_ch.start_gpu_ns, .channel = (uint8_t)e->p.kernel_ch.channel};
      start(&proxy, e, parent, &p, sizeof(p));
      struct lens_rec_state *st = rec(&proxy, sizeof(*st));
      st->h.kind = LENS_REC_STATE;
      st->h.type = LENS_T_KERNEL_CH;
      st->h.aux = 22;
      st->id = e->id;
      st->ts = m->states[e->first_state].ts_mono_ns;
      st->arg = e->p.kernel_ch.stop_gpu_ns;
      st->has_args = 1;
      stop(&proxy, e);
    }
    /* Chunks of a bounded size, as the writer drains rings. */
    if (app.n > 60000) rc |= flush(&o, &app, 0);
    if (proxy.n > 60000) rc |= flush(&o, &proxy, 1);
  }
  if (app.n) rc |= flush(&o, &app, 0);
  if (proxy.n) rc |= flush(&o, &proxy, 1);
  free(app.b);
  free(proxy.b);
  if (with_cupti_chunks && s->cupti_len) {
    /* Split on record boundaries, as CUPTI fills separate buffers. */
    size_t off = 0;
    while (off < s->cupti_len) {
      size_t end = off;
      while (end < s->cupti_len) {
        uint32_t kind;
        memcpy(&kind, s->cupti + end, 4);
        size_t sz = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
                    : kind == CUPTI_ACTIVITY_KIND_DRIVER           ? sizeof(CUpti_ActivityAPI)
                                                                   : sizeof(CUpti_ActivityExternalCorrelation);
        if (end + sz - off > chunk_bytes && end > off) break;
        end += sz;
      }
      size_t len = sizeof(struct lens_cupti_hdr) + (end - off);
      uint8_t *p = malloc(len);
      struct lens_cupti_hdr h = {.delivered_mono_ns = 1, .valid_bytes = (uint32_t)(end - off),
                                 .cupti_api_version = 130001};
      memcpy(p, &h, sizeof(h));
      memcpy(p + sizeof(h), s->cupti + off, end - off);
      rc |= chunk(&o, LENS_CHUNK_CUPTI, p, (uint32_t)len);
      free(p);
      off = end;
    }
  }
  struct lens_fini fi = {.at_mono_ns = (uint64_t)s->o.host_start_ns + 10000000000ull, .reason = 1};
  rc |= chunk(&o, LENS_CHUNK_FINI, &fi, sizeof(fi));
  if (fclose(o.f)) rc = -1;
  return rc;
}

int synth_write_cupti_buffer(const struct synth *s, const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int rc = fwrite(s->cupti, 1, s->cupti_len, f) == s->cupti_len ? 0 : -1;
  if (fclose(f)) rc = -1;
  return rc;
}
