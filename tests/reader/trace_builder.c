/* See trace_builder.h. */
#include "trace_builder.h"

#include "lens_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lens_chunk.h"

struct tb {
  FILE *f;
  uint64_t seq;
  uint32_t session;
  uint32_t slot;
  uint32_t count;
  uint8_t *ev;
  size_t ev_len, ev_cap;
  int index;                /* tb_index */
  struct lens_openset open;
};

static void die(const char *what) {
  fprintf(stderr, "trace_builder: %s\n", what);
  abort();
}

struct tb *tb_open(const char *path, uint32_t producer) {
  struct tb *t = calloc(1, sizeof *t);
  if (!t || !(t->f = fopen(path, "wb"))) die("cannot open output");
  struct lens_file_hdr fh;
  lens_file_hdr_init(&fh, producer, 1700000000000000000ull);
  if (fwrite(&fh, sizeof fh, 1, t->f) != 1) die("write");
  return t;
}

void tb_raw_chunk(struct tb *t, uint16_t type, const void *payload, uint32_t len) {
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init(&h, type, t->session, t->seq++, payload, len);
  static const uint8_t zero[8];
  if (fwrite(&h, sizeof h, 1, t->f) != 1 || (len && fwrite(payload, len, 1, t->f) != 1) ||
      fwrite(zero, lens_chunk_padding(len), 1, t->f) > 1)
    die("write");
}

void tb_close(struct tb *t) {
  if (t->ev_len) tb_flush(t);
  fclose(t->f);
  free(t->ev);
  if (t->index) lens_openset_free(&t->open);
  free(t);
}

void tb_session(struct tb *t, uint32_t number, uint32_t pid, const char *host, uint32_t api_version) {
  t->session = number;
  struct lens_session s;
  memset(&s, 0, sizeof s);
  s.pid = pid;
  s.outer_pid = pid + 100000;
  s.nccl_api_version = api_version;
  s.start_mono_ns = 1000;
  s.start_real_ns = 1700000000000000000ull;
  s.ts_clock = LENS_CLOCK_MONOTONIC;
  s.hot_clock = LENS_CLOCK_MONOTONIC;
  s.event_mask = 0x7FFF;
  s.buffer_bytes = 1 << 20;
  s.max_threads = 64;
  snprintf(s.host, sizeof s.host, "%s", host);
  snprintf(s.plugin_version, sizeof s.plugin_version, "test");
  tb_raw_chunk(t, LENS_CHUNK_SESSION, &s, sizeof s);
}

void tb_comm(struct tb *t, uint64_t context, uint64_t comm_id, int rank, int nranks, int nnodes, uint32_t comm_index,
             const char *name) {
  struct lens_comm_rec c;
  memset(&c, 0, sizeof c);
  c.context = context;
  c.comm_id = comm_id;
  c.rank = rank;
  c.nranks = nranks;
  c.nnodes = nnodes;
  c.comm_index = comm_index;
  c.init_mono_ns = 2000;
  c.api_version = 5;
  snprintf(c.name, sizeof c.name, "%s", name);
  tb_raw_chunk(t, LENS_CHUNK_COMM, &c, sizeof c);
}

void tb_comm_fini(struct tb *t, uint64_t context, uint64_t fini_mono_ns, uint32_t comm_index) {
  struct lens_comm_fini c = {.context = context, .fini_mono_ns = fini_mono_ns, .comm_index = comm_index};
  tb_raw_chunk(t, LENS_CHUNK_COMM_FINI, &c, sizeof c);
}

void tb_thread(struct tb *t, uint32_t slot, uint32_t tid, uint32_t roles, const char *name, int proxy_rank,
               uint32_t proxy_comm_index) {
  struct lens_thread_rec r;
  memset(&r, 0, sizeof r);
  r.slot = slot;
  r.tid = tid;
  r.outer_tid = tid + 100000;
  r.roles = roles;
  r.proxy_rank = proxy_rank;
  r.proxy_comm_index = proxy_comm_index;
  r.first_mono_ns = 1500;
  snprintf(r.name, sizeof r.name, "%s", name);
  tb_raw_chunk(t, LENS_CHUNK_THREAD, &r, sizeof r);
}

void tb_string(struct tb *t, uint32_t id, const char *s) {
  uint16_t len = (uint16_t)strlen(s);
  uint8_t buf[6 + 65536];
  memcpy(buf, &id, 4);
  memcpy(buf + 4, &len, 2);
  memcpy(buf + 6, s, len);
  tb_raw_chunk(t, LENS_CHUNK_STRINGS, buf, 6u + len);
}

static void ev_append(struct tb *t, const void *p, size_t len) {
  if (t->ev_len + len > t->ev_cap) {
    t->ev_cap = (t->ev_len + len) * 2 + 256;
    t->ev = realloc(t->ev, t->ev_cap);
    if (!t->ev) die("oom");
  }
  memcpy(t->ev + t->ev_len, p, len);
  t->ev_len += len;
}

void tb_events_begin(struct tb *t, uint32_t slot) {
  if (t->ev_len) tb_flush(t);
  t->slot = slot;
  t->count = 0;
  struct lens_events_hdr h = {.slot = slot, .count = 0};
  ev_append(t, &h, sizeof h);
}

void tb_start(struct tb *t, int type, uint64_t id, uint64_t parent, uint64_t context, uint64_t ts, int rank,
              uint32_t aux, const void *payload, size_t payload_len) {
  struct lens_rec_start r;
  memset(&r, 0, sizeof r);
  size_t padded = (payload_len + 7) & ~(size_t)7;
  r.h.size = (uint16_t)(sizeof r + padded);
  r.h.kind = LENS_REC_START;
  r.h.type = (uint8_t)type;
  r.h.aux = aux;
  r.id = id;
  r.parent = parent;
  r.context = context;
  r.ts = ts;
  r.rank = rank;
  ev_append(t, &r, sizeof r);
  static const uint8_t zero[8];
  if (payload_len) ev_append(t, payload, payload_len);
  ev_append(t, zero, padded - payload_len);
  t->count++;
}

void tb_stop(struct tb *t, uint64_t id, uint64_t ts) {
  struct lens_rec_stop r;
  memset(&r, 0, sizeof r);
  r.h.size = sizeof r;
  r.h.kind = LENS_REC_STOP;
  r.h.type = (uint8_t)LENS_ID_TYPE(id);
  r.id = id;
  r.ts = ts;
  ev_append(t, &r, sizeof r);
  t->count++;
}

void tb_state_run(struct tb *t, uint64_t id, uint32_t state, uint64_t ts, uint64_t arg, uint32_t has_args,
                  uint64_t last_ts, uint32_t repeats, uint32_t max_gap_ns) {
  struct lens_rec_state_run r;
  memset(&r, 0, sizeof r);
  r.s.h.size = sizeof r;
  r.s.h.kind = LENS_REC_STATE;
  r.s.h.type = (uint8_t)LENS_ID_TYPE(id);
  r.s.h.aux = state;
  r.s.id = id;
  r.s.ts = ts;
  r.s.arg = arg;
  r.s.has_args = has_args;
  r.last_ts = last_ts;
  r.repeats = repeats;
  r.max_gap_ns = max_gap_ns;
  ev_append(t, &r, sizeof r);
  t->count++;
}

void tb_state(struct tb *t, uint64_t id, uint32_t state, uint64_t ts, uint64_t arg, uint32_t has_args) {
  struct lens_rec_state r;
  memset(&r, 0, sizeof r);
  r.h.size = sizeof r;
  r.h.kind = LENS_REC_STATE;
  r.h.type = (uint8_t)LENS_ID_TYPE(id);
  r.h.aux = state;
  r.id = id;
  r.ts = ts;
  r.arg = arg;
  r.has_args = has_args;
  ev_append(t, &r, sizeof r);
  t->count++;
}

void tb_index(struct tb *t) {
  if (!t->index && lens_openset_init(&t->open, 64)) die("no memory");
  t->index = 1;
}

/* The INDEX of the events chunk in t->ev, written after it (no records: none, as the writer). */
static void index_chunk(struct tb *t) {
  struct lens_index_acc a;
  lens_index_begin(&a, t->slot);
  for (size_t o = sizeof(struct lens_events_hdr); o + sizeof(struct lens_rec_hdr) <= t->ev_len;) {
    const struct lens_rec_hdr *r = (const struct lens_rec_hdr *)(t->ev + o);
    lens_index_add(&a, r);
    lens_openset_add(&t->open, r);
    if (!r->size) break;
    o += r->size;
  }
  if (!a.h.records) return;
  uint64_t taken = a.h.last_ts;
  static uint8_t buf[1 << 20];
  uint32_t len;
  const void *p = lens_index_payload(&a, t->count, 1, &len);
  memcpy(buf, p, len);
  size_t open_len = lens_openset_write(&t->open, taken, buf + len, sizeof buf - len);
  if (!open_len) p = lens_index_payload(&a, t->count, 0, &len), memcpy(buf, p, len);
  tb_raw_chunk(t, LENS_CHUNK_INDEX, buf, (uint32_t)(len + open_len));
}

void tb_flush(struct tb *t) {
  if (!t->ev_len) return;
  struct lens_events_hdr h = {.slot = t->slot, .count = t->count};
  memcpy(t->ev, &h, sizeof h);
  tb_raw_chunk(t, LENS_CHUNK_EVENTS, t->ev, (uint32_t)t->ev_len);
  if (t->index) index_chunk(t);
  t->ev_len = 0;
  t->count = 0;
}

void tb_drops(struct tb *t, const struct lens_drops *d) { tb_raw_chunk(t, LENS_CHUNK_DROPS, d, sizeof *d); }

void tb_note(struct tb *t, uint64_t at, uint32_t level, const char *text) {
  uint8_t buf[1024];
  struct lens_note_hdr h = {.at_mono_ns = at, .level = level, .len = (uint32_t)strlen(text)};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, text, h.len);
  tb_raw_chunk(t, LENS_CHUNK_NOTE, buf, (uint32_t)(sizeof h + h.len));
}

void tb_sched(struct tb *t, const struct lens_sched_sample *s, uint32_t n) {
  size_t len = sizeof(struct lens_sched_hdr) + n * sizeof *s;
  uint8_t *buf = malloc(len);
  if (!buf) die("oom");
  struct lens_sched_hdr h = {.count = n};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, s, n * sizeof *s);
  tb_raw_chunk(t, LENS_CHUNK_SCHED, buf, (uint32_t)len);
  free(buf);
}

void tb_sched_hist(struct tb *t, const struct lens_sched_hist *h) { tb_raw_chunk(t, LENS_CHUNK_SCHED_HIST, h, sizeof *h); }

void tb_cupti(struct tb *t, uint64_t delivered, const void *bytes, uint32_t len) {
  uint8_t *buf = malloc(sizeof(struct lens_cupti_hdr) + len);
  if (!buf) die("oom");
  struct lens_cupti_hdr h = {.delivered_mono_ns = delivered, .valid_bytes = len, .cupti_api_version = 130000};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, bytes, len);
  tb_raw_chunk(t, LENS_CHUNK_CUPTI, buf, (uint32_t)(sizeof h + len));
  free(buf);
}

void tb_fini(struct tb *t, uint64_t at, uint32_t reason) {
  struct lens_fini f = {.at_mono_ns = at, .events_written = 0, .chunks_written = t->seq, .reason = reason};
  tb_raw_chunk(t, LENS_CHUNK_FINI, &f, sizeof f);
}

uint8_t *tb_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot read file");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) die("read");
  fclose(f);
  *len = (size_t)n;
  return b;
}

void tb_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || (len && fwrite(data, len, 1, f) != 1)) die("write file");
  fclose(f);
}
