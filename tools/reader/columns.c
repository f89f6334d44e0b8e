/* See columns.h. One pass over a file's chunks (chunk_stream.h): metadata
 * as it comes, EVENTS (and EVENTS_PACKED, unpacked into fixed records in a
 * reused buffer) record by record. A START is appended to its type's
 * columns and its index to the id table (id_seq.h: its thread slot's
 * array by sequence number); a STOP or STATE finds its event there by its
 * id's sequence number, usually near the end of the array, in cache. A STOP, STATE or parent that names an
 * event not read yet (recorded by another thread whose chunk comes later)
 * waits until the end of the file, then is resolved or counted as the
 * general model counts it. */
#include "columns.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "chunk_stream.h"
#include "id_seq.h"
#include "lens_pack.h"
#include "lens_unpack.h"
#include "reader_priv.h"

#define READ_BLOCK (1u << 20) /* bytes read at a time: a few chunks, in cache */

/* A STOP or STATE read before its START, or a parent not read yet. */
struct later {
  uint64_t id, ts, arg;
  uint32_t session, state, has_args, kind, repeats, type;
  size_t idx; /* kind 0: the child whose parent id is `id` */
};

struct lens_cols_priv {
  struct lens_arena_block *arena;
  struct lens_hash strings; /* (file, session, string id) -> const char * */
  struct lens_unpacker unpacker; /* packed.c's, reused from chunk to chunk */
  /* The file being read. */
  uint32_t file;
  struct lens_hash cur_thread; /* (session, slot) -> thread index owning the slot now */
  struct lens_hash comm_of;    /* (session, context) -> comm index */
  /* (session, id) -> the event's index in its type's columns, its type
   * the id's (LENS_ID_TYPE); -2 - LENS_COL_REF for an id that names
   * another type than its record's. */
  struct lens_idseq ids;
  /* A type's first column capacity, from the first file's size (an event
   * takes at least a byte on disk, zstd included): 64 Ki events for a
   * busy trace, as before; a small one (a probe trace, a fuzz case) no
   * longer maps 3.5 MiB a type (ASan fills what it maps: the reader fuzz
   * took 137 s under ASan, 9.6 s with small first columns). */
  size_t first_cap;
  uint64_t last_ctx; /* the last context found in comm_of, and its comm */
  uint32_t last_ctx_session;
  int last_ctx_ok;
  int64_t last_comm;
  struct later *later;
  size_t n_later, cap_later;
};

struct lens_cols *lens_cols_new(void) {
  struct lens_cols *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->priv = calloc(1, sizeof *c->priv);
  if (!c->priv) {
    free(c);
    return NULL;
  }
  /* the payload sizes the plugin writes (lens_pack.c's table) */
  for (unsigned t = 0; t < LENS_T_COUNT; t++) c->t[t].payload_size = lens_pack_std_payload(t);
  return c;
}

size_t lens_cols_events(const struct lens_cols *c) {
  size_t n = 0;
  for (unsigned t = 0; t < LENS_T_COUNT; t++) n += c->t[t].n;
  return n;
}

static int grow(void **p, size_t n, size_t es) {
  void *q = realloc(*p, n * es);
  if (!q) return -1;
  lens_hugepage_hint(q, n * es);
  *p = q;
  return 0;
}

static int grow_type(struct lens_cols_type *t, unsigned type, size_t first_cap) {
  size_t cap = t->cap ? t->cap * 2 : first_cap;
  int kernel = type == LENS_T_KERNEL_CH || type == LENS_T_KERNEL_PHASE;
  if (grow((void **)&t->id, cap, 8) || grow((void **)&t->start, cap, 8) || grow((void **)&t->stop, cap, 8) ||
      grow((void **)&t->parent, cap, 8) || grow((void **)&t->thread, cap, 4) || grow((void **)&t->flags, cap, 4) ||
      grow((void **)&t->n_states, cap, 4) || grow((void **)&t->comm, cap, 4) ||
      (t->payload_size && grow((void **)&t->payload, cap, t->payload_size)) ||
      (kernel && grow((void **)&t->stop_gpu, cap, 8)))
    return -1;
  t->cap = cap;
  return 0;
}

/* ---- ids by thread sequence (id_seq.h) ---- */

/* Enters a START. 0, or -1 (no memory). */
static inline int enter_id(struct lens_cols_priv *pv, uint32_t session, uint64_t id, unsigned type, size_t idx) {
  int64_t v = __builtin_expect(LENS_ID_TYPE(id) == type, 1) ? (int64_t)idx : -2 - LENS_COL_REF(type, idx);
  return lens_idseq_put(&pv->ids, session, id, v);
}

/* The event an id names in this file and session: LENS_COL_REF, or
 * LENS_COL_NONE. */
static inline int64_t find_id(struct lens_cols_priv *pv, uint32_t session, uint64_t id) {
  int64_t v;
  if (!lens_idseq_get(&pv->ids, session, id, &v)) return LENS_COL_NONE;
  return v >= 0 ? LENS_COL_REF(LENS_ID_TYPE(id), v) : -2 - v;
}

static void free_file_state(struct lens_cols_priv *pv) {
  lens_idseq_free(&pv->ids);
  pv->last_ctx_ok = 0;
  lens_hash_free(&pv->cur_thread);
  lens_hash_free(&pv->comm_of);
  free(pv->later);
  pv->later = NULL;
  pv->n_later = pv->cap_later = 0;
}

static int grow_later(struct lens_cols_priv *pv) {
  size_t cap = pv->cap_later ? pv->cap_later * 2 : 1024;
  if (grow((void **)&pv->later, cap, sizeof *pv->later)) return -1;
  pv->cap_later = cap;
  return 0;
}

/* Inline: a chunk's parents are often in a chunk of another thread that
 * comes later (a proxy's ProxyOps before the application's Colls). */
static inline int push_later(struct lens_cols_priv *pv, const struct later *l) {
  if (__builtin_expect(pv->n_later == pv->cap_later, 0) && grow_later(pv)) return -1;
  pv->later[pv->n_later++] = *l;
  return 0;
}

/* ---- metadata ---- */

static void copy_in(void *dst, size_t dst_len, const uint8_t *p, uint32_t len) {
  memset(dst, 0, dst_len);
  memcpy(dst, p, len < dst_len ? len : dst_len);
}

static int new_thread(struct lens_cols *c, uint32_t session, uint32_t slot, uint32_t tid, uint32_t roles,
                      int64_t *idx) {
  if (c->n_threads == c->cap_threads) {
    size_t cap = c->cap_threads ? c->cap_threads * 2 : 64;
    if (grow((void **)&c->threads, cap, sizeof *c->threads)) return -1;
    c->cap_threads = cap;
  }
  c->threads[c->n_threads] = (struct lens_cols_thread){c->priv->file, session, slot, tid, roles};
  *idx = (int64_t)c->n_threads++;
  return lens_hash_put(&c->priv->cur_thread, session, slot, *idx);
}

/* THREAD: the same tid re-announces roles; another tid is the slot's next
 * owner. A placeholder (events came before any THREAD of the slot) takes
 * the first owner, as the general model gives such events the slot's
 * earliest thread. */
static int on_thread(struct lens_cols *c, uint32_t session, const uint8_t *p, uint32_t len) {
  struct lens_thread_rec r;
  copy_in(&r, sizeof r, p, len);
  int64_t t;
  if (lens_hash_get(&c->priv->cur_thread, session, r.slot, &t) &&
      (c->threads[t].tid == r.tid || c->threads[t].tid == 0)) {
    c->threads[t].tid = r.tid;
    c->threads[t].roles = r.roles;
    return 0;
  }
  return new_thread(c, session, r.slot, r.tid, r.roles, &t);
}

static int on_comm(struct lens_cols *c, uint32_t session, const uint8_t *p, uint32_t len) {
  struct lens_comm_rec r;
  copy_in(&r, sizeof r, p, len);
  int64_t i;
  if (!lens_hash_get(&c->priv->comm_of, session, r.context, &i)) {
    if (c->n_comms == c->cap_comms) {
      size_t cap = c->cap_comms ? c->cap_comms * 2 : 64;
      if (grow((void **)&c->comms, cap, sizeof *c->comms)) return -1;
      c->cap_comms = cap;
    }
    i = (int64_t)c->n_comms++;
    if (lens_hash_put(&c->priv->comm_of, session, r.context, i)) return -1;
  }
  c->priv->last_ctx_ok = 0; /* a re-sent COMM may move a context */
  c->comms[i] = (struct lens_cols_comm){c->priv->file, session, r.context, r.comm_id, r.rank, r.nranks};
  return 0;
}

static int on_strings(struct lens_cols *c, uint32_t session, const uint8_t *p, uint32_t len) {
  return lens_strings_put(&c->priv->arena, &c->priv->strings, c->priv->file, session, p, len);
}

const char *lens_cols_str(const struct lens_cols *c, uint32_t thread, lens_str_t id) {
  if (!id || thread >= c->n_threads) return NULL;
  const struct lens_cols_thread *t = &c->threads[thread];
  int64_t v;
  return lens_hash_get(&c->priv->strings, lens_hash_scope(t->file, t->session), id, &v) ? (const char *)(intptr_t)v
                                                                                        : NULL;
}

/* ---- events ---- */

static void apply_stop(struct lens_cols_type *t, size_t i, uint64_t ts) {
  if (t->flags[i] & LENS_COLF_STOPPED) {
    t->flags[i] |= LENS_COLF_DUP_STOP;
    return;
  }
  t->flags[i] |= LENS_COLF_STOPPED;
  t->stop[i] = ts;
}

static void apply_state(struct lens_cols_type *t, unsigned type, size_t i, uint32_t state, uint32_t has_args,
                        uint64_t arg, uint32_t repeats) {
  t->n_states[i] += repeats ? repeats : 1;
  if (lens_gpu_stop_state(type, state)) /* only those types have the column */
    t->stop_gpu[i] = lens_gpu_stop_timer(type, state, (int)has_args, arg, t->stop_gpu[i]);
}

/* A START's fields, from a fixed record (on_start) or straight from the
 * packed stream (read_packed): its payload pl[0..avail), a multiple of 8
 * bytes. Always inlined: called, the struct went through the stack in
 * 8-byte stores and came back in 16-byte loads, a store-forwarding stall
 * that took a quarter of read_packed's time. */
struct start_f { uint64_t id, parent, context, ts; uint32_t aux; unsigned type; };

static inline __attribute__((always_inline)) int on_start_f(struct lens_cols *c, uint32_t session, uint32_t thread, struct start_f s,
                             const uint8_t *pl, size_t avail) {
  unsigned type = s.type;
  struct lens_cols_priv *pv = c->priv;
  struct lens_cols_file *f = &c->files[pv->file];
  if (type >= LENS_T_COUNT) {
    f->bad_records++;
    return 0;
  }
  struct lens_cols_type *t = &c->t[type];
  if (t->n == t->cap && grow_type(t, type, c->priv->first_cap)) return -1;
  size_t i = t->n++;
  uint32_t flags = (s.aux & LENS_START_F_REMOTE) || (s.id & LENS_ID_REMOTE) ? LENS_COLF_REMOTE : 0;
  t->id[i] = s.id;
  t->start[i] = s.ts;
  t->stop[i] = 0;
  t->thread[i] = thread;
  t->n_states[i] = 0;
  if (t->stop_gpu) t->stop_gpu[i] = 0;
  if (t->payload_size) {
    /* Payloads and records are multiples of 8 bytes: word by word, no
     * library call for the 8 or 24 bytes of most events. */
    uint8_t *d = t->payload + i * t->payload_size;
    size_t n = avail < t->payload_size ? avail : t->payload_size, k = 0;
    for (; k + 8 <= n; k += 8) memcpy(d + k, pl + k, 8);
    if (k < t->payload_size) { /* a shorter record (older writer) reads as zeros past its end */
      memcpy(d + k, pl + k, n - k);
      memset(d + n, 0, t->payload_size - n);
    }
  }
  int64_t cm = -1;
  if (!(flags & LENS_COLF_REMOTE)) {
    /* A thread's events mostly name one communicator after another. */
    if (pv->last_ctx_ok && pv->last_ctx == s.context && pv->last_ctx_session == session) {
      cm = pv->last_comm;
    } else if (lens_hash_get(&pv->comm_of, session, s.context, &cm)) {
      pv->last_ctx_ok = 1;
      pv->last_ctx = s.context;
      pv->last_ctx_session = session;
      pv->last_comm = cm;
    }
  }
  t->comm[i] = (int32_t)cm;
  t->parent[i] = LENS_COL_NONE;
  if (s.parent) {
    int32_t op_pid = 0;
    if (type == LENS_T_PROXY_OP) memcpy(&op_pid, t->payload + i * t->payload_size, sizeof op_pid);
    if (type == LENS_T_PROXY_OP && (flags & LENS_COLF_REMOTE) && (uint32_t)op_pid != f->pid) {
      flags |= LENS_COLF_PARENT_REMOTE; /* a peer's Coll/P2p: in its own trace */
    } else {
      int64_t p = find_id(pv, session, s.parent);
      if (p != LENS_COL_NONE) t->parent[i] = p;
      else if (push_later(pv, &(struct later){.id = s.parent, .session = session, .type = type, .idx = i}))
        return -1;
    }
  }
  t->flags[i] = flags;
  return enter_id(pv, session, s.id, type, i);
}

static int on_start(struct lens_cols *c, uint32_t session, uint32_t thread, const uint8_t *r, size_t size) {
  struct lens_rec_start s;
  memcpy(&s, r, sizeof s);
  return on_start_f(c, session, thread, (struct start_f){s.id, s.parent, s.context, s.ts, s.h.aux, s.h.type},
                    r + sizeof s, size - sizeof s);
}

static inline uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline uint32_t ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* A STOP (stop set) or STATE (state, arg, has_args, repeats of a run). */
static inline int on_stop_state_f(struct lens_cols *c, uint32_t session, int stop, uint64_t id, uint64_t ts,
                                  uint32_t state, uint64_t arg, uint32_t has_args, uint32_t repeats) {
  struct lens_cols_priv *pv = c->priv;
  int64_t e = find_id(pv, session, id);
  if (e == LENS_COL_NONE) {
    if (!id) return 0; /* a NULL handle (NetPlugin) */
    return push_later(pv, &(struct later){.id = id, .ts = ts, .arg = arg, .session = session, .state = state,
                                          .has_args = has_args, .kind = stop ? LENS_REC_STOP : LENS_REC_STATE,
                                          .repeats = repeats});
  }
  unsigned t = LENS_COL_REF_TYPE(e);
  if (stop) apply_stop(&c->t[t], LENS_COL_REF_INDEX(e), ts);
  else apply_state(&c->t[t], t, LENS_COL_REF_INDEX(e), state, has_args, arg, repeats);
  return 0;
}

/* Fields read where they lie (lens_rec_stop, lens_rec_state[_run]): no copy
 * of the record. */
static int on_stop_state(struct lens_cols *c, uint32_t session, const uint8_t *r, const struct lens_rec_hdr *rh) {
  uint64_t id = ld64(r + offsetof(struct lens_rec_stop, id)), ts = ld64(r + offsetof(struct lens_rec_stop, ts));
  int stop = rh->kind == LENS_REC_STOP;
  uint64_t arg = stop ? 0 : ld64(r + offsetof(struct lens_rec_state, arg));
  uint32_t has_args = stop ? 0 : ld32(r + offsetof(struct lens_rec_state, has_args));
  uint32_t repeats = !stop && rh->size >= sizeof(struct lens_rec_state_run)
                         ? ld32(r + offsetof(struct lens_rec_state_run, repeats))
                         : 0;
  return on_stop_state_f(c, session, stop, id, ts, rh->aux, arg, has_args, repeats);
}

/* The slot's owner when the chunk was written; a placeholder when no
 * THREAD chunk of it came yet. Index, or -1 (no memory). */
static int64_t thread_of(struct lens_cols *c, uint32_t session, uint32_t slot) {
  int64_t t;
  if (lens_hash_get(&c->priv->cur_thread, session, slot, &t)) return t;
  return new_thread(c, session, slot, 0, 0, &t) ? -1 : t;
}

/* One fixed record of size bytes (its header checked by the caller). */
static inline int one_record(struct lens_cols *c, uint32_t session, uint32_t thread, const uint8_t *r,
                             const struct lens_rec_hdr *rh) {
  if (rh->kind == LENS_REC_START && rh->size >= sizeof(struct lens_rec_start))
    return on_start(c, session, thread, r, rh->size);
  if ((rh->kind == LENS_REC_STOP && rh->size >= sizeof(struct lens_rec_stop)) ||
      (rh->kind == LENS_REC_STATE && rh->size >= sizeof(struct lens_rec_state)))
    return on_stop_state(c, session, r, rh);
  c->files[c->priv->file].bad_records++;
  return 0;
}

static int read_events(struct lens_cols *c, uint32_t session, const uint8_t *p, uint32_t len) {
  struct lens_cols_file *f = &c->files[c->priv->file];
  struct lens_events_hdr eh;
  if (len < sizeof eh) {
    f->bad_records++;
    return 0;
  }
  memcpy(&eh, p, sizeof eh);
  int64_t thread = thread_of(c, session, eh.slot);
  if (thread < 0) return -1;
  size_t off = sizeof eh;
  for (uint32_t i = 0; i < eh.count; i++) {
    struct lens_rec_hdr rh;
    if (len - off < sizeof rh) {
      f->bad_records += eh.count - i;
      break;
    }
    memcpy(&rh, p + off, sizeof rh);
    if (rh.size < sizeof rh || (rh.size & 7) || rh.size > len - off) {
      f->bad_records += eh.count - i; /* cannot find the next record */
      break;
    }
    const uint8_t *r = p + off;
    off += rh.size;
    if (one_record(c, session, (uint32_t)thread, r, &rh)) return -1;
  }
  return 0;
}

/* An EVENTS_PACKED chunk's varint stream, decoded straight into the
 * columns (common/lens_unpack.h, the decoder lens_unpack uses for the
 * general model): no fixed records written and read back. The records the
 * stream decodes are the ones lens_unpack gives the model, and the same
 * count after a malformed one is lost. */
static int read_packed(struct lens_cols *c, uint32_t session, const struct lens_packed_hdr *ph, const uint8_t *body,
                       size_t len) {
  int64_t thread = thread_of(c, session, ph->slot);
  if (thread < 0) return -1;
  struct lens_unpack_cur cur;
  struct lens_unpacked r;
  lens_unpack_init(&cur, body, len, ph->raw_bytes);
  uint32_t n = 0;
  for (; n < ph->count && lens_unpack_next(&cur, &r); n++) {
    int rc;
    if (r.kind == LENS_REC_START) {
      rc = on_start_f(c, session, (uint32_t)thread, (struct start_f){r.id, r.parent, r.ctx, r.ts, r.aux, r.type},
                      (const uint8_t *)r.payload, r.pbytes);
    } else if (r.kind) {
      rc = on_stop_state_f(c, session, r.kind == LENS_REC_STOP, r.id, r.ts, r.aux, r.arg, r.has_args, r.repeats);
    } else {
      struct lens_rec_hdr rh;
      memcpy(&rh, r.raw, sizeof rh);
      if (rh.size & 7) { /* as read_events: the next record cannot be found, the rest of the chunk is lost */
        c->files[c->priv->file].bad_records += ph->count - n;
        return 0;
      }
      rc = one_record(c, session, (uint32_t)thread, r.raw, &rh);
    }
    if (rc) return -1;
  }
  c->files[c->priv->file].bad_records += ph->count - n;
  return 0;
}

/* The end of a file: what waited for a later START. */
static void resolve_later(struct lens_cols *c) {
  struct lens_cols_priv *pv = c->priv;
  struct lens_cols_file *f = &c->files[pv->file];
  for (size_t i = 0; i < pv->n_later; i++) {
    const struct later *l = &pv->later[i];
    int64_t e = find_id(pv, l->session, l->id);
    if (l->kind == 0) { /* a parent */
      struct lens_cols_type *t = &c->t[l->type];
      if (e != LENS_COL_NONE && e != LENS_COL_REF(l->type, l->idx)) t->parent[l->idx] = e;
      else t->flags[l->idx] |= LENS_COLF_PARENT_MISSING;
      continue;
    }
    if (e == LENS_COL_NONE) {
      f->orphan_stops++;
      continue;
    }
    unsigned t = LENS_COL_REF_TYPE(e);
    if (l->kind == LENS_REC_STOP) apply_stop(&c->t[t], LENS_COL_REF_INDEX(e), l->ts);
    else apply_state(&c->t[t], t, LENS_COL_REF_INDEX(e), l->state, l->has_args, l->arg, l->repeats);
  }
}

int lens_cols_read(struct lens_cols *c, const char *path, char *err, size_t err_len) {
  struct lens_cols_priv *pv = c->priv;
  struct lens_cstream s;
  if (lens_cstream_open(&s, path, READ_BLOCK, err, err_len)) return -1;
  if (c->n_files == c->cap_files) {
    size_t cap = c->cap_files ? c->cap_files * 2 : 16;
    if (grow((void **)&c->files, cap, sizeof *c->files)) goto oom;
    c->cap_files = cap;
  }
  if (!pv->first_cap) pv->first_cap = s.size < 1024 ? 1024 : s.size > 65536 ? 65536 : (size_t)s.size;
  pv->file = (uint32_t)c->n_files++;
  struct lens_cols_file *f = &c->files[pv->file];
  memset(f, 0, sizeof *f);
  f->path = lens_arena_strndup(&pv->arena, path, strlen(path));
  f->producer = s.fh.producer;
  if (!f->path) goto oom;
  int events = s.fh.producer != LENS_PRODUCER_SCHED; /* probe traces hold no events */
  struct lens_chunk_hdr h;
  const uint8_t *p;
  int rc;
  while ((rc = lens_cstream_next(&s, &h, &p, err, err_len)) == 1) {
    int bad = 0;
    switch (h.type) {
    case LENS_CHUNK_SESSION: {
      struct lens_session ss;
      copy_in(&ss, sizeof ss, p, h.payload_len);
      if (!f->pid) f->pid = ss.pid;
      break;
    }
    case LENS_CHUNK_THREAD: bad = events && on_thread(c, h.session, p, h.payload_len); break;
    case LENS_CHUNK_COMM: bad = events && on_comm(c, h.session, p, h.payload_len); break;
    case LENS_CHUNK_STRINGS: bad = on_strings(c, h.session, p, h.payload_len); break;
    case LENS_CHUNK_EVENTS: bad = events && read_events(c, h.session, p, h.payload_len); break;
    case LENS_CHUNK_EVENTS_PACKED: {
      struct lens_packed_hdr ph;
      const uint8_t *body;
      size_t body_len;
      if (!events) break;
      int u = lens_unpack_body(&pv->unpacker, p, h.payload_len, &f->bad_records, &ph, &body, &body_len);
      bad = u < 0 || (u > 0 && read_packed(c, h.session, &ph, body, body_len));
      break;
    }
    default: break; /* the rest is the general model's (lensread.h) */
    }
    if (bad) goto oom;
  }
  if (rc < 0) {
    lens_cstream_close(&s);
    free_file_state(pv);
    return -1;
  }
  resolve_later(c);
  f->bytes = s.bytes;
  f->truncated_bytes = s.truncated_bytes;
  f->truncation = s.truncation;
  f->lost_chunks = s.lost_chunks;
  f->damaged_bytes = s.damaged_bytes;
  f->damaged_chunks = s.damaged_chunks;
  lens_cstream_close(&s);
  free_file_state(pv);
  return 0;
oom:
  snprintf(err, err_len, "out of memory reading %s", path);
  lens_cstream_close(&s);
  free_file_state(pv);
  return -1;
}

void lens_cols_clear(struct lens_cols *c) {
  if (!c) return;
  for (unsigned t = 0; t < LENS_T_COUNT; t++) c->t[t].n = 0;
  c->priv->first_cap = 0; /* as a new set: from the next file's size */
  c->n_threads = c->n_comms = c->n_files = 0;
  lens_hash_free(&c->priv->strings); /* the strings and the files' paths */
  lens_arena_free(c->priv->arena);
  c->priv->arena = NULL;
}

void lens_cols_free(struct lens_cols *c) {
  if (!c) return;
  for (unsigned t = 0; t < LENS_T_COUNT; t++) {
    struct lens_cols_type *x = &c->t[t];
    free(x->id), free(x->start), free(x->stop), free(x->parent), free(x->thread), free(x->flags);
    free(x->n_states), free(x->comm), free(x->stop_gpu), free(x->payload);
  }
  free(c->threads);
  free(c->comms);
  free(c->files);
  if (c->priv) {
    free_file_state(c->priv);
    lens_hash_free(&c->priv->strings);
    lens_arena_free(c->priv->arena);
    lens_unpacker_release(&c->priv->unpacker);
    free(c->priv);
  }
  free(c);
}

/* ---- the floor ---- */

int lens_cols_scan(const char *path, int upto, struct lens_scan_counts *out, char *err, size_t err_len) {
  struct lens_cstream s;
  if (lens_cstream_open(&s, path, READ_BLOCK, err, err_len)) return -1;
  struct lens_unpacker u = {0};
  uint64_t bad = 0, sum = 0;
  struct lens_chunk_hdr h;
  const uint8_t *p;
  int rc;
  while ((rc = lens_cstream_next(&s, &h, &p, err, err_len)) == 1) {
    uint32_t len = h.payload_len;
    if (upto == LENS_SCAN_CRC) continue;
    if (upto == LENS_SCAN_ZSTD) {
      struct lens_packed_hdr ph;
      if (h.type != LENS_CHUNK_EVENTS_PACKED || len < sizeof ph) continue;
      memcpy(&ph, p, sizeof ph);
      if (ph.codec != LENS_PACK_CODEC_ZSTD || ph.body_bytes > LENS_UNPACK_MAX) continue;
      if (ph.body_bytes > u.cap_unzstd) {
        if (grow((void **)&u.unzstd, ph.body_bytes, 1)) break;
        u.cap_unzstd = ph.body_bytes;
      }
      if (!u.dctx && !(u.dctx = ZSTD_createDCtx())) break;
      size_t got = ZSTD_decompressDCtx(u.dctx, u.unzstd, ph.body_bytes, p + sizeof ph, len - sizeof ph);
      sum += ZSTD_isError(got) ? 0 : got;
      continue;
    }
    if (h.type == LENS_CHUNK_EVENTS_PACKED) {
      /* As the columns read them: the varint stream decoded in place. */
      struct lens_packed_hdr ph;
      const uint8_t *body;
      size_t body_len;
      int r = lens_unpack_body(&u, p, h.payload_len, &bad, &ph, &body, &body_len);
      if (r < 0) {
        snprintf(err, err_len, "out of memory");
        rc = -1;
        break;
      }
      if (!r) continue;
      struct lens_unpack_cur cur;
      struct lens_unpacked rec;
      lens_unpack_init(&cur, body, body_len, ph.raw_bytes);
      for (uint32_t i = 0; i < ph.count && lens_unpack_next(&cur, &rec); i++) {
        unsigned kind = rec.kind;
        if (!kind) { /* RAW: the fixed record's own header, id and time */
          struct lens_rec_hdr rh;
          memcpy(&rh, rec.raw, sizeof rh);
          if (rh.size < 24) continue;
          kind = rh.kind;
          memcpy(&rec.id, rec.raw + 8, 8);
          memcpy(&rec.ts, rec.raw + (kind == LENS_REC_START && rh.size >= 40 ? 32 : 16), 8);
        }
        sum += rec.id ^ rec.ts;
        out->starts += kind == LENS_REC_START;
        out->stops += kind == LENS_REC_STOP;
        out->states += kind == LENS_REC_STATE;
      }
      continue;
    } else if (h.type != LENS_CHUNK_EVENTS) {
      continue;
    }
    struct lens_events_hdr eh;
    if (len < sizeof eh) continue;
    memcpy(&eh, p, sizeof eh);
    size_t off = sizeof eh;
    for (uint32_t i = 0; i < eh.count && len - off >= 24; i++) {
      struct lens_rec_hdr rh;
      memcpy(&rh, p + off, sizeof rh);
      if (rh.size < 24 || (rh.size & 7) || rh.size > len - off) break;
      uint64_t id, ts;
      memcpy(&id, p + off + 8, 8);
      /* ts: a START's is after its parent and context; a STOP's and STATE's right after the id. */
      memcpy(&ts, p + off + (rh.kind == LENS_REC_START && rh.size >= 40 ? 32 : 16), 8);
      sum += id ^ ts;
      out->starts += rh.kind == LENS_REC_START;
      out->stops += rh.kind == LENS_REC_STOP;
      out->states += rh.kind == LENS_REC_STATE;
      off += rh.size;
    }
  }
  out->bytes += s.bytes;
  out->checksum += sum;
  lens_cstream_close(&s);
  lens_unpacker_release(&u);
  return rc < 0 ? -1 : 0;
}
