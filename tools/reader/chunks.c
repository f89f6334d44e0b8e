/* Pass A over a file's chunks: sessions, comms, threads, strings, drops,
 * notes, CUPTI blobs and scheduler samples. Payloads shorter than the struct
 * they hold are zero-extended (older writers); longer ones are accepted
 * (newer writers add fields at the end). */
#include <stdlib.h>
#include <string.h>

#include "lens_checked.h"
#include "reader_priv.h"
#include "lens_utf8.h"

/* Copy up to sizeof(*dst) bytes of payload into a zeroed dst. */
static void copy_in(void *dst, size_t dst_len, const uint8_t *p, uint32_t len) {
  memset(dst, 0, dst_len);
  memcpy(dst, p, len < dst_len ? len : dst_len);
}

static void copy_cstr(char *dst, size_t dst_len, const char *src) {
  size_t n = strnlen(src, dst_len - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
  lens_label_clean(dst, dst_len); /* a name from the file: printable (names.c) */
}

struct lens_sess *lens_builder_session(struct lens_builder *b, uint32_t number) {
  for (size_t i = b->n_sess; i-- > 0;)
    if (b->sess[i].number == number) return &b->sess[i];
  struct lens_sess *s = LENS_VEC_PUSH(b, b->sess, b->n_sess, cap_sess);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->number = number;
  return s;
}

static int on_session(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  struct lens_sess *s = lens_builder_session(b, session);
  if (!s) return lens_builder_oom(b);
  int again = s->has_session; /* the writer re-sends SESSION after losing a chunk */
  copy_in(&s->s, sizeof s->s, p, len);
  s->s.host[sizeof s->s.host - 1] = 0;
  s->s.plugin_version[sizeof s->s.plugin_version - 1] = 0;
  lens_label_clean(s->s.host, sizeof s->s.host);
  lens_label_clean(s->s.plugin_version, sizeof s->s.plugin_version);
  s->has_session = 1;
  struct lens_file *f = &b->m->files[b->file];
  if (again) return 0;
  f->n_sessions++;
  f->clean_end = 0;
  if (b->proc < 0) return 0;
  struct lens_proc *pr = &b->m->procs[b->proc];
  if (f->n_sessions == 1) {
    pr->pid = s->s.pid;
    pr->outer_pid = s->s.outer_pid ? s->s.outer_pid : s->s.pid;
    copy_cstr(pr->host, sizeof pr->host, s->s.host);
    pr->start_mono_ns = s->s.start_mono_ns;
    pr->start_real_ns = s->s.start_real_ns;
  }
  if (s->s.nccl_api_version) pr->nccl_api_version = s->s.nccl_api_version;
  pr->event_mask = s->s.event_mask;
  pr->flags = s->s.flags;
  if (s->s.lib_version || s->s.lib_kind) {
    pr->lib_version = s->s.lib_version;
    pr->lib_kind = s->s.lib_kind;
    pr->lib_flags = s->s.lib_flags;
  }
  return 0;
}

static int on_comm(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  if (b->proc < 0) return 0;
  struct lens_comm_rec r;
  copy_in(&r, sizeof r, p, len);
  r.name[sizeof r.name - 1] = 0;
  struct lens_model *m = b->m;
  int64_t idx;
  struct lens_comm *c;
  if (lens_hash_get(&b->comms, lens_hash_scope((uint32_t)b->proc, session), r.context, &idx)) {
    c = &m->comms[idx]; /* re-sent: the latest wins */
  } else {
    c = LENS_VEC_PUSH(b, m->comms, m->n_comms, cap_comms);
    if (!c) return lens_builder_oom(b);
    memset(c, 0, sizeof *c);
    idx = (int64_t)(m->n_comms - 1);
    if (lens_hash_put(&b->comms, lens_hash_scope((uint32_t)b->proc, session), r.context, idx))
      return lens_builder_oom(b);
  }
  uint64_t fini = c->fini_mono_ns;
  c->proc = b->proc;
  c->context = r.context;
  c->comm_id = r.comm_id;
  c->rank = r.rank;
  c->nranks = r.nranks;
  c->nnodes = r.nnodes;
  c->comm_index = r.comm_index;
  c->api_version = r.api_version;
  c->init_mono_ns = r.init_mono_ns;
  c->fini_mono_ns = fini;
  copy_cstr(c->name, sizeof c->name, r.name);
  return 0;
}

static int on_comm_fini(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  if (b->proc < 0) return 0;
  struct lens_comm_fini r;
  copy_in(&r, sizeof r, p, len);
  int64_t idx;
  if (lens_hash_get(&b->comms, lens_hash_scope((uint32_t)b->proc, session), r.context, &idx))
    b->m->comms[idx].fini_mono_ns = r.fini_mono_ns;
  return 0;
}

int32_t lens_builder_new_thread(struct lens_builder *b, uint32_t session, uint32_t slot, int32_t prev) {
  struct lens_model *m = b->m;
  struct lens_thread *t = LENS_VEC_PUSH(b, m->threads, m->n_threads, cap_threads);
  if (!t) return -1;
  memset(t, 0, sizeof *t);
  t->proc = b->proc;
  t->slot = slot;
  t->proxy_rank = -1;
  t->proxy_comm = -1;
  int64_t idx = (int64_t)(m->n_threads - 1);
  if (lens_vec_reserve((void **)&b->thread_tmp, &b->cap_thread_tmp, m->n_threads, sizeof *b->thread_tmp) ||
      lens_hash_put(&b->threads, lens_hash_scope((uint32_t)b->proc, session), slot, idx))
    return -1;
  b->thread_tmp[idx] = (struct lens_thread_tmp){.session = session, .from_chunk = b->chunk, .prev = prev};
  return (int32_t)idx;
}

/* The writer announces a slot (THREAD) before draining its ring, and frees a
 * retiring slot only once its ring is empty, so every EVENTS chunk of an
 * exited thread precedes the THREAD chunk of the slot's next owner. A THREAD
 * with the same tid re-announces changed roles (the latest wins); another
 * tid is a new owner and gets its own entry. */
static int on_thread(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  if (b->proc < 0) return 0;
  struct lens_thread_rec r;
  copy_in(&r, sizeof r, p, len);
  r.name[sizeof r.name - 1] = 0;
  struct lens_model *m = b->m;
  int64_t idx;
  int known = lens_hash_get(&b->threads, lens_hash_scope((uint32_t)b->proc, session), r.slot, &idx);
  int32_t ti = known ? (int32_t)idx : -1;
  if (!known || m->threads[ti].tid != r.tid) {
    ti = lens_builder_new_thread(b, session, r.slot, ti);
    if (ti < 0) return lens_builder_oom(b);
  }
  struct lens_thread *t = &m->threads[ti];
  memset(t, 0, sizeof *t);
  t->proc = b->proc;
  t->slot = r.slot;
  t->tid = r.tid;
  t->outer_tid = r.outer_tid ? r.outer_tid : r.tid;
  t->roles = r.roles;
  t->proxy_rank = r.proxy_rank;
  /* Resolved to a comm index in lens_resolve_model (the COMM may come later). */
  t->proxy_comm = r.proxy_comm_index == UINT32_MAX ? -1 : -2 - (int32_t)(r.proxy_comm_index & 0x3FFFFFFF);
  t->first_mono_ns = r.first_mono_ns;
  copy_cstr(t->name, sizeof t->name, r.name);
  return 0;
}

int lens_strings_put(struct lens_arena_block **arena, struct lens_hash *h, uint32_t file, uint32_t session,
                     const uint8_t *p, uint32_t len) {
  uint32_t off = 0;
  while (len - off >= 6) {
    uint32_t id;
    uint16_t sl;
    memcpy(&id, p + off, 4);
    memcpy(&sl, p + off + 4, 2);
    off += 6;
    if (sl > len - off) break; /* malformed tail: keep what came before */
    char *s = (char *)lens_arena_strndup(arena, p + off, sl);
    if (s) lens_label_clean(s, (size_t)sl + 1);
    if (!s || lens_hash_put(h, lens_hash_scope(file, session), id, (int64_t)(intptr_t)s)) return -1;
    off += sl;
  }
  return 0;
}

static int on_strings(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  if (lens_strings_put(&b->priv->arena, &b->strings, (uint32_t)b->file, session, p, len)) return lens_builder_oom(b);
  return 0;
}

/* Counters are cumulative within a session: the latest is that session's
 * total. Sessions are summed into the proc at the end of the file. */
static int on_drops(struct lens_builder *b, uint32_t session, const uint8_t *p, uint32_t len) {
  if (b->proc < 0) return 0;
  struct lens_sess *s = lens_builder_session(b, session);
  if (!s) return lens_builder_oom(b);
  struct lens_drops d;
  copy_in(&d, sizeof d, p, len);
  if (!s->has_drops || d.at_mono_ns >= s->drops.at_mono_ns) s->drops = d;
  s->has_drops = 1;
  return 0;
}

static int on_clock(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  if (b->proc < 0) return 0;
  struct lens_clock_sample *c = LENS_VEC_PUSH(b, b->m->clocks, b->m->n_clocks, cap_clocks);
  if (!c) return lens_builder_oom(b);
  c->proc = b->proc;
  copy_in(&c->r, sizeof c->r, p, len);
  /* A sample with a time past 2^62 ns (lens_checked.h) is no clock reading:
   * left out, so that the alignment computes on times whose differences fit. */
  if (!lens_time_ok(c->r.mono_before_ns) || !lens_time_ok(c->r.mono_after_ns) || !lens_time_ok(c->r.real_ns) ||
      !lens_time_ok(c->r.ntp_maxerror_ns) || !lens_stime_ok(c->r.timens_mono_offset_ns)) {
    b->m->n_clocks--;
    return 0;
  }
  c->r.boot_id[sizeof c->r.boot_id - 1] = 0;
  c->r.host[sizeof c->r.host - 1] = 0;
  lens_label_clean(c->r.boot_id, sizeof c->r.boot_id);
  lens_label_clean(c->r.host, sizeof c->r.host);
  return 0;
}

static int on_note(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  struct lens_note_hdr h;
  if (len < sizeof h) return 0;
  memcpy(&h, p, sizeof h);
  uint32_t tl = len - (uint32_t)sizeof h;
  if (h.len < tl) tl = h.len;
  struct lens_note *n = LENS_VEC_PUSH(b, b->m->notes, b->m->n_notes, cap_notes);
  if (!n) return lens_builder_oom(b);
  n->proc = b->proc;
  n->at_mono_ns = h.at_mono_ns;
  n->level = h.level;
  size_t tn = strnlen((const char *)p + sizeof h, tl);
  char *text = (char *)lens_arena_strndup(&b->priv->arena, p + sizeof h, tn);
  if (!text) return lens_builder_oom(b);
  lens_label_clean(text, tn + 1);
  n->text = text;
  return 0;
}

static int on_cupti(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  struct lens_cupti_hdr h;
  if (len < sizeof h) return 0;
  memcpy(&h, p, sizeof h);
  struct lens_cupti_blob *c = LENS_VEC_PUSH(b, b->m->cupti, b->m->n_cupti, cap_cupti);
  if (!c) return lens_builder_oom(b);
  c->proc = b->proc;
  c->delivered_mono_ns = h.delivered_mono_ns;
  c->cupti_api_version = h.cupti_api_version;
  c->dropped_records = h.dropped_records;
  c->data = p + sizeof h;
  c->len = len - sizeof h;
  if (h.valid_bytes < c->len) c->len = h.valid_bytes;
  return 0;
}

static int on_sched(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  struct lens_sched_hdr h;
  if (len < sizeof h) return 0;
  memcpy(&h, p, sizeof h);
  size_t avail = (len - sizeof h) / sizeof(struct lens_sched_sample);
  size_t n = h.count < avail ? h.count : avail;
  struct lens_model *m = b->m;
  if (lens_vec_reserve((void **)&m->sched, &b->cap_sched, m->n_sched + n, sizeof *m->sched))
    return lens_builder_oom(b);
  for (size_t i = 0; i < n; i++) {
    struct lens_sched *s = &m->sched[m->n_sched++];
    s->file = b->file;
    memcpy(&s->s, p + sizeof h + i * sizeof s->s, sizeof s->s);
    s->s.culprit_comm[sizeof s->s.culprit_comm - 1] = 0;
    lens_label_clean(s->s.culprit_comm, sizeof s->s.culprit_comm); /* another user's process name */
  }
  return 0;
}

static int on_sched_hist(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  struct lens_sched_hist *h = LENS_VEC_PUSH(b, b->m->sched_hist, b->m->n_sched_hist, cap_sched_hist);
  if (!h) return lens_builder_oom(b);
  copy_in(h, sizeof *h, p, len);
  return 0;
}

static int on_fini(struct lens_builder *b, const uint8_t *p, uint32_t len) {
  struct lens_fini fi;
  copy_in(&fi, sizeof fi, p, len);
  struct lens_file *f = &b->m->files[b->file];
  f->clean_end = 1;
  f->fini_reason = fi.reason;
  return 0;
}

int lens_read_meta_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len) {
  struct lens_chunk_hdr h;
  memcpy(&h, hp, sizeof h);
  if (!lens_builder_session(b, h.session)) return lens_builder_oom(b); /* every session number is known */
  switch (h.type) {
  case LENS_CHUNK_SESSION: return on_session(b, h.session, p, len);
  case LENS_CHUNK_COMM: return on_comm(b, h.session, p, len);
  case LENS_CHUNK_COMM_FINI: return on_comm_fini(b, h.session, p, len);
  case LENS_CHUNK_THREAD: return on_thread(b, h.session, p, len);
  case LENS_CHUNK_STRINGS: return on_strings(b, h.session, p, len);
  case LENS_CHUNK_DROPS: return on_drops(b, h.session, p, len);
  case LENS_CHUNK_NOTE: return on_note(b, p, len);
  case LENS_CHUNK_CLOCK: return on_clock(b, p, len);
  case LENS_CHUNK_CUPTI: return on_cupti(b, p, len);
  case LENS_CHUNK_SCHED: return on_sched(b, p, len);
  case LENS_CHUNK_SCHED_HIST: return on_sched_hist(b, p, len);
  case LENS_CHUNK_FINI: return on_fini(b, p, len);
  default: return 0; /* EVENTS in pass B; unknown types are skipped (newer writer) */
  }
}
