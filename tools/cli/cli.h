/* Shared by subcommands: error reporting and progress on a terminal. */
#ifndef NCCL_LENS_CLI_H
#define NCCL_LENS_CLI_H

#include <stdio.h>

/* Prints "nccl-lens <cmd>: <message>" on one line to stderr. Returns 1. The
 * line is cleaned as labels are (lens_label_clean): a file name another user
 * chose (an input in a shared directory) brings no terminal escape, line
 * break or direction override with it. */
int lens_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error: "nccl-lens <cmd>: <message> (try 'nccl-lens <cmd> --help')"
 * on one line to stderr, never the whole usage, cleaned as lens_cli_error's.
 * Returns 2 (the exit status of a usage error in every command). */
int lens_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Error and usage lines of one piece of work run on a worker thread (work_pool.h), kept
 * to be said in input order once the work is done: two threads that each
 * met a bad input must not both print, nor in a racing order. Between
 * begin and end, lens_cli_error and lens_cli_usage on the calling thread
 * append to text (len bytes, malloc'd, NUL-terminated after end; free it)
 * instead of writing stderr. begin: 0, or -1 (out of memory; lines then go
 * to stderr). */
struct lens_cli_capture {
  FILE *f;
  char *text;
  size_t len;
};
int lens_cli_capture_begin(struct lens_cli_capture *c);
void lens_cli_capture_end(struct lens_cli_capture *c);

/* From now on lens_cli_error writes `real` (a /proc/self/fd/N name a
 * spooled input is read by) as `shown` (the name the user gave); shown NULL
 * forgets it. At most 64 at once; more are written as they are. */
void lens_cli_input_alias(const char *real, const char *shown);

/* name (a file name, a path: anything not ours) as a terminal may show it:
 * copied into buf and cleaned as labels are (control bytes, malformed UTF-8,
 * direction controls become '?'). Returns buf. */
const char *lens_cli_shown(const char *name, char *buf, size_t cap);

/* A directory named on the command line (--dir): 0 when it is one, else its one error line
 * ("nccl-lens <cmd>: DIR: reason") and 1. */
int lens_cli_check_dir(const char *cmd, const char *dir);

/* mkdir -p DIR (0755 for what it creates), then a writable directory: 0, else -1 with errno. */
int lens_cli_make_dir(const char *dir);

/* fopen(path, "w") for a file a command names itself (nofollow-ok: this is the O_NOFOLLOW helper),
 * not one the user named: a link planted at that name fails the open instead of
 * being followed; a file there is truncated. NULL with errno on failure. */
FILE *lens_cli_fopen_new(const char *path);

/* Progress line on stderr, only when stderr is a terminal; done < 0 clears it. */
void lens_cli_progress(const char *what, long done, long total);

#endif
