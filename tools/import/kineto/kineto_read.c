/* The streaming Kineto reader (kineto_read.h): yajl 2's SAX parser fed from
 * zlib's gzread (which reads plain files too), a small state machine over the
 * containers that matter (the top object, traceEvents, one event, its args,
 * distributedInfo), and a token-length guard in front of the parser. */
#define _GNU_SOURCE
#include "kineto_read.h"

#include "lens_utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define CHUNK (256u << 10)

/* The containers the reader knows; anything else is skipped whole. */
enum ctx { C_OTHER, C_TOP, C_EVENTS, C_EVENT, C_ARGS, C_DIST };

/* Keys that matter, per container. */
enum key {
  K_NONE,
  K_TRACE_EVENTS, K_BASE, K_DIST,           /* top */
  K_RANK_DIST, K_WORLD,                     /* distributedInfo */
  K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ARGS, /* event */
  K_CORR, K_EXT, K_COLL, K_IN, K_OUT, K_GSIZE, K_DTYPE, K_PGN, K_PGD, K_PGR, K_SEQ, K_RANK, /* args */
};

struct st {
  int depth;
  unsigned char ctx[LENS_KINETO_MAX_DEPTH + 2];
  unsigned char key[LENS_KINETO_MAX_DEPTH + 2]; /* the last key of the map at that depth */
  int too_deep, stopped;
  struct lens_kineto_event ev;
  struct lens_kineto_info *info;
  lens_kineto_event_fn fn;
  void *fn_ctx;
};

static int key_of(enum ctx c, const unsigned char *s, size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(s, lit, n))
  switch (c) {
  case C_TOP:
    if (IS("traceEvents")) return K_TRACE_EVENTS;
    if (IS("baseTimeNanoseconds")) return K_BASE;
    if (IS("distributedInfo")) return K_DIST;
    return K_NONE;
  case C_DIST:
    if (IS("rank")) return K_RANK_DIST;
    if (IS("world_size")) return K_WORLD;
    return K_NONE;
  case C_EVENT:
    if (n == 2 && s[0] == 'p' && s[1] == 'h') return K_PH;
    if (IS("name")) return K_NAME;
    if (IS("cat")) return K_CAT;
    if (IS("pid")) return K_PID;
    if (IS("tid")) return K_TID;
    if (IS("ts")) return K_TS;
    if (IS("dur")) return K_DUR;
    if (IS("args")) return K_ARGS;
    return K_NONE;
  case C_ARGS:
    if (IS("correlation")) return K_CORR;
    if (IS("External id")) return K_EXT;
    if (IS("Collective name")) return K_COLL;
    if (IS("In msg nelems")) return K_IN;
    if (IS("Out msg nelems")) return K_OUT;
    if (IS("Group size")) return K_GSIZE;
    if (IS("dtype")) return K_DTYPE;
    if (IS("Process Group Name")) return K_PGN;
    if (IS("Process Group Description")) return K_PGD;
    if (IS("Process Group Ranks")) return K_PGR;
    if (IS("Seq") || IS("pg seq") || IS("Sequence number")) return K_SEQ;
    if (IS("Rank")) return K_RANK;
    return K_NONE;
  default:
    return K_NONE;
  }
#undef IS
}

/* ---- values ---- */

/* An integer of the file: digits with an optional sign; a number with a
 * fraction or exponent that is integral and in range is taken too. */
static int parse_i64(const char *s, size_t n, int64_t *out) {
  if (!n || n > 64) return -1;
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-') neg = 1, i = 1;
  if (i == n) return -1;
  uint64_t v = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == n) {
    if (v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
  }
  char buf[72];
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  double d = strtod(buf, &end);
  if (end != buf + n || !isfinite(d) || d != floor(d) || fabs(d) > 9.0e18) return -1;
  *out = (int64_t)d;
  return 0;
}

/* µs as ns: exact for the decimal forms Kineto writes (integers, or up to
 * three decimals), rounded beyond; exponents through strtod. */
static int parse_us_ns(const char *s, size_t n, int64_t *out) {
  if (!n || n > 64) return -1;
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-') neg = 1, i = 1;
  uint64_t us = 0;
  size_t d0 = i;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (us > 9000000000000000ull / 10) return -1; /* past 2^63 ns */
    us = us * 10 + (uint64_t)(s[i] - '0');
  }
  if (i == d0) return -1;
  uint64_t frac = 0;
  int fd = 0, round_up = 0;
  if (i < n && s[i] == '.') {
    i++;
    size_t f0 = i;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
      if (fd < 3) frac = frac * 10 + (uint64_t)(s[i] - '0'), fd++;
      else if (i == f0 + 3) round_up = s[i] >= '5';
    }
    if (i == f0) return -1;
  }
  if (i < n) { /* an exponent: rare, through a double */
    char buf[72];
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + n || !isfinite(d) || fabs(d) > 9.0e15) return -1;
    *out = (int64_t)llround(d * 1000.0);
    return 0;
  }
  while (fd < 3) frac *= 10, fd++;
  uint64_t ns = us * 1000 + frac + (uint64_t)round_up;
  if (ns > (uint64_t)INT64_MAX) return -1;
  *out = neg ? -(int64_t)ns : (int64_t)ns;
  return 0;
}

/* A string field's copy: truncated to the field (counted), cleaned as labels are (lens_label_clean). */
static void copy_str(struct st *x, char *dst, size_t cap, const unsigned char *s, size_t n) {
  if (n >= cap) {
    n = cap - 1;
    x->info->truncated++;
  }
  /* the same rule as every label the trace readers read (a kernel's or a process group's name is the
   * application's): control bytes, malformed UTF-8 (a name cut above included) and direction controls
   * become '?', well-formed UTF-8 is kept */
  for (size_t i = 0; i < n; i++) dst[i] = s[i] ? (char)s[i] : '?'; /* a \u0000 too */
  dst[n] = 0;
  lens_label_clean(dst, cap);
}

/* The integers in "[0, 1, 2]" (a Process Group Ranks string). */
static uint32_t count_ints(const unsigned char *s, size_t n) {
  uint32_t k = 0;
  int in = 0;
  for (size_t i = 0; i < n; i++) {
    int d = s[i] >= '0' && s[i] <= '9';
    if (d && !in && k < UINT32_MAX) k++;
    in = d;
  }
  return k;
}

static enum ctx cur(const struct st *x) { return (enum ctx)x->ctx[x->depth]; }
static int cur_key(const struct st *x) { return x->key[x->depth]; }

/* A number or numeric string for key k of the current container. */
static void number(struct st *x, const char *s, size_t n, int from_string) {
  enum ctx c = cur(x);
  int k = cur_key(x);
  struct lens_kineto_event *e = &x->ev;
  int64_t v;
  if (c == C_TOP && k == K_BASE) {
    if (!parse_i64(s, n, &v)) x->info->base_ns = v, x->info->has_base = 1;
    else x->info->bad_values++;
    return;
  }
  if (c == C_DIST) {
    if (k != K_RANK_DIST && k != K_WORLD) return;
    if (parse_i64(s, n, &v) || v < 0 || v > INT32_MAX) return (void)x->info->bad_values++;
    if (k == K_RANK_DIST) x->info->rank = v, x->info->has_rank = 1;
    else x->info->world_size = v, x->info->has_world_size = 1;
    return;
  }
  uint32_t bit = 0;
  int64_t *dst = NULL;
  int us = 0;
  if (c == C_EVENT) {
    switch (k) {
    case K_PID: bit = LENS_KEV_PID, dst = &e->pid; break;
    case K_TID: bit = LENS_KEV_TID, dst = &e->tid; break;
    case K_TS: bit = LENS_KEV_TS, dst = &e->ts_ns, us = 1; break;
    case K_DUR: bit = LENS_KEV_DUR, dst = &e->dur_ns, us = 1; break;
    default: return;
    }
    /* pid/tid as strings ("Spans", "stream 7") are names, not ids: absent */
    if (from_string && !us) return;
  } else if (c == C_ARGS) {
    switch (k) {
    case K_CORR: bit = LENS_KEV_CORRELATION, dst = &e->correlation; break;
    case K_EXT: bit = LENS_KEV_EXTERNAL_ID, dst = &e->external_id; break;
    case K_IN: bit = LENS_KEV_IN_NELEMS, dst = &e->in_nelems; break;
    case K_OUT: bit = LENS_KEV_OUT_NELEMS, dst = &e->out_nelems; break;
    case K_GSIZE: bit = LENS_KEV_GROUP_SIZE, dst = &e->group_size; break;
    case K_SEQ: bit = LENS_KEV_SEQ, dst = &e->seq; break;
    case K_RANK: bit = LENS_KEV_RANK, dst = &e->rank; break;
    default: return;
    }
  } else {
    return;
  }
  if ((us ? parse_us_ns(s, n, &v) : parse_i64(s, n, &v)) != 0) {
    x->info->bad_values++;
    e->have &= ~bit;
    return;
  }
  *dst = v;
  e->have |= bit;
}

/* ---- yajl callbacks ---- */

static int cb_number(void *p, const char *s, size_t n) {
  number(p, s, n, 0);
  return 1;
}

static int cb_string(void *p, const unsigned char *s, size_t n) {
  struct st *x = p;
  enum ctx c = cur(x);
  int k = cur_key(x);
  struct lens_kineto_event *e = &x->ev;
  if (c == C_EVENT) {
    switch (k) {
    case K_PH: e->ph = n ? (char)s[0] : 0; return 1;
    case K_NAME: copy_str(x, e->name, sizeof e->name, s, n); return 1;
    case K_CAT: copy_str(x, e->cat, sizeof e->cat, s, n); return 1;
    case K_TS: case K_DUR: number(x, (const char *)s, n, 1); return 1;
    default: return 1;
    }
  }
  if (c == C_ARGS) {
    switch (k) {
    case K_COLL: copy_str(x, e->coll_name, sizeof e->coll_name, s, n); return 1;
    case K_DTYPE: copy_str(x, e->dtype, sizeof e->dtype, s, n); return 1;
    case K_PGN: copy_str(x, e->pg_name, sizeof e->pg_name, s, n); return 1;
    case K_PGD: copy_str(x, e->pg_desc, sizeof e->pg_desc, s, n); return 1;
    case K_PGR:
      e->pg_ranks_n = count_ints(s, n);
      e->have |= LENS_KEV_PG_RANKS;
      return 1;
    case K_CORR: case K_EXT: case K_IN: case K_OUT: case K_GSIZE: case K_SEQ: case K_RANK:
      number(x, (const char *)s, n, 1);
      return 1;
    default: return 1;
    }
  }
  if (c == C_TOP && k == K_BASE) number(x, (const char *)s, n, 1);
  return 1;
}

static int cb_key(void *p, const unsigned char *s, size_t n) {
  struct st *x = p;
  x->key[x->depth] = (unsigned char)key_of(cur(x), s, n);
  return 1;
}

static int open_container(struct st *x, int is_map) {
  if (x->depth >= LENS_KINETO_MAX_DEPTH) {
    x->too_deep = 1;
    return 0;
  }
  enum ctx parent = x->depth ? cur(x) : C_OTHER;
  int pk = x->depth ? cur_key(x) : K_NONE;
  enum ctx c = C_OTHER;
  if (!x->depth) c = is_map ? C_TOP : C_OTHER;
  else if (parent == C_TOP && pk == K_TRACE_EVENTS && !is_map) c = C_EVENTS;
  else if (parent == C_TOP && pk == K_DIST && is_map) c = C_DIST;
  else if (parent == C_EVENTS && is_map) c = C_EVENT;
  else if (parent == C_EVENT && pk == K_ARGS && is_map) c = C_ARGS;
  x->depth++;
  x->ctx[x->depth] = (unsigned char)c;
  x->key[x->depth] = K_NONE;
  if (c == C_EVENT) {
    /* the fixed part cleared; the strings only at their first byte */
    struct lens_kineto_event *e = &x->ev;
    e->ph = 0, e->have = 0, e->pg_ranks_n = 0;
    e->name[0] = e->cat[0] = e->coll_name[0] = e->dtype[0] = e->pg_name[0] = e->pg_desc[0] = 0;
  }
  return 1;
}

static int close_container(struct st *x) {
  enum ctx c = cur(x);
  if (x->depth > 0) x->depth--;
  if (c == C_EVENT) {
    x->info->events++;
    if (x->fn && x->fn(x->fn_ctx, &x->ev)) {
      x->stopped = 1;
      return 0;
    }
  }
  return 1;
}

static int cb_start_map(void *p) { return open_container(p, 1); }
static int cb_start_array(void *p) { return open_container(p, 0); }
static int cb_end(void *p) { return close_container(p); }
static int cb_null(void *p) { (void)p; return 1; }
static int cb_bool(void *p, int b) { (void)p, (void)b; return 1; }

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

/* ---- the token guard ---- */

/* yajl keeps a token that spans two chunks in a buffer of its own, whole:
 * a 1 GB string would be 1 GB of memory. Every token is measured here
 * first (strings by their bytes, escapes included; numbers and literals by
 * their run) and the read stops past LENS_KINETO_MAX_TOKEN. */
struct guard { int in_str, esc; size_t tok; };

static int guard_scan(struct guard *g, const unsigned char *b, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (g->in_str) {
      /* the common case: a run of plain bytes up to the next quote or backslash */
      size_t j = i;
      if (g->esc) {
        g->esc = 0;
        j++;
      } else {
        while (j < n && b[j] != '"' && b[j] != '\\') j++;
        if (j < n && b[j] == '\\') g->esc = 1, j++;
        else if (j < n) g->in_str = 0, j++; /* the closing quote */
      }
      g->tok += j - i;
      if (g->tok > LENS_KINETO_MAX_TOKEN) return -1;
      if (!g->in_str) g->tok = 0;
      i = j;
      continue;
    }
    unsigned char c = b[i++];
    switch (c) {
    case '"': g->in_str = 1, g->tok = 0; break;
    case '{': case '}': case '[': case ']': case ',': case ':': case ' ': case '\t': case '\n': case '\r':
      g->tok = 0;
      break;
    default:
      if (++g->tok > LENS_KINETO_MAX_TOKEN) return -1;
    }
  }
  return 0;
}

/* zlib's message without the name it gives a gzdopen'd descriptor ("<fd:3>: "):
 * the error line names the file already; "truncated" says what a cut .gz is. */
static const char *gz_reason(const char *m) {
  if (!m) return "read error";
  if (!strncmp(m, "<fd:", 4)) {
    const char *e = strstr(m, ">: ");
    if (e) m = e + 3;
  }
  return !strcmp(m, "unexpected end of file") ? "truncated (unexpected end of the gzip stream)" : m;
}

int lens_kineto_name_is(const char *path) {
  size_t n = strlen(path);
  return (n > 5 && !strcasecmp(path + n - 5, ".json")) || (n > 8 && !strcasecmp(path + n - 8, ".json.gz"));
}

int lens_kineto_sniff(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat sb;
  gzFile z = NULL;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || !(z = gzdopen(fd, "rb"))) {
    close(fd);
    return 0;
  }
  enum { N = 64 << 10 };
  char *b = malloc(N + 1);
  int n = b ? gzread(z, b, N) : -1;
  gzclose(z);
  int yes = 0;
  if (n > 0) {
    b[n] = 0;
    for (int i = 0; i < n; i++) /* NULs in the text would hide what follows from strstr */
      if (!b[i]) b[i] = ' ';
    yes = strstr(b, "\"traceEvents\"") || strstr(b, "\"schemaVersion\"");
  }
  free(b);
  return yes;
}

int lens_kineto_read(const char *path, lens_kineto_event_fn fn, void *ctx, struct lens_kineto_info *info_out,
                     char *err, size_t err_len) {
  struct lens_kineto_info info_local;
  struct lens_kineto_info *info = info_out ? info_out : &info_local;
  memset(info, 0, sizeof *info);
  if (err_len) err[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return snprintf(err, err_len, "%s: %s", path, strerror(errno)), -1;
  struct stat sb;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) { /* a FIFO or device would block or never end */
    close(fd);
    return snprintf(err, err_len, "%s: not a regular file", path), -1;
  }
  gzFile z = gzdopen(fd, "rb");
  if (!z) {
    close(fd);
    return snprintf(err, err_len, "%s: out of memory", path), -1;
  }
  gzbuffer(z, CHUNK);
  unsigned char *buf = malloc(CHUNK);
  struct st *x = calloc(1, sizeof *x);
  yajl_handle h = x ? yajl_alloc(&callbacks, NULL, x) : NULL;
  int rc = -1;
  if (!buf || !x || !h) {
    snprintf(err, err_len, "%s: out of memory", path);
    goto out;
  }
  x->info = info;
  x->fn = fn;
  x->fn_ctx = ctx;
  /* Strings are copied and cleaned per field (copy_str); UTF-8 checks of
   * every byte would only slow the stream. */
  yajl_config(h, yajl_dont_validate_strings, 1);
  struct guard g = {0};
  int first = 1;
  for (;;) {
    int n = gzread(z, buf, CHUNK);
    if (n < 0) {
      int zerr;
      const char *m = gzerror(z, &zerr);
      snprintf(err, err_len, "%s: %s", path, zerr == Z_ERRNO ? strerror(errno) : gz_reason(m));
      goto out;
    }
    if (n == 0) break;
    info->bytes += (uint64_t)n;
    if (first) { /* a Kineto trace is one JSON object */
      size_t i = 0;
      while (i < (size_t)n && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) i++;
      if (i < (size_t)n) {
        if (buf[i] != '{') {
          snprintf(err, err_len, "%s: not a Kineto trace (a JSON object)", path);
          goto out;
        }
        first = 0;
      }
    }
    if (guard_scan(&g, buf, (size_t)n)) {
      snprintf(err, err_len, "%s: a string or number longer than %u bytes", path, LENS_KINETO_MAX_TOKEN);
      goto out;
    }
    if (yajl_parse(h, buf, (size_t)n) != yajl_status_ok) goto parse_error;
  }
  {
    int zerr;
    const char *m = gzerror(z, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END) {
      snprintf(err, err_len, "%s: %s", path, gz_reason(m));
      goto out;
    }
  }
  if (first) {
    snprintf(err, err_len, "%s: empty", path);
    goto out;
  }
  if (yajl_complete_parse(h) != yajl_status_ok) goto parse_error;
  rc = 0;
  goto out;
parse_error:
  if (x->too_deep) {
    snprintf(err, err_len, "%s: nested deeper than %d", path, LENS_KINETO_MAX_DEPTH);
  } else if (x->stopped) {
    snprintf(err, err_len, "%s: stopped by the caller", path);
  } else {
    unsigned char *m = yajl_get_error(h, 0, NULL, 0);
    const char *s = m ? (const char *)m : "malformed JSON";
    size_t l = strcspn(s, "\n");
    snprintf(err, err_len, "%s: %.*s (after %llu bytes)", path, (int)(l > 200 ? 200 : l), s,
             (unsigned long long)info->bytes);
    if (m) yajl_free_error(h, m);
  }
out:
  if (h) yajl_free(h);
  free(x);
  free(buf);
  gzclose(z);
  return rc;
}
