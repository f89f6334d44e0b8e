/* Shared by subcommands: error reporting and progress on a terminal. */
#ifndef NCCL_LENS_CLI_H
#define NCCL_LENS_CLI_H

#include <stdio.h>

/* Prints "nccl-lens <cmd>: <message>" on one line to stderr. Returns 1. */
int lens_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error: "nccl-lens <cmd>: <message> (try 'nccl-lens <cmd> --help')"
 * on one line to stderr, never the whole usage. Returns 2 (the exit status
 * of a usage error in every command). */
int lens_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* From now on lens_cli_error writes `real` (a /proc/self/fd/N name a
 * spooled input is read by) as `shown` (the name the user gave); shown NULL
 * forgets it. At most 64 at once; more are written as they are. */
void lens_cli_input_alias(const char *real, const char *shown);

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
