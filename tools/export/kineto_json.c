/* See kineto_json.h. Pass 1 is yajl's (libyajl: a full, validating JSON
 * parser); pass 2 only has to find boundaries in bytes pass 1 proved to be
 * one valid JSON document (checked by CRC), so it tracks strings and
 * nesting and nothing else. */
#define _GNU_SOURCE
#include "export/kineto_json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "lens_safe_fs.h"

#define KJ_BLOCK (256u << 10)
#define KJ_MAX_INPUT ((off_t)64 << 30) /* a compressed Kineto file beyond this is refused */

static void seterr(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
}

/* Appends part bytes of the event being edited to its buffer (held whole, at
 * most KJ_MAX_EDIT_EVENT). 0, or -1 with err set. */
static int ev_append(char **ev, size_t *ev_n, size_t *ev_cap, const char *part_p, size_t part, const char *in_path,
                     uint64_t ev_index, char *err, size_t err_len) {
  if (*ev_n + part > KJ_MAX_EDIT_EVENT) {
    seterr(err, err_len, "%s: NCCL kernel event %" PRIu64 " is over %u MiB", in_path, ev_index,
           KJ_MAX_EDIT_EVENT >> 20);
    return -1;
  }
  if (*ev_n + part > *ev_cap) {
    size_t cap = (*ev_n + part) * 2;
    char *ne = realloc(*ev, cap);
    if (!ne) {
      seterr(err, err_len, "out of memory");
      return -1;
    }
    *ev = ne, *ev_cap = cap;
  }
  memcpy(*ev + *ev_n, part_p, part);
  *ev_n += part;
  return 0;
}

int kj_is_nccl_kernel(const char *name) {
  return !strncmp(name, "ncclDevKernel", 13) || !strncmp(name, "ncclKernel", 10);
}

/* Opens a user-named input: no symbolic link followed, a regular file. */
static gzFile open_in(const char *path, char *err, size_t err_len) {
  struct stat st;
  char why[128];
  int fd = lens_file_open_read(AT_FDCWD, path, LENS_ANY_UID, KJ_MAX_INPUT, &st, why, sizeof why);
  if (fd < 0) {
    seterr(err, err_len, "cannot read %s: %s", path, why);
    return NULL;
  }
  /* O_NONBLOCK served the open (no FIFO blocks it); a regular file reads the same without. */
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  gzFile g = gzdopen(fd, "rb");
  if (!g) {
    close(fd);
    seterr(err, err_len, "cannot read %s: out of memory", path);
    return NULL;
  }
  gzbuffer(g, KJ_BLOCK);
  return g;
}

/* ---- numbers as Kineto writes them ---- */

/* An integer in JSON number text ("7", "-1", "7.0"); 0 ok, -1 not one. */
static int num_int(const char *s, size_t n, int64_t *out) {
  char b[40];
  if (!n || n >= sizeof b) return -1;
  memcpy(b, s, n), b[n] = 0;
  char *end;
  errno = 0;
  long long v = strtoll(b, &end, 10);
  if (!errno && !*end) return *out = v, 0;
  long double d = strtold(b, &end);
  if (*end || d != d || d > 9.2e18L || d < -9.2e18L || d != (long double)(long long)d) return -1;
  return *out = (long long)d, 0;
}

/* Microseconds (Kineto's ts/dur: "1365627949863.953", integers in old files)
 * to ns, exactly for plain decimals (no binary rounding); 0 ok, -1 not one. */
static int num_us_ns(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') neg = 1, i++;
  uint64_t ip = 0, fp = 0;
  size_t id = 0, fd = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, id++) {
    if (ip > 900000000000000ull) return -1; /* ip * 10 stays below 9.2e15 us: ns fit int64 */
    ip = ip * 10 + (uint64_t)(s[i] - '0');
  }
  int round_up = 0;
  if (i < n && s[i] == '.') {
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, fd++) {
      if (fd < 3)
        fp = fp * 10 + (uint64_t)(s[i] - '0');
      else if (fd == 3)
        round_up = s[i] >= '5';
    }
  }
  if (i < n) { /* an exponent: let long double do it (not Kineto's form) */
    char b[64];
    if (n >= sizeof b) return -1;
    memcpy(b, s, n), b[n] = 0;
    char *end;
    long double d = strtold(b, &end) * 1000.0L;
    if (*end || d != d || d > 9.2e18L || d < -9.2e18L) return -1;
    *out = (int64_t)(d < 0 ? d - 0.5L : d + 0.5L);
    return 0;
  }
  if (!id) return -1;
  for (size_t k = fd; k < 3; k++) fp *= 10;
  int64_t v = (int64_t)(ip * 1000 + fp + (uint64_t)round_up);
  *out = neg ? -v : v;
  return 0;
}

/* ---- pass 1 ---- */

enum { F_NONE, F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS };

struct sctx {
  struct kj_scan *s;
  int lv; /* containers open */
  char top_key[32];
  int events_lv; /* 2 while traceEvents' array is open, else 0 */
  int dist_open; /* distributedInfo's object open at level 2 */
  char dist_key[16];
  int in_event;  /* an object element of traceEvents is open (level 3) */
  int ev_field;  /* key just read in an event */
  int args_open; /* the event's args object open (level 4) */
  int args_corr; /* next value is args.correlation */
  struct {
    char cat[24], name[KJ_NAME_MAX];
    int have_pid, have_tid, have_ts, have_dur;
    int64_t pid, tid, ts, dur, corr;
  } ev;
  int oom;
};

static void keycpy(char *dst, size_t cap, const unsigned char *k, size_t n) {
  if (n >= cap) n = cap - 1; /* a long key is not one of ours: a cut copy cannot equal ours either */
  memcpy(dst, k, n), dst[n] = 0;
  if (n == cap - 1) dst[0] = '\1';
}

static int field_of(const unsigned char *k, size_t n) {
#define IS(str) (n == sizeof(str) - 1 && !memcmp(k, str, n))
  if (IS("ph")) return F_PH;
  if (IS("cat")) return F_CAT;
  if (IS("name")) return F_NAME;
  if (IS("pid")) return F_PID;
  if (IS("tid")) return F_TID;
  if (IS("ts")) return F_TS;
  if (IS("dur")) return F_DUR;
  if (IS("args")) return F_ARGS;
  return F_NONE;
#undef IS
}

static int on_key(void *c, const unsigned char *k, size_t n) {
  struct sctx *x = c;
  if (x->lv == 1) {
    keycpy(x->top_key, sizeof x->top_key, k, n);
    if (!strcmp(x->top_key, "nccl_lens")) x->s->already_merged = 1;
  } else if (x->lv == 2 && x->dist_open) {
    keycpy(x->dist_key, sizeof x->dist_key, k, n);
  } else if (x->lv == 3 && x->in_event) {
    x->ev_field = field_of(k, n);
  } else if (x->lv == 4 && x->args_open) {
    x->args_corr = n == 11 && !memcmp(k, "correlation", 11);
  }
  return 1;
}

/* A scalar value (string or number text; num says which). */
static void scalar(struct sctx *x, const char *v, size_t n, int num) {
  struct kj_scan *s = x->s;
  if (x->lv == 1 && num && !strcmp(x->top_key, "baseTimeNanoseconds")) {
    int64_t b;
    if (!num_int(v, n, &b)) s->have_base = 1, s->base_ns = b;
  } else if (x->lv == 2 && x->dist_open && num) {
    int64_t r;
    if (num_int(v, n, &r)) return;
    if (!strcmp(x->dist_key, "rank"))
      s->have_rank = 1, s->rank = r;
    else if (!strcmp(x->dist_key, "world_size"))
      s->world_size = r;
  } else if (x->lv == 3 && x->in_event) {
    switch (x->ev_field) {
      case F_CAT:
        if (!num) keycpy(x->ev.cat, sizeof x->ev.cat, (const unsigned char *)v, n);
        break;
      case F_NAME:
        if (!num) {
          size_t k = n < KJ_NAME_MAX - 1 ? n : KJ_NAME_MAX - 1;
          memcpy(x->ev.name, v, k), x->ev.name[k] = 0;
        }
        break;
      case F_PID:
        x->ev.have_pid = num && !num_int(v, n, &x->ev.pid);
        break;
      case F_TID:
        x->ev.have_tid = num && !num_int(v, n, &x->ev.tid);
        break;
      case F_TS:
        x->ev.have_ts = num && !num_us_ns(v, n, &x->ev.ts);
        break;
      case F_DUR:
        x->ev.have_dur = num && !num_us_ns(v, n, &x->ev.dur);
        break;
      default:
        break;
    }
    x->ev_field = F_NONE;
  } else if (x->lv == 4 && x->args_open && x->args_corr && num) {
    if (num_int(v, n, &x->ev.corr)) x->ev.corr = -1;
    x->args_corr = 0;
  }
}

static int on_null(void *c) {
  struct sctx *x = c;
  if (x->lv == 3) x->ev_field = F_NONE;
  return 1;
}
static int on_bool(void *c, int b) {
  (void)b;
  return on_null(c);
}
static int on_num(void *c, const char *v, size_t n) {
  scalar(c, v, n, 1);
  return 1;
}
static int on_str(void *c, const unsigned char *v, size_t n) {
  scalar(c, (const char *)v, n, 0);
  return 1;
}

static int open_container(struct sctx *x, int is_map) {
  if (x->lv == 1 && !is_map && !strcmp(x->top_key, "traceEvents") && !x->s->have_trace_events) {
    x->events_lv = 2;
    x->s->have_trace_events = 1;
  } else if (x->lv == 1 && is_map && !strcmp(x->top_key, "distributedInfo")) {
    x->dist_open = 1;
    x->dist_key[0] = 0;
  } else if (x->lv == 2 && x->events_lv && is_map) {
    memset(&x->ev, 0, sizeof x->ev);
    x->ev.corr = -1;
    x->in_event = 1;
  } else if (x->lv == 3 && x->in_event && is_map && x->ev_field == F_ARGS) {
    x->args_open = 1;
    x->args_corr = 0;
  }
  if (x->lv == 3) x->ev_field = F_NONE;
  x->lv++;
  return 1;
}

static int on_start_map(void *c) { return open_container(c, 1); }
static int on_start_array(void *c) { return open_container(c, 0); }

static void end_event(struct sctx *x) {
  struct kj_scan *s = x->s;
  s->n_events++;
  if (!strcmp(x->ev.cat, "cpu_op") || !strcmp(x->ev.cat, "cuda_runtime") || !strcmp(x->ev.cat, "cuda_driver")) {
    int seen = !x->ev.have_pid;
    for (size_t i = 0; i < s->n_cpu_pids && !seen; i++) seen = s->cpu_pids[i] == x->ev.pid;
    if (!seen && s->n_cpu_pids < KJ_CPU_PIDS) s->cpu_pids[s->n_cpu_pids++] = x->ev.pid;
  }
  if (strcmp(x->ev.cat, "kernel")) return;
  s->n_kernels_all++;
  if (x->ev.have_tid && x->ev.tid > s->max_tid_gpu) s->max_tid_gpu = x->ev.tid;
  if (!kj_is_nccl_kernel(x->ev.name)) return;
  if (!x->ev.have_pid || !x->ev.have_tid || !x->ev.have_ts || !x->ev.have_dur || x->ev.dur < 0) {
    s->kernels_unreadable++;
    return;
  }
  if (s->n_k == s->cap_k) {
    size_t cap = s->cap_k ? s->cap_k * 2 : 256;
    struct kj_kernel *k = cap <= KJ_MAX_KERNELS ? realloc(s->k, cap * sizeof *k) : NULL;
    if (!k) {
      x->oom = 1;
      return;
    }
    s->k = k, s->cap_k = cap;
  }
  struct kj_kernel *k = &s->k[s->n_k++];
  k->index = s->n_events - 1;
  k->pid = x->ev.pid, k->tid = x->ev.tid, k->ts_ns = x->ev.ts, k->dur_ns = x->ev.dur;
  k->correlation = x->ev.corr;
  memcpy(k->name, x->ev.name, sizeof k->name);
}

static int on_end(void *c) {
  struct sctx *x = c;
  x->lv--;
  if (x->lv == 3 && x->args_open)
    x->args_open = 0;
  else if (x->lv == 2 && x->in_event)
    end_event(x), x->in_event = 0; /* only an object element is an event */
  else if (x->lv == 1 && x->events_lv)
    x->events_lv = 0;
  else if (x->lv == 1 && x->dist_open)
    x->dist_open = 0;
  return !x->oom;
}

static const yajl_callbacks scan_cb = {on_null,      on_bool, NULL,   NULL,           on_num, on_str,
                                       on_start_map, on_key,  on_end, on_start_array, on_end};

int kj_scan_file(const char *path, struct kj_scan *s, char *err, size_t err_len) {
  memset(s, 0, sizeof *s);
  s->world_size = -1;
  s->max_tid_gpu = -1;
  gzFile g = open_in(path, err, err_len);
  if (!g) return -1;
  struct sctx x = {.s = s};
  yajl_handle h = yajl_alloc(&scan_cb, NULL, &x);
  unsigned char *buf = malloc(KJ_BLOCK);
  int rc = -1;
  if (!h || !buf) {
    seterr(err, err_len, "%s: out of memory", path);
    goto out;
  }
  s->crc = (uint32_t)crc32(0L, Z_NULL, 0);
  s->gzipped = -1;
  for (;;) {
    int n = gzread(g, buf, KJ_BLOCK);
    if (s->gzipped < 0) s->gzipped = !gzdirect(g);
    if (n < 0) {
      int zerr;
      const char *m = gzerror(g, &zerr);
      seterr(err, err_len, "%s: cannot read: %s", path, zerr == Z_ERRNO ? strerror(errno) : m);
      goto out;
    }
    if (n == 0) break;
    s->crc = (uint32_t)crc32(s->crc, buf, (unsigned)n);
    s->bytes += (uint64_t)n;
    if (yajl_parse(h, buf, (size_t)n) != yajl_status_ok) break;
  }
  {
    int zerr = Z_OK;
    gzerror(g, &zerr);
    if (zerr == Z_BUF_ERROR) { /* gzread's end before the gzip stream's: a cut .gz, not a JSON error */
      seterr(err, err_len, "%s: truncated (unexpected end of the gzip stream)", path);
      goto out;
    }
  }
  yajl_status st = x.oom ? yajl_status_client_canceled : yajl_complete_parse(h);
  if (x.oom) {
    seterr(err, err_len, "%s: more than %d NCCL kernels, or out of memory", path, KJ_MAX_KERNELS);
    goto out;
  }
  if (st != yajl_status_ok) {
    unsigned char *m = yajl_get_error(h, 0, NULL, 0);
    char *nl = m ? strchr((char *)m, '\n') : NULL;
    if (nl) *nl = 0;
    seterr(err, err_len, "%s is not a JSON document: %s", path, m ? (char *)m : "parse error");
    if (m) yajl_free_error(h, m);
    goto out;
  }
  if (!s->have_trace_events) {
    seterr(err, err_len, "%s has no traceEvents array: not a Chrome trace", path);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  if (h) yajl_free(h);
  gzclose(g);
  return rc;
}

void kj_scan_free(struct kj_scan *s) {
  free(s->k);
  s->k = NULL;
  s->n_k = s->cap_k = 0;
}

/* ---- pass 2 ---- */

struct kw {
  gzFile gz;
  int fd;
  int err;
  int skip_comma; /* drop a leading comma (the first element written into an empty array) */
};

static void kw_put(struct kw *w, const void *p, size_t n) {
  const char *c = p;
  while (n && !w->err) {
    unsigned part = n > (1u << 30) ? (1u << 30) : (unsigned)n;
    if (w->gz) {
      int r = gzwrite(w->gz, c, part);
      if (r <= 0) {
        w->err = 1;
        return;
      }
      c += r, n -= (size_t)r;
    } else {
      ssize_t r = write(w->fd, c, part);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        w->err = 1;
        return;
      }
      c += r, n -= (size_t)r;
    }
  }
}

/* The output as a stdio stream (fopencookie), for what a callback writes. */
static ssize_t kw_cookie_write(void *c, const char *p, size_t n) {
  struct kw *w = c;
  size_t skip = 0;
  if (w->skip_comma && n) {
    w->skip_comma = 0;
    skip = p[0] == ',';
  }
  kw_put(w, p + skip, n - skip);
  return w->err ? -1 : (ssize_t)n;
}
static const cookie_io_functions_t kw_funcs = {NULL, kw_cookie_write, NULL, NULL};

/* What a callback wrote into memory. */
struct membuf {
  char *p;
  size_t n;
  FILE *f;
};
static int mem_open(struct membuf *m) {
  m->p = NULL, m->n = 0;
  m->f = open_memstream(&m->p, &m->n);
  return m->f ? 0 : -1;
}
static int mem_close(struct membuf *m) {
  int bad = ferror(m->f);
  bad |= fclose(m->f);
  m->f = NULL;
  return bad ? -1 : 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Writes one buffered event (a JSON object, as read) with members appended
 * at the end of its args object (or an args object appended when it has
 * none). ins starts with a comma. */
static void put_edited(struct kw *w, const char *b, size_t n, const char *ins, size_t ins_n) {
  int depth = 0, in_str = 0, esc = 0, key_args = 0, pending = 0, after_colon = 0;
  size_t ks = 0, args_open = 0, args_close = 0, best_open = 0, best_close = 0;
  int in_args = 0;
  for (size_t i = 0; i < n; i++) {
    char c = b[i];
    if (in_str) {
      if (esc)
        esc = 0;
      else if (c == '\\')
        esc = 1;
      else if (c == '"') {
        in_str = 0;
        if (depth == 1) pending = (i - ks == 4 && !memcmp(b + ks, "args", 4));
      }
      continue;
    }
    if (is_ws(c)) continue;
    if (c == '"') {
      in_str = 1, ks = i + 1;
      after_colon = 0;
      continue;
    }
    if (c == ':' && depth == 1) {
      key_args = pending, pending = 0, after_colon = 1;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 1 && after_colon && key_args && c == '{') in_args = 1, args_open = i;
      depth++;
    } else if (c == '}' || c == ']') {
      depth--;
      if (depth == 1 && in_args) {
        in_args = 0, args_close = i;
        best_open = args_open, best_close = args_close; /* the last args wins, as JSON readers take it */
      }
    }
    after_colon = 0, key_args = 0, pending = 0;
  }
  if (best_close) {
    int empty = 1;
    for (size_t i = best_open + 1; i < best_close && empty; i++) empty = is_ws(b[i]);
    kw_put(w, b, best_close);
    kw_put(w, ins + empty, ins_n - (size_t)empty);
    kw_put(w, b + best_close, n - best_close);
    return;
  }
  size_t end = n; /* the object's closing brace */
  while (end > 0 && b[end - 1] != '}') end--;
  if (!end) {
    kw_put(w, b, n);
    return;
  }
  int empty = 1;
  for (size_t i = 1; i + 1 < end && empty; i++) empty = is_ws(b[i]);
  kw_put(w, b, end - 1);
  kw_put(w, empty ? "\"args\":{" : ",\"args\":{", empty ? 8 : 9);
  kw_put(w, ins + 1, ins_n - 1);
  kw_put(w, "}", 1);
  kw_put(w, b + end - 1, n - (end - 1));
}

int kj_rewrite(const char *in_path, const struct kj_scan *s, int out_fd, int gz, const struct kj_insert *ins, char *err,
               size_t err_len) {
  struct kw w = {.fd = out_fd};
  if (gz) {
    w.gz = gzdopen(out_fd, "wb");
    if (!w.gz) {
      close(out_fd);
      seterr(err, err_len, "out of memory");
      return -1;
    }
  }
  gzFile g = open_in(in_path, err, err_len);
  char *buf = malloc(KJ_BLOCK);
  char *ev = NULL;
  size_t ev_n = 0, ev_cap = 0;
  int rc = -1, buffering = 0;
  if (!g || !buf) {
    if (g) seterr(err, err_len, "out of memory");
    goto out;
  }
  uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
  uint64_t bytes = 0, ev_index = 0;
  size_t next_edit = 0;
  /* scanner state */
  int depth = 0, in_str = 0, esc = 0, pending = 0, key_events = 0, events_open = 0, events_done = 0, seen_elem = 0;
  char key[16];
  size_t key_n = 0;
  int key_long = 0;
  for (;;) {
    int n = gzread(g, buf, KJ_BLOCK);
    if (n < 0) {
      seterr(err, err_len, "%s: read error", in_path);
      goto out;
    }
    if (n == 0) break;
    crc = (uint32_t)crc32(crc, (const unsigned char *)buf, (unsigned)n);
    bytes += (uint64_t)n;
    size_t run = 0; /* bytes of buf from run on are not yet written (or buffered) */
    for (size_t i = 0; i < (size_t)n; i++) {
      char c = buf[i];
      if (in_str) {
        if (esc)
          esc = 0;
        else if (c == '\\')
          esc = 1;
        else if (c == '"') {
          in_str = 0;
          if (depth == 1) pending = 1;
        } else if (depth == 1) {
          if (key_n < sizeof key - 1)
            key[key_n++] = c;
          else
            key_long = 1;
        }
        continue;
      }
      if (is_ws(c)) continue;
      if (c == '"') {
        in_str = 1;
        if (depth == 1) key_n = 0, key_long = 0;
        if (depth == 2 && events_open) seen_elem = 1;
        continue;
      }
      if (c == ':' && depth == 1) {
        key_events = pending && !key_long && key_n == 11 && !memcmp(key, "traceEvents", 11);
        pending = 0;
        continue;
      }
      pending = 0;
      if (c == '{' || c == '[') {
        if (depth == 1 && c == '[' && key_events && !events_open && !events_done) events_open = 1;
        if (depth == 2 && events_open) {
          seen_elem = 1;
          if (c == '{') {
            if (next_edit < ins->n_edit && ins->edit[next_edit] == ev_index) {
              /* flush what came before, then hold this event whole */
              kw_put(&w, buf + run, i - run);
              run = i;
              buffering = 1;
              ev_n = 0;
            }
          }
        }
        depth++;
        key_events = 0;
        continue;
      }
      if (c == '}' || c == ']') {
        depth--;
        if (depth == 2 && events_open && c == '}') {
          if (buffering) {
            if (ev_append(&ev, &ev_n, &ev_cap, buf + run, i + 1 - run, in_path, ev_index, err, err_len)) goto out;
            run = i + 1;
            buffering = 0;
            struct membuf mb;
            if (mem_open(&mb)) {
              seterr(err, err_len, "out of memory");
              goto out;
            }
            if (ins->args_for) ins->args_for(ins->ctx, ev_index, mb.f);
            if (mem_close(&mb)) {
              free(mb.p);
              seterr(err, err_len, "out of memory");
              goto out;
            }
            if (mb.n && mb.p[0] == ',')
              put_edited(&w, ev, ev_n, mb.p, mb.n);
            else
              kw_put(&w, ev, ev_n);
            free(mb.p);
            next_edit++;
          }
          ev_index++;
        } else if (depth == 1 && events_open && c == ']') {
          kw_put(&w, buf + run, i - run);
          run = i;
          events_open = 0, events_done = 1;
          if (ins->tail) { /* streamed straight into the output: a rank's new events are never all in memory */
            w.skip_comma = !seen_elem;
            FILE *tf = fopencookie(&w, "w", kw_funcs);
            if (!tf) {
              seterr(err, err_len, "out of memory");
              goto out;
            }
            ins->tail(ins->ctx, tf);
            if (fclose(tf) || w.err) {
              seterr(err, err_len, "write error");
              goto out;
            }
          }
        } else if (depth == 0 && c == '}' && ins->meta) {
          kw_put(&w, buf + run, i - run);
          run = i;
          struct membuf mb;
          if (mem_open(&mb)) {
            seterr(err, err_len, "out of memory");
            goto out;
          }
          fputs(",\"nccl_lens\":", mb.f);
          ins->meta(ins->ctx, mb.f);
          if (mem_close(&mb)) {
            free(mb.p);
            seterr(err, err_len, "out of memory");
            goto out;
          }
          kw_put(&w, mb.p, mb.n);
          free(mb.p);
        }
        key_events = 0;
        continue;
      }
      key_events = 0;
    }
    if (buffering) {
      if (ev_append(&ev, &ev_n, &ev_cap, buf + run, (size_t)n - run, in_path, ev_index, err, err_len)) goto out;
    } else {
      kw_put(&w, buf + run, (size_t)n - run);
    }
    if (w.err) break;
  }
  if (w.err) {
    seterr(err, err_len, "write error: %s", strerror(errno ? errno : EIO));
    goto out;
  }
  if (crc != s->crc || bytes != s->bytes) {
    seterr(err, err_len, "%s changed while it was read (not the bytes the first pass checked)", in_path);
    goto out;
  }
  if (next_edit != ins->n_edit) {
    seterr(err, err_len, "%s: %zu events to annotate were not found", in_path, ins->n_edit - next_edit);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  free(ev);
  if (g) gzclose(g);
  if (w.gz) {
    if (gzclose(w.gz) != Z_OK && !rc) {
      seterr(err, err_len, "write error");
      rc = -1;
    }
  } else if (close(out_fd) && !rc) {
    seterr(err, err_len, "write error: %s", strerror(errno));
    rc = -1;
  }
  return rc;
}
