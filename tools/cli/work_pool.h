/* Items of work on every core, said in input order.
 *
 * Items 0..n-1 are taken in order by an atomic cursor on `threads` threads
 * (the calling one among them). While an item runs, lens_cli_error and
 * lens_cli_usage on its thread are captured (lens_cli_capture_*) and what
 * it writes to `out` is kept; once every thread is done, each item's
 * output (to stdout) and lines (to stderr) are said in input order, so the
 * answer is the same on 1 thread as on 64.
 *
 * stop_on_fail: no item is taken once one failed, and nothing after the
 * first failed item is said (the items after it stopped, or raced it and
 * are not spoken for). Else every item runs and everything is said. */
#ifndef NCCL_LENS_TOOLS_CLI_WORK_POOL_H
#define NCCL_LENS_TOOLS_CLI_WORK_POOL_H

#include <stddef.h>
#include <stdio.h>

struct lens_cli_pool {
  const char *cmd;      /* for "nccl-lens CMD: out of memory" */
  size_t n;             /* items */
  long threads;         /* at most this many threads (never more than n); <= 0: the online cores */
  int stop_on_fail;
  const char *progress; /* "reading traces": a progress line on a terminal (lens_cli_progress); NULL none */
  /* Item i; out: its stdout, said in order. 0: done, else failed (its lines said why). */
  int (*fn)(void *ctx, size_t i, FILE *out);
  void *ctx;
};

/* 0 when every item's fn returned 0; 1 when one failed or memory ran out
 * (said). */
int lens_cli_pool_run(const struct lens_cli_pool *p);

#endif
