/* The command line shared by subcommands that read traces (summary, export,
 * report, net, job, hang, validate): -h/--help, -o/--output FILE ("-" is
 * standard output), --cupti-buffer FILE (repeatable), --min-wait-us N,
 * --tag-names TAG:NAME,... (user tag names, NCCL 2.31+), the selection
 * (cli/filter.h: --comm, --rank, --func, --since, --until), positional
 * TRACE.lens paths or directories, "-" (a trace on standard input) and
 * TRACE.lens.gz (cli/trace_input.h), "--" before paths that start with '-';
 * every option in the forms of cli/opt.h; plus opening and finishing the
 * output file. One place, so every command words its errors the same. */
#ifndef NCCL_LENS_TRACE_ARGS_H
#define NCCL_LENS_TRACE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/filter.h"
#include "reader/lensread.h"

struct lens_trace_cli {
  const char **paths; size_t n;        /* positional trace files, in order */
  const char **cupti; size_t n_cupti;  /* --cupti-buffer files */
  uint64_t min_wait_ns;                /* --min-wait-us, in ns */
  const char *out;                     /* -o; NULL or "-" means standard output */
  char **owned; size_t n_owned;        /* paths made by expanding directories (freed with the rest) */
  struct lens_filter filter;           /* --comm, --rank, --func, --since, --until */
  int no_filter;                       /* set by a command that applies the selection itself */
  int exit_code;                       /* after lens_trace_cli_parse returned nonzero */
  const char *const *suffixes;         /* what a directory stands for (NULL: *.lens) */
  int expanded;                        /* lens_trace_cli_expand_dirs ran: paths are files */
  /* "-" and NAME.gz inputs, spooled into sealed memfds (cli/trace_input.h):
   * paths[] names them /proc/self/fd/N; closed by lens_trace_cli_free. */
  struct lens_trace_spooled { int fd; char *fd_path; const char *shown; } *spooled; size_t n_spooled;
  /* Inputs whose names hold control bytes, malformed UTF-8 or direction
   * controls (a file another user named, in a directory handed to us): the
   * views show a cleaned copy (lens_cli_shown), the reader opens the real
   * name. Freed by lens_trace_cli_free. */
  struct lens_trace_renamed { const char *real; char *shown; } *renamed; size_t n_renamed;
  /* A directory's file with one of those suffixes is taken only when this
   * says 1 (NULL: every one): e.g. JSON files that are Kineto traces. */
  int (*dir_accept)(const char *path);
  /* The progress line's label while these traces are read (NULL: the
   * default), for a command that reads them twice (export --format job:
   * "1 of 2", "2 of 2") or reads two sets (diff: run A, run B). */
  const char *progress_label;
};

/* A command's own options. Called for an argument the shared loop does not
 * know, before it is taken as an unknown option or a path: returns 0 if not
 * the command's, 1 if consumed (advance *i past any value; lens_opt_val does),
 * -1 after printing one usage error line (lens_cli_usage). */
typedef int (*lens_trace_cli_extra_fn)(void *ctx, int *i, int argc, char **argv);
/* Checks run after the loop and before "no trace files given": 0 ok, -1 after
 * printing one usage error line. */
typedef int (*lens_trace_cli_check_fn)(void *ctx);

/* Returns 0 when ready to load; nonzero when the command ends here, with
 * c->exit_code its exit status: 0 after printing usage to stdout for
 * -h/--help, 2 after one usage error line, 1 out of memory. extra and check
 * may be NULL. Call lens_trace_cli_free() whatever it returns. */
int lens_trace_cli_parse(const char *cmd, int argc, char **argv, struct lens_trace_cli *c, lens_trace_cli_extra_fn extra,
                         lens_trace_cli_check_fn check, void *ctx, void (*usage)(FILE *));
void lens_trace_cli_free(struct lens_trace_cli *c);

/* The options every command that reads traces takes, with their ranges and
 * meanings, for the end of each command's --help. */
void lens_trace_cli_usage_common(FILE *f);
/* The same, less --cupti-buffer when no_cupti (diff: each run's buffers go inside its traces). */
void lens_trace_cli_usage_common_but(FILE *f, int no_cupti);

/* Replaces each directory among c->paths by the files in it whose names end
 * in one of c->suffixes (NULL: ".lens"), sorted by name: every command that
 * reads traces takes a directory. 0, or 1 after one error line (unreadable
 * directory, or none in it). */
int lens_trace_cli_expand_dirs(const char *cmd, struct lens_trace_cli *c);
/* After a load: the model's files named as the user named them ("-",
 * x.lens.gz) instead of /proc/self/fd/N. c must outlive m. */
void lens_trace_cli_name_inputs(const struct lens_trace_cli *c, struct lens_model *m);

/* stdout for no -o or "-", else the file opened for writing; NULL after
 * printing "cannot write FILE". */
FILE *lens_trace_cli_open_out(const char *cmd, const struct lens_trace_cli *c);
/* Closes a file (or flushes stdout); wr is a write failure already seen.
 * Returns 0, or 1 after printing "write error on FILE". */
int lens_trace_cli_close_out(const char *cmd, const struct lens_trace_cli *c, FILE *f, int wr);
/* Whether -o names a real file (not standard output). */
int lens_trace_cli_out_is_file(const struct lens_trace_cli *c);

#endif
