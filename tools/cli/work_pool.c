/* One mechanism for the commands that read many inputs at once (the pass
 * driver's host groups, job's partial and Kineto files, the Kineto merge):
 * see work_pool.h. */
#include "cli/work_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

struct run {
  const struct lens_cli_pool *p;
  atomic_size_t next, finished;
  atomic_int failed_any;
  struct lens_cli_capture *said; /* per item: its error and usage lines */
  char **out;                    /* per item: what it wrote to its out */
  unsigned char *failed;         /* per item */
};

static void *worker(void *arg) {
  struct run *r = arg;
  const struct lens_cli_pool *p = r->p;
  for (size_t i; !(p->stop_on_fail && atomic_load(&r->failed_any)) && (i = atomic_fetch_add(&r->next, 1)) < p->n;) {
    size_t len = 0;
    FILE *out = open_memstream(&r->out[i], &len);
    int capturing = !lens_cli_capture_begin(&r->said[i]);
    int rc = out ? p->fn(p->ctx, i, out) : (lens_cli_error(p->cmd, "out of memory"), -1);
    if (capturing) lens_cli_capture_end(&r->said[i]);
    if (out) fclose(out);
    if (rc) r->failed[i] = 1, atomic_store(&r->failed_any, 1);
    size_t fin = atomic_fetch_add(&r->finished, 1) + 1;
    if (p->progress) lens_cli_progress(p->progress, (long)fin, (long)p->n);
  }
  return NULL;
}

int lens_cli_pool_run(const struct lens_cli_pool *p) {
  int rc = 1;
  struct run r = {.p = p};
  long nt = p->threads > 0 ? p->threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if ((size_t)nt > p->n) nt = p->n ? (long)p->n : 1;
  size_t slots = p->n ? p->n : 1, started = 0;
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  r.said = calloc(slots, sizeof *r.said);
  r.out = calloc(slots, sizeof *r.out);
  r.failed = calloc(slots, 1);
  if (!th || !r.said || !r.out || !r.failed) {
    lens_cli_error(p->cmd, "out of memory");
    goto out;
  }
  for (long t = 1; t < nt; t++, started++)
    if (pthread_create(&th[t - 1], NULL, worker, &r)) break;
  worker(&r); /* this thread too (and alone if no thread could start) */
  for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
  if (p->progress) lens_cli_progress(NULL, -1, 0); /* the line cleared */
  rc = 0;
  for (size_t i = 0, stop = 0; i < p->n && !stop; i++) {
    if (r.out[i]) fputs(r.out[i], stdout);
    fflush(stdout);
    if (r.said[i].text) fputs(r.said[i].text, stderr);
    if (r.failed[i]) rc = 1;
    if (p->stop_on_fail) stop = r.failed[i];
  }
out:
  for (size_t i = 0; r.said && r.out && i < p->n; i++) free(r.said[i].text), free(r.out[i]);
  free(r.said), free(r.out), free(r.failed), free(th);
  return rc;
}
