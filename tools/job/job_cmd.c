/* nccl-lens job TRACE|PARTIAL|KINETO|DIR... [--json] [--all] [--min-straggler-us N] [--partial] [--threads N] [-o FILE]
 *
 * The whole job from every trace given (a directory means every .lens,
 * .lensjob, .json and .json.gz in it; the JSON files are torch.profiler's
 * Kineto traces, one per rank, imported by tools/import/kineto/): collectives matched across ranks, execution vs waiting,
 * stragglers and their causes (docs/job.md).
 *
 * Map and reduce (docs/scale.md): the traces are grouped by host (the
 * SESSION's hostname; probe traces too), each group is loaded into its own
 * model and mapped to compact per-instance records on a pool of threads, the
 * model freed; the records of every group (and of partial files given) are
 * then reduced into the job view. Memory: one model per thread plus the
 * records. --partial writes the records instead (a partial file, to be
 * reduced where every node's partial is gathered). */
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/filter.h"
#include "cli/opt.h"
#include "cli/passes.h"
#include "cli/trace_args.h"
#include "cli/work_pool.h"
#include "export/load_traces.h"
#include "job/job_print.h"
#include "hang/hang_print.h"
#include "analysis/job/job_align.h"
#include "analysis/job/job.h"
#include "analysis/job/job_part.h"
#include "kineto_job.h"
#include "kineto_read.h"

#define CMD "job"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens job [--json] [--all|--top N] [--min-straggler-us N] [-o FILE] [--threads N] [--partial]\n"
             "                     [common options] TRACE.lens|PARTIAL|KINETO.json[.gz]|DIR...\n"
             "  Matches every collective across the ranks of its communicator and splits it into execution (the\n"
             "  span of the rank that started last) and each rank's wait, from each GPU's own clock; names the\n"
             "  rank that made the others wait and why. A directory means every .lens, .lensjob, .json and\n"
             "  .json.gz file in it; .json[.gz] files are torch.profiler (Kineto) traces, one per rank: their NCCL\n"
             "  kernels are matched by process group and Seq (else order), times on each host's wall clock.\n"
             "  --min-straggler-us N  name a last rank only when the others waited >= N us (default 20) and\n"
             "                        >= 2%% of the execution\n"
             "  --all                 list every instance with a straggler (default: the 20 longest waits); with\n"
             "                        --json every instance (default: every one with a cause or a flag and the\n"
             "                        first ok ones, \"left_out\" counting the rest)\n"
             "  --top N               list the N longest waits (0 = all, as --all)\n"
             "  --end-spread-us N     hosts: how far apart the ranks of one collective may end (default 5; doubled\n"
             "                        while the sync points contradict each other)\n"
             "  --sync-only           hosts: offsets from the job's sync points alone, not CLOCK_REALTIME (a check)\n"
             "  --no-one-way          hosts: leave out the one-way bounds of network transfers between hosts\n"
             "  --one-way-only        hosts: offsets from those one-way bounds alone (no REALTIME offset, no\n"
             "                        collective end): a check\n"
             "  --stream              (every run reads host by host now; kept for old scripts)\n"
             "  --partial             write the compact per-instance records of the traces given (-o FILE, a\n"
             "                        .lensjob partial file) instead of the report; a later 'nccl-lens job' takes\n"
             "                        partial files wherever it takes traces (docs/scale.md)\n"
             "  --threads N           hosts' traces mapped on N threads at once (1..1024, default: the cores)\n"
             "  The selection (--comm, --rank, --func, --since, --until) reads traces, not partial or Kineto files.\n");
  lens_trace_cli_usage_common(f);
}

struct opts {
  int json, partial, stream;
  long top; /* instances listed in text (--top N; --all = 0 = every one) */
  long threads;
  uint64_t min_ns;
  struct lens_align_opts align;
};

static int job_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  const char *a = argv[*i], *v;
  int r;
  if (lens_opt_flag(a, "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(a, "--all", 0)) return o->top = 0, 1;
  if (lens_opt_flag(a, "--partial", 0)) return o->partial = 1, 1;
  if (lens_opt_flag(a, "--stream", 0)) return o->stream = 1, 1;
  if (lens_opt_flag(a, "--sync-only", 0)) return o->align.sync_only = 1, 1;
  if (lens_opt_flag(a, "--no-one-way", 0)) return o->align.no_oneway = 1, 1;
  if (lens_opt_flag(a, "--one-way-only", 0)) return o->align.oneway_only = 1, 1;
  if ((r = lens_top_option(CMD, i, argc, argv, &o->top))) return r;
  uint64_t n;
  if ((r = lens_opt_val(CMD, i, argc, argv, "--end-spread-us", 0, "a number of microseconds", &v))) {
    if (r > 0 && (lens_cli_parse_u64(v, &n) || !n || n > 1000000))
      return lens_cli_usage(CMD, "--end-spread-us wants microseconds 1..1000000, not '%s'", v), -1;
    if (r > 0) o->align.end_spread_ns = n * 1000;
    return r;
  }
  if ((r = lens_opt_val(CMD, i, argc, argv, "--threads", 0, "a number of threads", &v))) {
    if (r > 0 && (lens_cli_parse_u64(v, &n) || n < 1 || n > 1024))
      return lens_cli_usage(CMD, "--threads wants a number of threads 1..1024, not '%s'", v), -1;
    if (r > 0) o->threads = (long)n;
    return r;
  }
  if ((r = lens_opt_val(CMD, i, argc, argv, "--min-straggler-us", 0, "a number of microseconds", &v))) {
    if (r > 0 && (lens_cli_parse_u64(v, &n) || n > UINT64_MAX / 1000))
      return lens_cli_usage(CMD, "--min-straggler-us wants microseconds >= 0, not '%s'", v), -1;
    if (r > 0) o->min_ns = n * 1000;
    return r;
  }
  return 0;
}

/* ---- map: partial files and Kineto traces on a pool of threads; the
 * traces, host group by host group, through the pass driver (passes.h) ---- */

struct map_ctx {
  char **paths;
  size_t *partials; size_t n_partials;  /* indexes into paths of the partial files */
  size_t *kinetos; size_t n_kinetos;    /* ... of the Kineto traces */
  struct lens_kineto_job_stats *kstats; /* one per Kineto trace */
  struct lens_job_part *parts;          /* partial files first, then Kineto traces (then the host groups' parts) */
  const struct lens_trace_cli *c;
};

/* Kineto files that name a rank an earlier file named (same rank, same world
 * size): one file given twice, or two profiling windows of one rank (a
 * schedule with repeat writes a file per window into one directory). The
 * reduce keeps one record per (instance, rank), so one file's kernel of
 * an instance both hold would vanish unsaid: one line each
 * on stderr, and the count in the report. Sorted pairs: n log n for any n. */
struct rank_key {
  int64_t world, rank;
  size_t file;
};
static int rank_key_cmp(const void *a, const void *b) {
  const struct rank_key *x = a, *y = b;
  if (x->world != y->world) return x->world < y->world ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->file < y->file ? -1 : x->file > y->file;
}
static int kineto_same_rank(const struct map_ctx *x, size_t *count) {
  *count = 0;
  if (x->n_kinetos < 2) return 0;
  struct rank_key *k = malloc(x->n_kinetos * sizeof *k);
  if (!k) return -1;
  for (size_t i = 0; i < x->n_kinetos; i++)
    k[i] = (struct rank_key){.world = x->kstats[i].world_size, .rank = x->kstats[i].rank, .file = i};
  qsort(k, x->n_kinetos, sizeof *k, rank_key_cmp);
  size_t first = 0;
  for (size_t i = 1; i < x->n_kinetos; i++) {
    if (k[i].world != k[first].world || k[i].rank != k[first].rank) {
      first = i;
      continue;
    }
    (*count)++;
    char a[512], b[512];
    fprintf(stderr, "nccl-lens %s: %s: rank %" PRId64 " again (also %s): an instance both files hold counts "
                    "one of its two kernels\n",
            CMD, lens_cli_shown(x->paths[x->kinetos[k[i].file]], a, sizeof a), k[i].rank,
            lens_cli_shown(x->paths[x->kinetos[k[first].file]], b, sizeof b));
  }
  free(k);
  return 0;
}

static int map_one(struct map_ctx *x, size_t w) {
  char err[512];
  struct lens_job_part *p = &x->parts[w];
  if (w < x->n_partials) {
    if (lens_job_part_read(x->paths[x->partials[w]], p, err, sizeof err)) return lens_cli_error(CMD, "%s", err), -1;
    return 0;
  }
  if (w < x->n_partials + x->n_kinetos) {
    size_t k = w - x->n_partials;
    if (lens_kineto_job_map(x->paths[x->kinetos[k]], p, &x->kstats[k], err, sizeof err))
      return lens_cli_error(CMD, "%s", err), -1;
    return 0;
  }
  return -1; /* not reached: traces go through the pass driver */
}

/* The job pass: one host group's model to its records. */
static void *job_pass_map(struct lens_model *m, void *ctx) {
  void *p = lens_job_pass_map(m, ctx); /* packed: it waits for the reduce beside every other group's */
  if (!p) lens_cli_error(CMD, "out of memory");
  return p;
}

/* File w on a worker thread of the pool (work_pool.h: its lines said in input order). */
static int map_item(void *ctx, size_t w, FILE *out) {
  (void)out;
  return map_one(ctx, w);
}

/* One partial of many: procs, comms, records and ops renumbered. */
static int concat_parts_with(const struct lens_job_part *ps, size_t n, struct lens_job_part *out,
                             struct lens_job_prec **scratch, size_t *scratch_cap) {
  memset(out, 0, sizeof *out);
  size_t nf = 0, np = 0, nc = 0, nr = 0, no = 0, nw = 0;
  for (size_t k = 0; k < n; k++)
    nf += ps[k].n_files, np += ps[k].n_procs, nc += ps[k].n_comms, nr += ps[k].n_recs, no += ps[k].n_ops,
        nw += ps[k].n_wops;
  out->files = calloc(nf ? nf : 1, sizeof *out->files);
  out->procs = calloc(np ? np : 1, sizeof *out->procs);
  out->comms = calloc(nc ? nc : 1, sizeof *out->comms);
  out->recs = calloc(nr ? nr : 1, sizeof *out->recs);
  out->ops = calloc(no ? no : 1, sizeof *out->ops);
  out->wops = calloc(nw ? nw : 1, sizeof *out->wops);
  if (!out->files || !out->procs || !out->comms || !out->recs || !out->ops || !out->wops) return -1;
  out->have_ce = 1;
  for (size_t k = 0; k < n; k++) {
    const struct lens_job_part *p = &ps[k];
    int32_t pb = (int32_t)out->n_procs;
    uint64_t ob = out->n_ops;
    uint32_t rb = (uint32_t)out->n_recs;
    for (size_t i = 0; i < p->n_files; i++)
      if (!(out->files[out->n_files++] = strdup(p->files[i]))) return -1;
    /* a part without procs or ops has NULL arrays: memcpy's arguments must not be NULL even for 0 bytes */
    if (p->n_procs) memcpy(out->procs + out->n_procs, p->procs, p->n_procs * sizeof *p->procs);
    out->n_procs += p->n_procs;
    for (size_t i = 0; i < p->n_comms; i++) {
      struct lens_job_pcomm *c = &out->comms[out->n_comms++];
      *c = p->comms[i];
      if (c->proc >= 0) c->proc += pb;
    }
    const struct lens_job_prec *recs = lens_job_part_recs(p, scratch, scratch_cap); /* packed by job_pass_map */
    if (!recs && p->n_recs) return -1;
    for (size_t i = 0; i < p->n_recs; i++) {
      struct lens_job_prec *r = &out->recs[out->n_recs++];
      *r = recs[i];
      if (r->r.proc >= 0) r->r.proc += pb;
      r->first_op += ob;
    }
    if (p->n_ops) memcpy(out->ops + out->n_ops, p->ops, p->n_ops * sizeof *p->ops);
    out->n_ops += p->n_ops;
    for (size_t i = 0; i < p->n_wops; i++) {
      struct lens_job_wop *w = &out->wops[out->n_wops++];
      *w = p->wops[i];
      w->rec += rb;
    }
    out->have_clock_map |= p->have_clock_map;
    out->ce_count += p->ce_count;
    out->ce_enqueue_ns += p->ce_enqueue_ns;
    if (!p->have_ce) out->have_ce = 0;
  }
  size_t n_clocks;
  return (out->clocks = lens_job_parts_clocks(ps, n, &n_clocks)) ? 0 : -1;
}
static int concat_parts(const struct lens_job_part *ps, size_t n, struct lens_job_part *out) {
  struct lens_job_prec *scratch = NULL;
  size_t cap = 0;
  int rc = concat_parts_with(ps, n, out, &scratch, &cap);
  free(scratch);
  return rc;
}

/* The hang analysis of `nccl-lens hang` on the same traces, as a pass
 * with the ProxySteps folded: the reader keeps what the diagnosis reads of
 * them (a stuck op's step and state, a proxy's last record), so job names
 * what hang names. 1 when h holds it. */
static int job_hang(const struct lens_passes_out *out, size_t pass, struct lens_hang_report *h) {
  return !lens_hang_merge((struct lens_hang_part *const *)out->parts + pass * out->n_groups, out->n_groups,
                          out->bases, h);
}

/* Communicators matched by order (Kineto files without Seq) whose ranks
 * hold different numbers of their instances: the order pairs some kernels
 * of different collectives there (a profiling window that starts mid-step
 * on one rank). */
struct comm_rank { uint64_t comm; int32_t rank; };
static int comm_rank_cmp(const void *x, const void *y) {
  const struct comm_rank *a = x, *b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}
static size_t uneven_order_comms(const struct lens_job *j) {
  size_t n = 0, out = 0;
  for (size_t i = 0; i < j->n_insts; i++)
    if (j->insts[i].flags & LENS_JOB_BY_ORDER) n += j->insts[i].n_ranks;
  struct comm_rank *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return 0;
  n = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (!(in->flags & LENS_JOB_BY_ORDER)) continue;
    for (size_t k = 0; k < in->n_ranks; k++) v[n++] = (struct comm_rank){in->comm_id, j->ranks[in->first_rank + k].rank};
  }
  qsort(v, n, sizeof *v, comm_rank_cmp);
  for (size_t s = 0; s < n;) { /* one communicator: its ranks' counts */
    size_t e = s, lo = SIZE_MAX, hi = 0;
    while (e < n && v[e].comm == v[s].comm) {
      size_t r = e;
      while (e < n && v[e].comm == v[s].comm && v[e].rank == v[r].rank) e++;
      if (e - r < lo) lo = e - r;
      if (e - r > hi) hi = e - r;
    }
    out += lo != hi;
    s = e;
  }
  free(v);
  return out;
}

/* A directory's .json[.gz] files are taken when they are Kineto traces (a
 * replay's truth.json or a job.json beside the traces are not). */
static int dir_accept(const char *path) { return !lens_kineto_name_is(path) || lens_kineto_sniff(path); }

int lens_cmd_job(int argc, char **argv) {
  struct opts o = {.top = 20};
  struct lens_trace_cli c;
  int r = lens_trace_cli_parse(CMD, argc, argv, &c, job_option, NULL, &o, usage);
  if (r) {
    r = c.exit_code;
    lens_trace_cli_free(&c);
    return r;
  }
  /* traces, partial files, Kineto traces */
  static const char *const suffixes[] = {".lens", ".lensjob", ".json", ".json.gz", NULL};
  c.suffixes = suffixes;
  c.dir_accept = dir_accept;
  if (lens_trace_cli_expand_dirs(CMD, &c)) {
    lens_trace_cli_free(&c);
    return 1;
  }
  size_t n = c.n;
  char **paths = (char **)c.paths;
  int rc = 1;
  struct map_ctx x = {.paths = paths, .c = &c};
  size_t n_parts = 0, n_trace = 0, n_files_parts = 0, same_rank = 0;
  struct lens_model *skel = NULL;
  int have_job = 0, have_hang = 0, ran_passes = 0;
  struct lens_job j;
  struct lens_hang_report h;
  struct lens_job_part *all_parts = NULL;
  const char **traces = NULL;
  /* the traces' passes: the job's records, and (for the view) the hang analysis with the steps folded */
  struct lens_pass passes[2] = {{.map = job_pass_map, .free = lens_job_pass_free},
                                {.map = lens_hang_pass_map, .free = lens_hang_pass_free}};
  size_t n_passes = o.partial ? 1 : 2;
  struct lens_passes_out po;
  memset(&po, 0, sizeof po);
  if (o.partial && !lens_trace_cli_out_is_file(&c)) {
    rc = lens_cli_usage(CMD, "--partial writes a file: give it with -o FILE");
    goto out;
  }
  x.partials = malloc((n ? n : 1) * sizeof *x.partials);
  x.kinetos = malloc((n ? n : 1) * sizeof *x.kinetos);
  x.kstats = calloc(n ? n : 1, sizeof *x.kstats);
  traces = malloc((n ? n : 1) * sizeof *traces);
  if (!x.partials || !x.kinetos || !x.kstats || !traces) goto oom;
  for (size_t i = 0; i < n; i++) {
    if (lens_kineto_name_is(paths[i])) x.kinetos[x.n_kinetos++] = i; /* records of their own, as partial files */
    else if (lens_job_part_is(paths[i]) == 1) x.partials[x.n_partials++] = i;
    else traces[n_trace++] = paths[i];
  }
  /* Kineto files beside the plugin's traces or partials (a directory where
   * both lie, as when NCCL_LENS_OUTPUT_DIR is torch.profiler's): a rank's
   * collectives would come twice, keyed by two communicator ids (PyTorch's
   * process group, NCCL's commHash) that never match, so every collective
   * would count twice and neither copy would see the other's ranks. The
   * plugin's records say more; the Kineto files are left out, said once. */
  if (x.n_kinetos && (n_trace || x.n_partials)) {
    fprintf(stderr, "nccl-lens %s: %zu Kineto file%s left out: beside the plugin's traces they would count each "
                    "collective twice\n",
            CMD, x.n_kinetos, x.n_kinetos == 1 ? "" : "s");
    x.n_kinetos = 0;
  }
  if ((x.n_partials || x.n_kinetos) && lens_filter_any(&c.filter)) {
    rc = lens_cli_usage(CMD, "--comm, --rank, --func, --since and --until select from traces, not partial or Kineto "
                             "files");
    goto out;
  }
  /* Partial files and Kineto traces: read on a pool of threads. */
  n_files_parts = x.n_partials + x.n_kinetos;
  x.parts = calloc(n_files_parts ? n_files_parts : 1, sizeof *x.parts);
  if (!x.parts) goto oom;
  if (n_files_parts) {
    struct lens_cli_pool pool = {.cmd = CMD, .n = n_files_parts, .threads = o.threads, .stop_on_fail = 1,
                                 .fn = map_item, .ctx = &x};
    if (lens_cli_pool_run(&pool)) goto out;
    if (kineto_same_rank(&x, &same_rank)) goto oom;
  }
  /* Traces: host group by host group (passes.h), the same for 1 trace as for 10^4. */
  if (n_trace) {
    c.paths = traces, c.n = n_trace;
    struct lens_passes_opts popt = {.threads = o.threads};
    r = lens_passes_run(CMD, &c, passes, n_passes, &popt, &po);
    ran_passes = 1;
    if (r) {
      rc = r;
      goto out;
    }
  }
  /* Every part in input order of kind: partial files, Kineto traces, host groups. */
  n_parts = n_files_parts + po.n_groups;
  all_parts = calloc(n_parts ? n_parts : 1, sizeof *all_parts);
  if (!all_parts) goto oom;
  for (size_t i = 0; i < n_files_parts; i++) all_parts[i] = x.parts[i], memset(&x.parts[i], 0, sizeof x.parts[i]);
  for (size_t g = 0; g < po.n_groups; g++) {
    struct lens_job_part *p = po.parts[g];
    all_parts[n_files_parts + g] = *p;
    memset(p, 0, sizeof *p);
  }
  FILE *f = NULL;
  if (o.partial) {
    struct lens_job_part all;
    int bad = concat_parts(all_parts, n_parts, &all);
    if (bad) {
      lens_job_part_free(&all);
      goto oom;
    }
    f = lens_trace_cli_open_out(CMD, &c);
    if (f) rc = lens_trace_cli_close_out(CMD, &c, f, lens_job_part_write(f, &all));
    lens_job_part_free(&all);
    goto out;
  }
  if (n_trace) have_hang = job_hang(&po, 1, &h);
  skel = lens_job_skeleton(all_parts, n_parts);
  if (!skel || lens_job_reduce_consume(all_parts, n_parts, &j, o.min_ns)) goto oom;
  have_job = 1;
  /* Rows reduced from records have no events: the hosts are placed from
   * the clocks and rank ends the map kept with the records. */
  for (size_t i = 0; i < j.n_ranks; i++) j.ranks[i].event = -1;
  struct lens_align al;
  size_t n_clocks;
  struct lens_align_proc_clock *clocks = lens_job_parts_clocks(all_parts, n_parts, &n_clocks);
  int bad_align = !clocks || lens_align_build_ends(clocks, n_clocks, &j, &o.align, &al);
  free(clocks);
  if (bad_align) goto oom;
  struct lens_job_sources src = {.kineto_files = x.n_kinetos,
                                 .uneven_comms = x.n_kinetos ? uneven_order_comms(&j) : 0,
                                 .same_rank_files = same_rank};
  for (size_t i = 0; i < x.n_kinetos; i++) {
    const struct lens_kineto_job_stats *k = &x.kstats[i];
    src.kernels += k->nccl_kernels, src.by_seq += k->by_seq, src.by_order += k->by_order;
    src.no_launch += k->no_launch, src.no_api += k->no_api, src.dropped += k->dropped;
  }
  f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    /* the hang of the traces (partial files and Kineto traces carry none) leads */
    if (o.json) {
      lens_job_print_json_listed(f, skel, &j, &al, have_hang ? &h : NULL, &src, o.top == 0);
    } else {
      if (have_hang) lens_hang_print_headline(f, &h);
      lens_job_print_text(f, skel, &j, (size_t)o.top, &al, &src);
    }
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
  lens_align_free(&al);
  goto out;
oom:
  lens_cli_error(CMD, "out of memory");
out:
  if (have_hang) lens_hang_free(&h);
  if (have_job) lens_job_free(&j);
  lens_job_skeleton_free(skel);
  for (size_t i = 0; all_parts && i < n_parts; i++) lens_job_part_free(&all_parts[i]);
  free(all_parts);
  for (size_t i = 0; x.parts && i < n_files_parts; i++) lens_job_part_free(&x.parts[i]);
  free(x.parts);
  if (ran_passes) lens_passes_free(passes, &po);
  if (n_trace) c.paths = (const char **)paths, c.n = n;
  free(traces);
  free(x.partials);
  free(x.kinetos);
  free(x.kstats);
  lens_trace_cli_free(&c); /* paths are c's */
  return rc;
}
