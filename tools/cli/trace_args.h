/* The command line shared by subcommands that read traces (summary, export,
 * report): -h/--help, -o/--output FILE, --cupti-buffer FILE (repeatable),
 * --min-wait-us N, --tag-names TAG:NAME,... (user tag names, NCCL 2.31+),
 * positional TRACE.lens paths; plus opening and finishing
 * the output file. One place, so every command words its errors the same. */
#ifndef NCCL_LENS_TRACE_ARGS_H
#define NCCL_LENS_TRACE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/lensread.h"

struct lens_trace_cli {
  const char **paths; size_t n;        /* positional trace files, in order */
  const char **cupti; size_t n_cupti;  /* --cupti-buffer files */
  uint64_t min_wait_ns;                /* --min-wait-us, in ns */
  const char *out;                     /* -o; NULL or "-" means standard output */
  char **owned; size_t n_owned;        /* paths made by expanding directories (freed with the rest) */
};

/* A command's own options. Called for an argument the shared loop does not
 * know, before it is taken as an unknown option or a path: returns 0 if not
 * the command's, 1 if consumed (advance *i past any value), -1 after printing
 * one error line. */
typedef int (*lens_trace_cli_extra_fn)(void *ctx, int *i, int argc, char **argv);
/* Checks run after the loop and before "no trace files given": 0 ok, -1 after
 * printing one error line. */
typedef int (*lens_trace_cli_check_fn)(void *ctx);

/* Returns 0 when ready to load, 1 after printing one error line, 2 after
 * printing usage to stdout for -h/--help. extra and check may be NULL. Call
 * lens_trace_cli_free() whatever it returns. */
int lens_trace_cli_parse(const char *cmd, int argc, char **argv, struct lens_trace_cli *c, lens_trace_cli_extra_fn extra,
                         lens_trace_cli_check_fn check, void *ctx, void (*usage)(FILE *));
void lens_trace_cli_free(struct lens_trace_cli *c);

/* lens_cli_load() with the parsed paths and options; NULL after an error line. */
/* Replaces each directory among c->paths by the *.lens files in it (sorted
 * by name): every command that reads traces takes a directory. 0, or 1 after
 * one error line (unreadable directory, or none in it). */
int lens_trace_cli_expand_dirs(const char *cmd, struct lens_trace_cli *c);
struct lens_model *lens_trace_cli_load(const char *cmd, struct lens_trace_cli *c);

/* Parse, then load: the model, or NULL with *exit_code set (0 after help, 1
 * after one error line) and c already freed. On success the caller frees the
 * model and then c. */
struct lens_model *lens_trace_cli_start(const char *cmd, int argc, char **argv, struct lens_trace_cli *c,
                                        lens_trace_cli_extra_fn extra, lens_trace_cli_check_fn check, void *ctx,
                                        void (*usage)(FILE *), int *exit_code);

/* stdout for no -o or "-", else the file opened for writing; NULL after
 * printing "cannot write FILE". */
FILE *lens_trace_cli_open_out(const char *cmd, const struct lens_trace_cli *c);
/* Closes a file (or flushes stdout); wr is a write failure already seen.
 * Returns 0, or 1 after printing "write error on FILE". */
int lens_trace_cli_close_out(const char *cmd, const struct lens_trace_cli *c, FILE *f, int wr);
/* Whether -o names a real file (not standard output). */
int lens_trace_cli_out_is_file(const struct lens_trace_cli *c);

#endif
