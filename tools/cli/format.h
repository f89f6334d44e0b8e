/* Formatting shared by every view (summary, report, net, validate, job, hang,
 * diff): one way to write a duration and a communicator, so that the views
 * that speak of the same thing read the same. Views include this, never each
 * other, for it. */
#ifndef NCCL_LENS_CLI_FORMAT_H
#define NCCL_LENS_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The widest a line of text output may be (docs/cli.md): every view keeps
 * its lines within it, tests/golden/check.sh checks the golden outputs. */
#define LENS_FMT_COLUMNS 120

/* Prose for a terminal: writes head, then text wrapped at its spaces so that
 * no line passes width columns; every line after the first starts with
 * indent (a hanging indent: head "verdict: ", indent 9 spaces). The spaces
 * where a line breaks are dropped, the others kept; a '\n' in text ends a
 * line there. A word longer than the room left stays whole on a line of its
 * own (the only way past width). Columns are counted in characters (UTF-8
 * continuation bytes count none). Ends with a newline. */
void lens_fmt_wrap(FILE *f, const char *head, const char *indent, const char *text, int width);
/* The same for a record of fields separated by two spaces ("span +0.000..+5.128
 * us  inside yes  source cupti"): lines break only between fields (at a run of
 * two or more spaces), so a field is never split. */
void lens_fmt_wrap_fields(FILE *f, const char *head, const char *indent, const char *text, int width);

/* Tables with a row per process, proxy thread or host: a 1,024-rank job would
 * print a thousand rows of each, so by default they list LENS_FMT_LIST_ROWS
 * (the ones that say most, each table says which first) and one line says how
 * many were left out and how to see them. */
#define LENS_FMT_LIST_ROWS 16
/* Rows to list of n: all of them with all set or when n fits, else LENS_FMT_LIST_ROWS. */
size_t lens_fmt_rows_listed(size_t n, int all);
/* A capped table in the order that says most: one rule for every view's
 * per-process, proxy-thread and host tables. Use:
 *   struct lens_fmt_rows r;
 *   double *key = lens_fmt_rows_begin(&r, n, all, LENS_FMT_ROWS_EVERY);
 *   for (size_t i = 0; key && i < n; i++) key[i] = ...;   (larger first)
 *   lens_fmt_rows_order(&r);
 *   for (size_t i; lens_fmt_rows_next(&r, &i);) ...print row i...
 *   lens_fmt_rows_end(&r);
 *   lens_fmt_left_out(f, r.n - r.listed, "processes", 1);
 * Rows are listed largest key first, equal keys in table order, when the cap
 * leaves some out; in table order when every row is listed (or memory ran
 * out: then the cap's first rows). */
enum lens_fmt_rows_keep {
  LENS_FMT_ROWS_EVERY,   /* every row is in the table */
  LENS_FMT_ROWS_NONZERO, /* capped, rows with a key of 0 are not listed (a thousand rows of zeros say one thing) */
  LENS_FMT_ROWS_PRESENT, /* rows with a negative key are not in the table at all (n counts the others) */
};
struct lens_fmt_rows {
  size_t n;       /* rows in the table (PRESENT: those with a key >= 0, once ordered) */
  size_t listed;  /* rows lens_fmt_rows_next gives: lens_fmt_rows_listed's (NONZERO ordered: at most `nonzero`) */
  size_t nonzero; /* NONZERO, capped: rows with a key > 0 */
  /* the helper's own */
  size_t n_index, pos, given;
  int all;
  enum lens_fmt_rows_keep keep;
  double *key;
  size_t *order;
};
/* Begins a table of n_index rows. Returns the key to fill (n_index entries)
 * where the order matters (the cap leaves rows out; PRESENT: always), else
 * NULL: no key, table order. NULL too when out of memory (PRESENT: then list
 * nothing). */
double *lens_fmt_rows_begin(struct lens_fmt_rows *r, size_t n_index, int all, enum lens_fmt_rows_keep keep);
/* Orders the rows by the key filled in (nothing without one); sets n, listed and nonzero. */
void lens_fmt_rows_order(struct lens_fmt_rows *r);
/* The next row to list into *row: 1, or 0 once `listed` rows were given. */
int lens_fmt_rows_next(struct lens_fmt_rows *r, size_t *row);
void lens_fmt_rows_end(struct lens_fmt_rows *r);
/* "  (N more WHAT not listed: --all lists every one; --json has all)" when n_left > 0
 * (without "; --json has all" where the command's JSON does not list them). */
void lens_fmt_left_out(FILE *f, size_t n_left, const char *what, int json_has_all);
/* --json on a big job (docs/cli.md, "JSON at scale"): validate, net and job
 * list every flagged item (a finding, a warning, a straggler, a slow link)
 * in full, and of the items that are fine only the first ones, while fewer
 * than LENS_FMT_JSON_OK_ENTRIES entries are listed: an entry is a list's
 * innermost object (a launch or a KernelCh, an instance's rank, a link, a
 * network instance), so a list costs a few MB at most, whatever the job's
 * size. A "left_out" object counts what each list left out; --all lists
 * every one. The replay scenarios and any job this small list everything.
 * NCCL_LENS_JSON_OK_ENTRIES sets another bound (tests use a small one). */
#define LENS_FMT_JSON_OK_ENTRIES 16384
/* Whether to list an item that is fine, of `entries` entries: with all set
 * yes; else while *used is below LENS_FMT_JSON_OK_ENTRIES, counting them into
 * *used (the last one listed may pass the bound by its own entries). */
int lens_fmt_json_ok_listed(size_t *used, size_t entries, int all);
/* The bound itself (LENS_FMT_JSON_OK_ENTRIES or NCCL_LENS_JSON_OK_ENTRIES): what a view need not keep more of. */
size_t lens_fmt_json_ok_entries(void);
/* The order in which to list a capped table: indexes 0..n-1, largest key first,
 * equal keys in index order (the table's own order). malloc'd; NULL when out of memory. */
size_t *lens_fmt_order_desc(const double *key, size_t n);

/* One run of sorted, distinct integers (ranks, channels) as every list
 * writes it: "5", "5,6" (two are not a range), "5-9". snprintf's return. */
int lens_fmt_run(char *buf, size_t len, int64_t first, int64_t last);
/* Ranks as a range list, "0-3,8,10,11" (a run of three or more as first-last,
 * of two as two ranks): one rule for every view that names a set of ranks.
 * Add runs in increasing order (a rank or run that touches the previous one
 * extends it, a rank added twice counts once); past max_runs runs, or when
 * buf runs short, the list ends in ",..." (the caller says how many ranks it
 * holds). buf holds at least 64. Use:
 *   struct lens_fmt_ranges rl;
 *   lens_fmt_ranges_begin(&rl, buf, sizeof buf, 32);
 *   lens_fmt_ranges_add(&rl, first, last); ...
 *   lens_fmt_ranges_end(&rl);   (buf holds the list; "" when none was added) */
struct lens_fmt_ranges {
  char *buf;
  size_t len, o, runs, max_runs;
  int64_t first, last; /* the run not yet written */
  int open, cut;
};
void lens_fmt_ranges_begin(struct lens_fmt_ranges *r, char *buf, size_t len, size_t max_runs);
void lens_fmt_ranges_add(struct lens_fmt_ranges *r, int64_t first, int64_t last);
const char *lens_fmt_ranges_end(struct lens_fmt_ranges *r);

/* "812 ns", "3.20 us", "9.10 ms", "1.50 s" */
void lens_fmt_ns(double ns, char *buf, size_t len);
/* A bandwidth in GB/s (10^9 bytes a second) for text, one rule for every
 * view (summary, net, job, report): three significant digits with their
 * trailing zeros ("22.2", "3.05", "0.0129", "0.00130"), never an exponent:
 * from 1000 GB/s an integer ("1235"); below 0.001 two significant digits
 * ("0.00013"), below 0.0001 the bound "<0.0001". "-" for 0, a negative or a
 * non-finite value (nothing moved, or not known). At most
 * LENS_FMT_GBPS_WIDTH characters below 10^7 GB/s, so a column that wide
 * holds it. JSON writes the full value (lens_json_double). */
#define LENS_FMT_GBPS_WIDTH 7
const char *lens_fmt_gbps(double gbps, char *buf, size_t len);
/* An amount of bytes for text, one rule for every view (summary, net,
 * report): below 1024 "N B"; else binary units (KiB .. EiB) with one
 * decimal, two for GiB and larger below 100 ("1.16 GiB", "11.49 GiB",
 * "123.5 GiB"): big transfers keep three significant digits. At most
 * LENS_FMT_BYTES_WIDTH characters. JSON writes the integer. Returns buf. */
#define LENS_FMT_BYTES_WIDTH 10
const char *lens_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* One vocabulary (docs/cli.md, "One vocabulary"): */

/* A communicator id: "0x" and 16 lowercase hex digits, always 18
 * characters (in JSON a string: lens_json_comm_id). buf holds at least
 * LENS_COMM_ID_LEN. Returns buf. */
#define LENS_COMM_ID_LEN 19
const char *lens_fmt_comm_id(uint64_t comm_id, char *buf);
/* "0x<16 hex digits>" with its quotes: the value of a JSON "comm_id" key. */
void lens_json_comm_id(FILE *f, uint64_t comm_id);
/* An unnamed communicator's name in text ("-"); JSON writes null. */
#define LENS_COMM_UNNAMED "-"
/* A name for text: the name, or LENS_COMM_UNNAMED. */
const char *lens_fmt_comm_name(const char *name);
/* A communicator as people name it: its name, else "comm 0x<16 hex digits>". */
const char *lens_fmt_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len);
/* The words text writes for a cause's JSON key (snake_case: "late_app_call"
 * -> "late app call"): one table for every view. An unknown key comes back
 * as it is. */
const char *lens_fmt_cause_words(const char *key);

/* Markdown (the report, docs/report.md): a label from a trace or the
 * command line (communicator, host, path, thread, func/algo/proto, a
 * plugin's WARN line) made inert, so that it reads as the text it is and
 * can neither end a table cell nor start markup or HTML. Meant for the
 * middle of a line (a table cell, a heading after its "### ", a list item
 * after its "- "): never at a line's start, where "#", "-", "+", "=" or a
 * digit would start a block. Control characters are the reader's: it
 * replaces them (no newline reaches a label). s NULL reads as "".
 *
 * lens_fmt_md: text. A backslash escape before \ ` * [ ] | ~ $ and before a
 * _ not between two ASCII letters or digits (intraword _ is not emphasis in
 * CommonMark, so "replay_world" stays as it is); < > & as &lt; &gt; &amp;.
 * Everything else is inert there: ( ) ! only make a link or image after [,
 * # + - . only at a line's start, { } mean nothing to CommonMark or GFM.
 * A URL or e-mail address may still be made a link by GFM's autolinks: one
 * that shows exactly its own text.
 *
 * lens_fmt_md_code: a code span (file paths: `trace.lens`), fence included:
 * as many backticks as the longest run of them in s plus one, a space inside
 * each fence when s starts or ends with a backtick. Its text is verbatim,
 * except that GFM splits a table row at a '|' even inside a code span and
 * reads a backslash before one as a pair of its own: a label holding a '|'
 * comes back as lens_fmt_md's text instead, safe in a cell and outside.
 *
 * Bounded by the buffer: when the result does not fit, it ends in
 * LENS_FMT_MD_CUT ("...", a code span's inside its fence), cut between two
 * characters (never inside an escape or a UTF-8 sequence). A buffer too
 * short for even that gets "". len 0: nothing is written, "" is returned.
 * Returns buf. The _put forms write the whole result to f (no bound: the
 * reader bounds what it keeps). */
#define LENS_FMT_MD_CUT "..."
/* Bytes a buffer needs for any label of n bytes whole: an escape is at most
 * 5 bytes for 1 ("&amp;"); a code span's fences take 2 * (n + 2). */
#define LENS_FMT_MD_SIZE(n) (5 * (size_t)(n) + 8)
const char *lens_fmt_md(const char *s, char *buf, size_t len);
const char *lens_fmt_md_code(const char *s, char *buf, size_t len);
void lens_fmt_md_put(FILE *f, const char *s);
void lens_fmt_md_code_put(FILE *f, const char *s);

/* A flight-recorder dump's NOTE, as the plugin's writer words it
 * (plugin/writer/writer.c, recorder_dump): "nccl-lens recorder dump: WHY
 * (store: ...; N chunks, E evicted with R event records)". why: the reason
 * ("hang watchdog: ..."), cut to fit; evicted_*: what the store had dropped
 * before the dump (its oldest history), have_counts 0 when the text does not
 * say. Returns 1 for such a note, 0 for any other text (NULL included). */
struct lens_dump_note {
  char why[160];
  uint64_t evicted_chunks, evicted_records;
  int have_counts;
};
int lens_parse_dump_note(const char *text, struct lens_dump_note *d);

#endif
