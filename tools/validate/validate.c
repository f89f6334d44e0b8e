/* nccl-lens validate TRACE... [--cupti-buffer FILE...] [--json] [--limit N|--all]
 *
 * Joins CUPTI kernel records to NCCL's launches, fits per-GPU clock maps
 * and says how far NCCL's kernel timing (KernelCh pTimers) can be trusted:
 * per kernel and per channel whether the span sits inside the kernel CUPTI
 * measured, how late the proxy thread noticed it, where its time came from,
 * and whether the 64-slot timer ring was overrun.
 *
 * Read host group by host group (tools/cli/passes.h): the driver's load runs
 * the GPU analysis on each group; validate_part.c maps each group to its
 * counts and the launches it may list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/passes.h"
#include "cli/spool.h"
#include "cli/trace_args.h"
#include "validate_part.h"
#include "validate_print.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens validate [--json] [--limit N|--all] [-o FILE] [common options] TRACE.lens|DIR...\n"
          "  --json               machine-readable output\n"
          "  --limit N            list at most N of each list: clock maps, launches, channels without a launch\n"
          "                       (default: 20 as text; with --json every flagged launch and channel and the\n"
          "                       first ok ones, \"left_out\" counting the rest; totals and flags cover all)\n"
          "  --all                list every clock map, launch and channel, as text and --json\n"
          "  The text starts with the verdict.\n");
  lens_trace_cli_usage_common(f);
}

/* --json and --limit; the rest is the shared command line (cli/trace_args.h). */
static int validate_option(void *ctx, int *i, int argc, char **argv) {
  struct lens_validate_opts *o = ctx;
  const char *v;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  int r = lens_opt_val("validate", i, argc, argv, "--limit", 0, "a number of launches", &v);
  if (r > 0) {
    char *end;
    o->limit = strtol(v, &end, 10);
    if (end == v || *end || o->limit < 0)
      return lens_cli_usage("validate", "--limit wants a number of launches >= 0, not '%s'", v), -1;
  }
  return r;
}

int lens_cmd_validate(int argc, char **argv) {
  struct lens_validate_opts o = {.json = 0, .limit = LENS_VALIDATE_LIMIT_DEFAULT, .all = 0};
  struct lens_trace_cli c;
  int rc = 1;
  struct lens_spool_dir *spool = NULL;
  if (lens_trace_cli_parse("validate", argc, argv, &c, validate_option, NULL, &o, usage)) {
    rc = c.exit_code;
    goto out;
  }
  if (!(spool = lens_spool_dir_new("validate", NULL))) goto out;
  /* Each group lists at most what the job can: --limit, 20 as text, all
   * with --all; --json's default every flagged item and the first ok ones. */
  long limit = o.all                                  ? -1
               : o.limit != LENS_VALIDATE_LIMIT_DEFAULT ? o.limit
               : o.json                                 ? -1
                                                        : LENS_VALIDATE_TEXT_LAUNCHES;
  struct lens_validate_map_ctx mc = {.spool = spool, .limit = limit, .ok_capped = lens_validate_ok_capped(&o)};
  /* Steps are folded: the JSON gives each file's events, its folded steps
   * included (lens_proc.folded_steps), as summary does. */
  struct lens_pass pass = {.map = lens_validate_map, .free = lens_validate_part_free, .ctx = &mc};
  struct lens_passes_out po;
  rc = lens_passes_run("validate", &c, &pass, 1, NULL, &po);
  FILE *f = NULL;
  if (!rc && !(f = lens_trace_cli_open_out("validate", &c))) rc = 1;
  if (f) {
    struct lens_validate_job j;
    if (lens_validate_merge(po.skel, (const struct lens_validate_part *const *)po.parts, po.n_groups, po.bases,
                            spool, &j)) {
      rc = lens_cli_error("validate", "out of memory");
    } else {
      rc = lens_validate_print(f, po.skel, &j, &o); /* 1 after its own error line */
      lens_validate_job_free(&j);
    }
  }
  lens_passes_free(&pass, &po);
  /* "cannot write" said: never exit 0 after it. */
  if (f && lens_trace_cli_close_out("validate", &c, f, 0)) rc = rc ? rc : 1;
out:
  lens_spool_dir_free(spool);
  lens_trace_cli_free(&c);
  return rc;
}
