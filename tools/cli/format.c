/* Formatting shared by every view (format.h). */
#define _GNU_SOURCE /* qsort_r */
#include "cli/format.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns of n bytes of UTF-8: continuation bytes take none. */
static int columns_of(const char *s, size_t n) {
  int c = 0;
  for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
  return c;
}

/* One wrapper for prose (gap 1: any space may break) and for records of
 * fields (gap 2: only a run of two or more spaces may). A word is what lies
 * between two break points; the spaces before it are kept when it stays on
 * the line, dropped when it starts the next one. */
static void wrap_at(FILE *f, const char *head, const char *indent, const char *text, int width, int gap) {
  head = head ? head : "";
  indent = indent ? indent : "";
  text = text ? text : "";
  fputs(head, f);
  int col = columns_of(head, strlen(head)), indent_cols = columns_of(indent, strlen(indent));
  int empty = 1; /* nothing of text on this line yet: a word goes here whatever its length */
  const char *p = text;
  while (*p) {
    if (*p == '\n') { /* a line break the text asks for */
      fputc('\n', f);
      fputs(indent, f);
      col = indent_cols, empty = 1;
      p++;
      continue;
    }
    /* the spaces before the next word, then the word: up to a run of gap
     * spaces, a newline or the end */
    const char *sp = p;
    while (*p == ' ') p++;
    size_t n_sp = (size_t)(p - sp);
    if (!*p || *p == '\n') { /* trailing spaces: dropped */
      continue;
    }
    const char *w = p;
    for (;;) {
      while (*p && *p != ' ' && *p != '\n') p++;
      if (*p != ' ' || gap < 2) break;
      size_t run = 0;
      while (p[run] == ' ') run++;
      if (run >= (size_t)gap || !p[run] || p[run] == '\n') break;
      p += run; /* a single space inside a field: part of it */
    }
    int w_cols = columns_of(w, (size_t)(p - w)), sp_cols = (int)n_sp;
    if (!empty && col + sp_cols + w_cols > width) {
      fputc('\n', f);
      fputs(indent, f);
      col = indent_cols;
    } else {
      fwrite(sp, 1, n_sp, f);
      col += sp_cols;
    }
    fwrite(w, 1, (size_t)(p - w), f);
    col += w_cols;
    empty = 0;
  }
  fputc('\n', f);
}

void lens_fmt_wrap(FILE *f, const char *head, const char *indent, const char *text, int width) {
  wrap_at(f, head, indent, text, width, 1);
}

void lens_fmt_wrap_fields(FILE *f, const char *head, const char *indent, const char *text, int width) {
  wrap_at(f, head, indent, text, width, 2);
}

void lens_fmt_ns(double ns, char *buf, size_t len) {
  if (ns < 1e3) snprintf(buf, len, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, len, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, len, "%.2f ms", ns / 1e6);
  else snprintf(buf, len, "%.2f s", ns / 1e9);
}

/* The decimal exponent of g rounded to sig significant digits (9.996 at 3
 * digits is 10.0: exponent 1, not 0), from printf's own rounding. */
static int exp10_rounded(double g, int sig) {
  char e[48];
  snprintf(e, sizeof e, "%.*e", sig - 1, g);
  const char *x = strchr(e, 'e');
  return x ? atoi(x + 1) : 0;
}

const char *lens_fmt_bytes(uint64_t b, char *buf, size_t len) {
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (b < 1024) {
    snprintf(buf, len, "%" PRIu64 " B", b);
    return buf;
  }
  double v = (double)b / 1024;
  int u = 0;
  while (v >= 1023.95 && u < 5) v /= 1024, u++; /* 1023.96 KiB would print "1024.0 KiB" */
  snprintf(buf, len, u >= 2 && v < 99.995 ? "%.2f %s" : "%.1f %s", v, unit[u]);
  return buf;
}

const char *lens_fmt_gbps(double gbps, char *buf, size_t len) {
  if (!(gbps > 0) || !isfinite(gbps)) {
    snprintf(buf, len, "-");
    return buf;
  }
  int x = exp10_rounded(gbps, 3);
  if (x >= 3) {
    snprintf(buf, len, "%.0f", round(gbps)); /* half away from zero: 1234.5 -> 1235 */
    return buf;
  }
  int sig = 3;
  if (x < -3) { /* below 0.001: two digits keep it within LENS_FMT_GBPS_WIDTH */
    sig = 2;
    x = exp10_rounded(gbps, 2);
    if (x < -4) {
      snprintf(buf, len, "<0.0001");
      return buf;
    }
  }
  snprintf(buf, len, "%.*f", sig - 1 - x, gbps);
  return buf;
}

const char *lens_fmt_comm_id(uint64_t comm_id, char *buf) {
  snprintf(buf, LENS_COMM_ID_LEN, "0x%016" PRIx64, comm_id);
  return buf;
}

void lens_json_comm_id(FILE *f, uint64_t comm_id) { fprintf(f, "\"0x%016" PRIx64 "\"", comm_id); }

const char *lens_fmt_comm_name(const char *name) { return name && *name ? name : LENS_COMM_UNNAMED; }

const char *lens_fmt_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len) {
  if (name && *name) return name;
  snprintf(buf, len, "comm 0x%016" PRIx64, comm_id);
  return buf;
}

/* JSON key -> text words, for every cause a view names (job's straggler
 * causes, hang's and net's verdicts as they come). docs/cli.md lists them. */
static const struct {
  const char *key, *words;
} causes[] = {
    {"none", "none"},
    {"late_app_call", "late app call"},
    {"slow_enqueue", "slow enqueue"},
    {"slow_launch", "slow launch"},
    {"gpu_busy", "busy GPU"},
    {"starved_proxy", "starved proxy"},
    {"slow_link", "slow link"},
    {"unknown", "late or busy GPU"},
};

const char *lens_fmt_cause_words(const char *key) {
  for (size_t i = 0; key && i < sizeof causes / sizeof *causes; i++)
    if (!strcmp(causes[i].key, key)) return causes[i].words;
  return key;
}

int lens_parse_dump_note(const char *text, struct lens_dump_note *d) {
  static const char prefix[] = "nccl-lens recorder dump: ";
  memset(d, 0, sizeof *d);
  if (!text || strncmp(text, prefix, sizeof prefix - 1)) return 0;
  const char *why = text + sizeof prefix - 1, *store = strstr(why, " (store: ");
  size_t n = store ? (size_t)(store - why) : strlen(why);
  if (n >= sizeof d->why) n = sizeof d->why - 1;
  memcpy(d->why, why, n);
  d->why[n] = 0;
  const char *ev = store ? strstr(store, " chunks, ") : NULL;
  unsigned long long c = 0, r = 0;
  if (ev && sscanf(ev, " chunks, %llu evicted with %llu event records)", &c, &r) == 2) {
    d->evicted_chunks = c;
    d->evicted_records = r;
    d->have_counts = 1;
  }
  return 1;
}

size_t lens_fmt_rows_listed(size_t n, int all) { return all || n <= LENS_FMT_LIST_ROWS ? n : LENS_FMT_LIST_ROWS; }

void lens_fmt_left_out(FILE *f, size_t n_left, const char *what, int json_has_all) {
  if (n_left)
    fprintf(f, "  (%zu more %s not listed: --all lists every one%s)\n", n_left, what,
            json_has_all ? "; --json has all" : "");
}

/* NCCL_LENS_JSON_OK_ENTRIES, 1..10^9, sets another bound (tests cut a small
 * job as a big one is cut). Read by the workers' maps too (validate): an
 * atomic, so two threads asking first each read the environment and store
 * the same value. */
size_t lens_fmt_json_ok_entries(void) {
  static atomic_size_t bound;
  size_t b = atomic_load_explicit(&bound, memory_order_relaxed);
  if (!b) {
    const char *e = getenv("NCCL_LENS_JSON_OK_ENTRIES");
    char *end;
    unsigned long long v = e && *e >= '0' && *e <= '9' ? strtoull(e, &end, 10) : 0;
    b = v && v <= 1000000000ull && !*end ? (size_t)v : LENS_FMT_JSON_OK_ENTRIES;
    atomic_store_explicit(&bound, b, memory_order_relaxed);
  }
  return b;
}

int lens_fmt_json_ok_listed(size_t *used, size_t entries, int all) {
  if (all) return 1;
  if (*used >= lens_fmt_json_ok_entries()) return 0;
  *used += entries;
  return 1;
}

static int by_key_desc(const void *a, const void *b, void *ctx) {
  const double *key = ctx;
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (key[x] != key[y]) return key[x] < key[y] ? 1 : -1;
  return (x > y) - (x < y);
}

size_t *lens_fmt_order_desc(const double *key, size_t n) {
  size_t *o = malloc((n + 1) * sizeof *o);
  if (!o) return NULL;
  for (size_t i = 0; i < n; i++) o[i] = i;
  qsort_r(o, n, sizeof *o, by_key_desc, (void *)key); /* the key as context: safe on any thread */
  return o;
}

double *lens_fmt_rows_begin(struct lens_fmt_rows *r, size_t n_index, int all, enum lens_fmt_rows_keep keep) {
  memset(r, 0, sizeof *r);
  r->n = r->n_index = n_index;
  r->listed = lens_fmt_rows_listed(n_index, all);
  r->all = all;
  r->keep = keep;
  if (keep == LENS_FMT_ROWS_PRESENT || r->listed < n_index) r->key = malloc((n_index + 1) * sizeof *r->key);
  return r->key;
}

void lens_fmt_rows_order(struct lens_fmt_rows *r) {
  if (!r->key) return; /* every row listed, or out of memory: table order */
  if (r->keep == LENS_FMT_ROWS_PRESENT) {
    r->n = 0;
    for (size_t i = 0; i < r->n_index; i++) r->n += r->key[i] >= 0;
    r->listed = lens_fmt_rows_listed(r->n, r->all);
    if (r->listed < r->n) r->order = lens_fmt_order_desc(r->key, r->n_index); /* the absent ones sort last */
    return;
  }
  if (r->keep == LENS_FMT_ROWS_NONZERO)
    for (size_t i = 0; i < r->n_index; i++) r->nonzero += r->key[i] > 0;
  r->order = lens_fmt_order_desc(r->key, r->n_index);
  /* the rows with a key come first: stop there (out of memory: the cap's first rows, whatever their key) */
  if (r->keep == LENS_FMT_ROWS_NONZERO && r->order && r->listed > r->nonzero) r->listed = r->nonzero;
}

int lens_fmt_rows_next(struct lens_fmt_rows *r, size_t *row) {
  while (r->given < r->listed && r->pos < r->n_index) {
    size_t i = r->order ? r->order[r->pos] : r->pos;
    r->pos++;
    if (r->keep == LENS_FMT_ROWS_PRESENT && r->key && r->key[i] < 0) continue;
    r->given++;
    *row = i;
    return 1;
  }
  return 0;
}

void lens_fmt_rows_end(struct lens_fmt_rows *r) {
  free(r->key), free(r->order);
  r->key = NULL, r->order = NULL;
}

int lens_fmt_run(char *buf, size_t len, int64_t first, int64_t last) {
  if (last >= first + 2) return snprintf(buf, len, "%" PRId64 "-%" PRId64, first, last);
  if (last == first + 1) return snprintf(buf, len, "%" PRId64 ",%" PRId64, first, last);
  return snprintf(buf, len, "%" PRId64, first);
}

void lens_fmt_ranges_begin(struct lens_fmt_ranges *r, char *buf, size_t len, size_t max_runs) {
  memset(r, 0, sizeof *r);
  r->buf = buf;
  r->len = len;
  r->max_runs = max_runs;
  if (len) buf[0] = 0;
}

/* Writes the pending run, or ",..." once when the cap is reached or the run
 * would leave no room for that marker. */
static void ranges_flush(struct lens_fmt_ranges *r) {
  if (!r->open || r->cut || r->len < 5) return;
  r->open = 0;
  const char *sep = r->o ? "," : "";
  char run[64];
  run[0] = sep[0], run[1] = 0;
  lens_fmt_run(run + strlen(sep), sizeof run - 1, r->first, r->last);
  if (r->runs == r->max_runs || r->o + strlen(run) + 4 >= r->len) { /* 4: ",..." after it */
    snprintf(r->buf + r->o, r->len - r->o, "%s...", sep);
    r->cut = 1;
    return;
  }
  r->runs++;
  r->o += (size_t)snprintf(r->buf + r->o, r->len - r->o, "%s", run);
}

void lens_fmt_ranges_add(struct lens_fmt_ranges *r, int64_t first, int64_t last) {
  if (last < first) return;
  if (r->open && first <= r->last + 1) { /* touches the pending run: extends it */
    if (last > r->last) r->last = last;
    return;
  }
  ranges_flush(r);
  r->first = first;
  r->last = last;
  r->open = 1;
}

const char *lens_fmt_ranges_end(struct lens_fmt_ranges *r) {
  ranges_flush(r);
  return r->buf;
}

/* ---- Markdown labels (format.h, lens_fmt_md) ---- */

static int md_alnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

/* What byte i of s becomes in Markdown text: its escape, or the byte (in one). */
static const char *md_unit(const unsigned char *s, size_t i, char one[3]) {
  unsigned char c = s[i];
  switch (c) {
  case '<': return "&lt;";
  case '>': return "&gt;";
  case '&': return "&amp;";
  case '_':
    if (i && md_alnum(s[i - 1]) && md_alnum(s[i + 1])) break; /* intraword: never emphasis */
    /* fall through */
  case '\\': case '`': case '*': case '[': case ']': case '|': case '~': case '$':
    one[0] = '\\', one[1] = (char)c, one[2] = 0;
    return one;
  default: break;
  }
  one[0] = (char)c, one[1] = 0;
  return one;
}

/* The output: a bounded buffer (f NULL) or a stream. In the buffer, `tail`
 * bytes stay free for a closing fence; `keep` is the last place, between two
 * characters, from which LENS_FMT_MD_CUT and that tail still fit. */
struct md_out {
  FILE *f;
  char *buf;
  size_t len, o, keep, tail;
  int cut;
};

static void md_write(struct md_out *w, const char *t, size_t n, int boundary) {
  if (w->cut) return;
  if (w->f) {
    fwrite(t, 1, n, w->f);
    return;
  }
  if (w->o + n + w->tail + 1 > w->len) { /* does not fit: back to the last boundary, marked */
    size_t c = strlen(LENS_FMT_MD_CUT);
    w->o = w->keep;
    if (w->o + c + w->tail + 1 <= w->len) memcpy(w->buf + w->o, LENS_FMT_MD_CUT, c), w->o += c;
    w->cut = 1;
    return;
  }
  memcpy(w->buf + w->o, t, n);
  w->o += n;
  if (boundary && w->o + strlen(LENS_FMT_MD_CUT) + w->tail + 1 <= w->len) w->keep = w->o;
}

static void md_text(struct md_out *w, const char *s) {
  const unsigned char *u = (const unsigned char *)(s ? s : "");
  for (size_t i = 0; u[i]; i++) {
    char one[3];
    const char *t = md_unit(u, i, one);
    md_write(w, t, strlen(t), (u[i + 1] & 0xC0) != 0x80); /* a boundary unless a UTF-8 sequence goes on */
  }
}

/* A code span's fence: one backtick more than the longest run in s; pad: a
 * space inside each fence (s starts or ends with a backtick, which would
 * join the fence, or with a space on both sides, one of which CommonMark
 * strips). Returns 0 when s cannot be a code span (empty, or holds a '|'). */
static int md_fence(const char *s, size_t *ticks, int *pad) {
  size_t n = s ? strlen(s) : 0, run = 0, most = 0;
  if (!n || strchr(s, '|')) return 0;
  for (size_t i = 0; i < n; i++) {
    run = s[i] == '`' ? run + 1 : 0;
    if (run > most) most = run;
  }
  *ticks = most + 1;
  *pad = s[0] == '`' || s[n - 1] == '`' || (s[0] == ' ' && s[n - 1] == ' ');
  return 1;
}

static void md_code(struct md_out *w, const char *s) {
  size_t ticks;
  int pad;
  if (!md_fence(s, &ticks, &pad)) {
    md_text(w, s);
    return;
  }
  size_t fence = ticks + (size_t)pad;
  if (!w->f && 2 * fence + strlen(LENS_FMT_MD_CUT) + 1 > w->len) return; /* too short for a span: "" */
  for (size_t i = 0; i < ticks; i++) md_write(w, "`", 1, 0);
  if (pad) md_write(w, " ", 1, 0);
  w->keep = w->o;
  w->tail = fence; /* kept free for the closing fence */
  size_t n = strlen(s);
  for (size_t i = 0; i < n; i++)
    md_write(w, s + i, 1, ((unsigned char)s[i + 1] & 0xC0) != 0x80);
  w->tail = 0;
  w->cut = 0; /* the closing fence is written whether the text was cut or not */
  if (pad) md_write(w, " ", 1, 0);
  for (size_t i = 0; i < ticks; i++) md_write(w, "`", 1, 0);
}

const char *lens_fmt_md(const char *s, char *buf, size_t len) {
  if (!len) return "";
  struct md_out w = {.buf = buf, .len = len};
  md_text(&w, s);
  buf[w.o] = 0;
  return buf;
}

const char *lens_fmt_md_code(const char *s, char *buf, size_t len) {
  if (!len) return "";
  struct md_out w = {.buf = buf, .len = len};
  md_code(&w, s);
  buf[w.o] = 0;
  return buf;
}

void lens_fmt_md_put(FILE *f, const char *s) {
  struct md_out w = {.f = f};
  md_text(&w, s);
}

void lens_fmt_md_code_put(FILE *f, const char *s) {
  struct md_out w = {.f = f};
  md_code(&w, s);
}
