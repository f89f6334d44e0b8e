/* See report_recorded.h. Every fact comes from the skeleton (files,
 * processes, communicator inits) and the report's recorded spans; the
 * condensed form counts them and drops none: a value not listed is counted
 * ("N other values"), a process not listed is counted, and --all gives the
 * row per process and per init back. */
#define _GNU_SOURCE /* qsort_r */
#include "report/report_recorded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/format.h"
#include "report/report_md.h"
#include "report/report_tally.h"

/* Runs of ranks a communicator's "missing" or "not finalized" cell names before it ends in "...". */
#define RANK_RUNS 8

static const char *nz(const char *s) { return s && *s ? s : "-"; }

/* Names from the traces (hosts, communicators, paths) are escaped
 * (lens_fmt_md, format.h): a crafted one cannot split a row or bring HTML. */
#define MD_LABEL LENS_FMT_MD_SIZE(128)

static void mask_names(uint32_t mask, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int b = 0; b < LENS_T_COUNT && o < len; b++)
    if (mask & (1u << b)) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", lens_type_name(b));
  if (!buf[0]) snprintf(buf, len, "none");
}

static int finalized(const struct lens_comm *c) { return c->fini_mono_ns && c->fini_mono_ns >= c->init_mono_ns; }

/* ---- a row per process, a row per communicator init (a job that fits the cap, or --all) ---- */

static void procs_table(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  fprintf(f, "| process | NCCL profiler API | event mask | recorded | sessions | clean end | file |\n"
             "|---|---|---|---|---|---|---|\n");
  for (size_t p = 0; p < m->n_procs; p++) {
    const struct lens_proc *pr = &m->procs[p];
    const struct lens_file *fl = &m->files[pr->file];
    char mask[256], dur[32];
    mask_names(pr->event_mask, mask, sizeof mask);
    lens_fmt_ns((double)(r->procs[p].last_ns - r->procs[p].first_ns), dur, sizeof dur);
    char hb[MD_LABEL];
    fprintf(f, "| %s:%u | v%u | 0x%x (%s) | %s | %u | %s | ", lens_fmt_md(pr->host, hb, sizeof hb), pr->pid,
            pr->nccl_api_version, pr->event_mask, mask, r->procs[p].last_ns ? dur : "-", fl->n_sessions,
            fl->clean_end ? "yes" : "no");
    lens_fmt_md_code_put(f, fl->path);
    fputs(" |\n", f);
  }
  fputc('\n', f);
}

static void inits_table(FILE *f, const struct lens_model *m) {
  fprintf(f, "| communicator | comm id | rank | nranks | nnodes | process | init → fini |\n"
             "|---|---|---|---|---|---|---|\n");
  for (size_t c = 0; c < m->n_comms; c++) {
    const struct lens_comm *cm = &m->comms[c];
    const struct lens_proc *pr = &m->procs[cm->proc];
    char life[32] = "not finalized";
    if (finalized(cm)) lens_fmt_ns((double)(cm->fini_mono_ns - cm->init_mono_ns), life, sizeof life);
    char idb[LENS_COMM_ID_LEN], nb[MD_LABEL], hb[MD_LABEL];
    fprintf(f, "| %s | %s | %d | %d | %d | %s:%u | %s |\n", lens_fmt_md(nz(cm->name), nb, sizeof nb),
            lens_fmt_comm_id(cm->comm_id, idb), cm->rank, cm->nranks, cm->nnodes, lens_fmt_md(pr->host, hb, sizeof hb),
            pr->pid, life);
  }
  fputc('\n', f);
}

/* ---- what the processes share, counted ---- */

/* The facts the processes are compared by. */
enum fact { F_API, F_MASK, F_SESSIONS, F_CLEAN, F_FILE, F_DROPS, N_FACTS };
static const char *const fact_label[N_FACTS] = {"NCCL profiler API", "event mask", "sessions", "clean end", "file",
                                                "drops"};

/* A file's state, as bits: what the Data losses section details. */
enum { FILE_EMPTY = 1, FILE_TRUNCATED = 2, FILE_DAMAGED = 4, FILE_LOST = 8 };

static uint64_t fact_of(const struct lens_model *m, size_t p, enum fact k) {
  const struct lens_proc *pr = &m->procs[p];
  const struct lens_file *fl = &m->files[pr->file];
  switch (k) {
  case F_API: return pr->nccl_api_version;
  case F_MASK: return pr->event_mask;
  case F_SESSIONS: return fl->n_sessions;
  case F_CLEAN: return !!fl->clean_end;
  case F_FILE:
    return (!fl->n_sessions && !fl->truncated_bytes ? FILE_EMPTY : 0) | (fl->truncated_bytes ? FILE_TRUNCATED : 0) |
           (fl->damaged_bytes ? FILE_DAMAGED : 0) | (fl->lost_chunks ? FILE_LOST : 0);
  case F_DROPS: return lens_drops_total(&pr->drops) > 0;
  default: return 0;
  }
}

static void fact_text(enum fact k, uint64_t v, char *buf, size_t len) {
  switch (k) {
  case F_API: snprintf(buf, len, "v%" PRIu64, v); break;
  case F_MASK: snprintf(buf, len, "0x%" PRIx64, v); break;
  case F_CLEAN: snprintf(buf, len, "%s", v ? "yes" : "no"); break;
  case F_DROPS: snprintf(buf, len, "%s", v ? "some" : "none"); break;
  case F_FILE:
    if (!v) snprintf(buf, len, "intact");
    else
      snprintf(buf, len, "%s%s%s%s", v & FILE_EMPTY ? "empty " : "", v & FILE_TRUNCATED ? "truncated " : "",
               v & FILE_DAMAGED ? "damaged " : "", v & FILE_LOST ? "chunks lost " : "");
    if (v) buf[strlen(buf) - 1] = 0; /* the last word's space */
    break;
  default: snprintf(buf, len, "%" PRIu64, v);
  }
}

/* "- event mask: 0x7ff (all 1024): Group, Coll, ..." or "- clean end: yes (1023), no (1)". */
static void shared_line(FILE *f, enum fact k, const struct lens_report_tally *t, size_t n) {
  fprintf(f, "- %s: ", fact_label[k]);
  for (size_t i = 0; i < t->k; i++) {
    char v[96];
    fact_text(k, t->v[i], v, sizeof v);
    if (t->n[i] == n) fprintf(f, "%s (all %zu)", v, n);
    else fprintf(f, "%s%s (%zu)", i ? ", " : "", v, t->n[i]);
  }
  if (t->other_vals)
    fprintf(f, ", %zu other value%s (%zu process%s)", t->other_vals, t->other_vals > 1 ? "s" : "", t->other_procs,
            t->other_procs > 1 ? "es" : "");
  if (k == F_MASK && t->k) { /* the most common mask in words */
    char names[256];
    mask_names((uint32_t)t->v[0], names, sizeof names);
    fprintf(f, "; 0x%" PRIx64 " is %s", t->v[0], names);
  }
  fputc('\n', f);
}

/* What a process has that the others do not, in the order it matters
 * (weights: a cut or unclean file and drops before another setting). */
static const double fact_weight[N_FACTS] = {[F_CLEAN] = 32, [F_FILE] = 32, [F_DROPS] = 16, [F_SESSIONS] = 4,
                                            [F_API] = 2, [F_MASK] = 2};

/* Whether process p differs in fact k from the most common value (usual[k]).
 * A clean end, an intact file and no drops are what matters, whatever most do. */
static int differs(const struct lens_model *m, size_t p, enum fact k, const uint64_t *usual) {
  uint64_t v = fact_of(m, p, k);
  switch (k) {
  case F_CLEAN: return !v;
  case F_FILE: return v != 0;
  case F_DROPS: return v != 0;
  default: return v != usual[k];
  }
}

static void differing_table(FILE *f, const struct lens_model *m, const struct lens_report *r, const uint64_t *usual) {
  struct lens_fmt_rows rows;
  double *key = lens_fmt_rows_begin(&rows, m->n_procs, r->sum.all, LENS_FMT_ROWS_PRESENT);
  if (!key) {
    fprintf(f, "Out of memory: the processes that differ are not listed.\n\n");
    return;
  }
  for (size_t p = 0; p < m->n_procs; p++) {
    double w = 0;
    for (int k = 0; k < N_FACTS; k++) w += differs(m, p, k, usual) ? fact_weight[k] : 0;
    uint64_t d = lens_drops_total(&m->procs[p].drops);
    key[p] = w > 0 ? w + (double)d / ((double)d + 1.0) : -1.0; /* more drops first among equals */
  }
  lens_fmt_rows_order(&rows);
  if (!rows.n) {
    fprintf(f, "No process differs from the others: each has a clean end, an intact file, no drops, and the "
               "usual sessions, API version and event mask.\n\n");
    lens_fmt_rows_end(&rows);
    return;
  }
  fprintf(f, "%zu process%s differ%s from the others (those that differ most first):\n\n"
             "| process | differs in | NCCL profiler API | event mask | recorded | sessions | clean end | drops | file |\n"
             "|---|---|---|---|---|---:|---|---:|---|\n",
          rows.n, rows.n > 1 ? "es" : "", rows.n > 1 ? "" : "s");
  for (size_t p; lens_fmt_rows_next(&rows, &p);) {
    const struct lens_proc *pr = &m->procs[p];
    const struct lens_file *fl = &m->files[pr->file];
    char what[160] = "", dur[32], mask[256] = "";
    size_t o = 0;
    for (int k = 0; k < N_FACTS; k++) {
      if (!differs(m, p, k, usual)) continue;
      char v[96];
      if (k == F_CLEAN) snprintf(v, sizeof v, "no clean end");
      else if (k == F_FILE) fact_text(F_FILE, fact_of(m, p, F_FILE), v, sizeof v);
      else snprintf(v, sizeof v, "%s", fact_label[k]);
      o += (size_t)snprintf(what + o, o < sizeof what ? sizeof what - o : 0, "%s%s", o ? ", " : "", v);
    }
    if (pr->event_mask != usual[F_MASK]) mask_names(pr->event_mask, mask, sizeof mask); /* its names: not the usual */
    lens_fmt_ns((double)(r->procs[p].last_ns - r->procs[p].first_ns), dur, sizeof dur);
    char hb[MD_LABEL];
    fprintf(f, "| %s:%u | %s | v%u | 0x%x%s%s%s | %s | %u | %s | %" PRIu64 " | ", lens_fmt_md(pr->host, hb, sizeof hb),
            pr->pid, what, pr->nccl_api_version, pr->event_mask, mask[0] ? " (" : "", mask, mask[0] ? ")" : "",
            r->procs[p].last_ns ? dur : "-", fl->n_sessions, fl->clean_end ? "yes" : "no",
            lens_drops_total(&pr->drops));
    lens_fmt_md_code_put(f, fl->path);
    fputs(" |\n", f);
  }
  fputc('\n', f);
  lens_report_left_out(f, rows.n - rows.listed, "processes that differ");
  lens_fmt_rows_end(&rows);
}

static void procs_shared(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  size_t n = m->n_procs;
  uint64_t *vals = malloc(n * sizeof *vals), usual[N_FACTS] = {0};
  if (!vals) {
    fprintf(f, "Out of memory: the processes are not described.\n\n");
    return;
  }
  fprintf(f, "What the %zu processes share (per value, how many processes have it; --all lists every process):\n\n", n);
  for (int k = 0; k < N_FACTS; k++) {
    for (size_t p = 0; p < n; p++) vals[p] = fact_of(m, p, k);
    struct lens_report_tally t;
    lens_report_tally(vals, n, &t);
    usual[k] = t.k ? t.v[0] : 0;
    shared_line(f, k, &t, n);
    if (k == F_MASK) { /* the recorded span after the settings */
      uint64_t lo = UINT64_MAX, hi = 0;
      size_t none = 0;
      for (size_t p = 0; p < n; p++) {
        if (!r->procs[p].last_ns) {
          none++;
          continue;
        }
        uint64_t d = r->procs[p].last_ns - r->procs[p].first_ns;
        lo = d < lo ? d : lo, hi = d > hi ? d : hi;
      }
      char a[32], b[32];
      fprintf(f, "- recorded (first event start to last stop)");
      if (none < n) {
        lens_fmt_ns((double)lo, a, sizeof a);
        lens_fmt_ns((double)hi, b, sizeof b);
        fprintf(f, ": %s to %s (shortest to longest)", a, b);
      }
      if (none) fprintf(f, "%s%zu process%s recorded no event", none < n ? "; " : ": ", none, none > 1 ? "es" : "");
      fputc('\n', f);
    }
  }
  fputc('\n', f);
  free(vals);
  differing_table(f, m, r, usual);
}

/* ---- a row per communicator ---- */

static int cmp_init(const void *a, const void *b, void *ctx) {
  const struct lens_model *m = ctx;
  const struct lens_comm *x = &m->comms[*(const size_t *)a], *y = &m->comms[*(const size_t *)b];
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* One communicator: the inits o[a..b) (sorted by rank). */
struct comm_row { size_t a, b, first; size_t missing, unfinished; };

static int cmp_first(const void *a, const void *b) {
  size_t x = ((const struct comm_row *)a)->first, y = ((const struct comm_row *)b)->first;
  return (x > y) - (x < y);
}

/* Ranks of [0, nranks) without an init, as a range list; returns how many. */
static size_t missing_ranks(const struct lens_model *m, const size_t *o, size_t a, size_t b, int32_t nranks,
                            char *buf, size_t len) {
  struct lens_fmt_ranges rl;
  lens_fmt_ranges_begin(&rl, buf, len, RANK_RUNS);
  int64_t next = 0; /* the lowest rank not seen yet */
  size_t n = 0;
  for (size_t i = a; i <= b; i++) {
    int64_t r = i < b ? m->comms[o[i]].rank : nranks;
    if (r > nranks) r = nranks; /* a rank past nranks: not missing, just odd */
    if (r > next) {
      lens_fmt_ranges_add(&rl, next, r - 1);
      n += (size_t)(r - next);
    }
    if (r + 1 > next) next = r + 1;
  }
  lens_fmt_ranges_end(&rl);
  return n;
}

static size_t unfinished_ranks(const struct lens_model *m, const size_t *o, size_t a, size_t b, char *buf,
                               size_t len) {
  struct lens_fmt_ranges rl;
  lens_fmt_ranges_begin(&rl, buf, len, RANK_RUNS);
  size_t n = 0;
  for (size_t i = a; i < b; i++)
    if (!finalized(&m->comms[o[i]])) lens_fmt_ranges_add(&rl, m->comms[o[i]].rank, m->comms[o[i]].rank), n++;
  lens_fmt_ranges_end(&rl);
  return n;
}

static void comms_table(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  size_t n = m->n_comms, nc = 0;
  size_t *o = malloc(n * sizeof *o);
  struct comm_row *c = malloc(n * sizeof *c);
  if (!o || !c) {
    fprintf(f, "Out of memory: the communicators are not listed.\n\n");
    free(o), free(c);
    return;
  }
  for (size_t i = 0; i < n; i++) o[i] = i;
  qsort_r(o, n, sizeof *o, cmp_init, (void *)m);
  for (size_t i = 0, j; i < n; i = j) {
    size_t first = o[i];
    for (j = i; j < n && m->comms[o[j]].comm_id == m->comms[o[i]].comm_id; j++)
      if (o[j] < first) first = o[j];
    c[nc++] = (struct comm_row){.a = i, .b = j, .first = first};
  }
  qsort(c, nc, sizeof *c, cmp_first); /* the table's order: as the inits came (each communicator's first) */
  fprintf(f, "%zu communicator init(s) in %zu communicator(s) (a row per communicator; --all lists every init):\n\n"
             "| communicator | comm id | nranks | nnodes | inits | finalized | ranks without an init | "
             "not finalized | init → fini |\n|---|---|---:|---:|---:|---:|---|---|---|\n",
          n, nc);
  /* capped: those with ranks missing or not finalized first */
  struct lens_fmt_rows rows;
  double *key = lens_fmt_rows_begin(&rows, nc, r->sum.all, LENS_FMT_ROWS_EVERY);
  char miss[160], unf[160];
  for (size_t i = 0; key && i < nc; i++) {
    int32_t nr = 0;
    for (size_t k = c[i].a; k < c[i].b; k++) nr = m->comms[o[k]].nranks > nr ? m->comms[o[k]].nranks : nr;
    key[i] = (double)missing_ranks(m, o, c[i].a, c[i].b, nr, miss, sizeof miss) +
             (double)unfinished_ranks(m, o, c[i].a, c[i].b, unf, sizeof unf);
  }
  lens_fmt_rows_order(&rows);
  for (size_t i; lens_fmt_rows_next(&rows, &i);) {
    const struct comm_row *w = &c[i];
    const struct lens_comm *c0 = &m->comms[w->first];
    int32_t nranks = 0, nnodes = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    const char *name = c0->name;
    for (size_t k = w->a; k < w->b; k++) {
      const struct lens_comm *x = &m->comms[o[k]];
      nranks = x->nranks > nranks ? x->nranks : nranks;
      nnodes = x->nnodes > nnodes ? x->nnodes : nnodes;
      if (!*name) name = x->name;
      if (!finalized(x)) continue;
      uint64_t d = x->fini_mono_ns - x->init_mono_ns;
      lo = d < lo ? d : lo, hi = d > hi ? d : hi;
    }
    size_t nm = missing_ranks(m, o, w->a, w->b, nranks, miss, sizeof miss);
    size_t nu = unfinished_ranks(m, o, w->a, w->b, unf, sizeof unf);
    size_t inits = w->b - w->a;
    char life[80] = "-", a[32], b[32], idb[LENS_COMM_ID_LEN];
    if (hi) {
      lens_fmt_ns((double)lo, a, sizeof a);
      lens_fmt_ns((double)hi, b, sizeof b);
      if (lo == hi) snprintf(life, sizeof life, "%s", a);
      else snprintf(life, sizeof life, "%s to %s", a, b);
    }
    char nb[MD_LABEL];
    fprintf(f, "| %s | %s | %d | %d | %zu | %zu | ", lens_fmt_md(nz(name), nb, sizeof nb),
            lens_fmt_comm_id(c0->comm_id, idb), nranks, nnodes, inits, inits - nu);
    if (nm) fprintf(f, "%zu: rank%s %s", nm, nm > 1 ? "s" : "", miss);
    else fputs("none", f);
    if (nu) fprintf(f, " | %zu: rank%s %s", nu, nu > 1 ? "s" : "", unf);
    else fputs(" | none", f);
    fprintf(f, " | %s |\n", life);
  }
  lens_fmt_rows_end(&rows);
  fputc('\n', f);
  lens_report_left_out(f, rows.n - rows.listed, "communicators");
  free(o);
  free(c);
}

void lens_report_print_recorded(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < m->n_files; i++) bytes += m->files[i].size_bytes;
  fprintf(f, "## What was recorded\n\n%zu file(s) (%" PRIu64 " bytes), %zu process(es), %zu communicator "
             "init(s), %zu thread(s), %zu events, %zu scheduler samples.\n\n",
          m->n_files, bytes, m->n_procs, m->n_comms, m->n_threads, (size_t)r->n_events, r->n_sched);
  /* a table that fits (or --all): a row each; past the cap, counted */
  if (m->n_procs) {
    if (lens_fmt_rows_listed(m->n_procs, r->sum.all) == m->n_procs) procs_table(f, m, r);
    else procs_shared(f, m, r);
  }
  if (m->n_comms) {
    if (lens_fmt_rows_listed(m->n_comms, r->sum.all) == m->n_comms) inits_table(f, m);
    else comms_table(f, m, r);
  }
}
