/* A model without events: what every view prints of a job besides its
 * numbers (files, processes, communicators, threads, notes, clock evidence,
 * the GPU clock maps the analyses fitted), gathered from the models of the
 * job's host groups one after the other (lens_model_skeleton_add), so that
 * each group's model can be freed as soon as its passes have run
 * (tools/cli/passes.h). The strings it keeps are its own. */
#include <stdlib.h>
#include <string.h>

#include "lensread.h"
#include "reader_priv.h"

struct lens_model *lens_model_skeleton_new(void) {
  struct lens_model *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  if (!(m->priv = calloc(1, sizeof(struct lens_reader_priv)))) {
    free(m);
    return NULL;
  }
  return m;
}

/* Grows *arr (of n elements of size sz) by add; NULL-safe for add == 0. */
static int grow(void *arr, size_t n, size_t add, size_t sz) {
  void **a = arr;
  if (!add) return 0;
  if (n + add < n || (n + add) > SIZE_MAX / sz) return -1;
  void *q = realloc(*a, (n + add) * sz);
  if (!q) return -1;
  *a = q;
  return 0;
}

static const char *own(struct lens_model *skel, const char *s) {
  if (!s) return NULL;
  struct lens_reader_priv *pv = skel->priv;
  return lens_arena_strndup(&pv->arena, s, strlen(s));
}

#define SHIFT(v, base) ((v) < 0 ? (v) : (int32_t)((size_t)(v) + (base)))

int lens_model_skeleton_add(struct lens_model *skel, const struct lens_model *m, struct lens_model_base *base) {
  struct lens_model_base b = {skel->n_files, skel->n_procs, skel->n_comms, skel->n_threads, skel->n_clock_maps};
  if (grow(&skel->files, skel->n_files, m->n_files, sizeof *skel->files) ||
      grow(&skel->procs, skel->n_procs, m->n_procs, sizeof *skel->procs) ||
      grow(&skel->comms, skel->n_comms, m->n_comms, sizeof *skel->comms) ||
      grow(&skel->threads, skel->n_threads, m->n_threads, sizeof *skel->threads) ||
      grow(&skel->notes, skel->n_notes, m->n_notes, sizeof *skel->notes) ||
      grow(&skel->clocks, skel->n_clocks, m->n_clocks, sizeof *skel->clocks) ||
      grow(&skel->clock_maps, skel->n_clock_maps, m->n_clock_maps, sizeof *skel->clock_maps) ||
      grow(&skel->same_traces, skel->n_same_traces, m->n_same_traces, sizeof *skel->same_traces))
    return -1;
  for (size_t i = 0; i < m->n_files; i++) {
    struct lens_file *f = &skel->files[skel->n_files];
    *f = m->files[i];
    f->path = own(skel, f->path);
    f->truncation = own(skel, f->truncation);
    if ((m->files[i].path && !f->path) || (m->files[i].truncation && !f->truncation)) return -1;
    skel->n_files++;
  }
  for (size_t i = 0; i < m->n_procs; i++) {
    struct lens_proc *p = &skel->procs[skel->n_procs++];
    *p = m->procs[i];
    p->file = SHIFT(p->file, b.file);
  }
  for (size_t i = 0; i < m->n_comms; i++) {
    struct lens_comm *c = &skel->comms[skel->n_comms++];
    *c = m->comms[i];
    c->proc = SHIFT(c->proc, b.proc);
  }
  for (size_t i = 0; i < m->n_threads; i++) {
    struct lens_thread *t = &skel->threads[skel->n_threads++];
    *t = m->threads[i];
    t->proc = SHIFT(t->proc, b.proc);
    t->proxy_comm = SHIFT(t->proxy_comm, b.comm);
  }
  for (size_t i = 0; i < m->n_notes; i++) {
    struct lens_note *n = &skel->notes[skel->n_notes];
    *n = m->notes[i];
    n->proc = SHIFT(n->proc, b.proc);
    if (!(n->text = own(skel, m->notes[i].text ? m->notes[i].text : ""))) return -1;
    skel->n_notes++;
  }
  for (size_t i = 0; i < m->n_clocks; i++) {
    struct lens_clock_sample *s = &skel->clocks[skel->n_clocks++];
    *s = m->clocks[i];
    s->proc = SHIFT(s->proc, b.proc);
  }
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    struct lens_clock_map *c = &skel->clock_maps[skel->n_clock_maps++];
    *c = m->clock_maps[i];
    c->proc = SHIFT(c->proc, b.proc);
    c->thread = SHIFT(c->thread, b.thread);
  }
  for (size_t i = 0; i < m->n_same_traces; i++) {
    struct lens_same_trace *d = &skel->same_traces[skel->n_same_traces];
    d->path = own(skel, m->same_traces[i].path);
    d->same_as = own(skel, m->same_traces[i].same_as);
    d->same_file = m->same_traces[i].same_file;
    if (!d->path || !d->same_as) return -1;
    skel->n_same_traces++;
  }
  skel->orphan_stops += m->orphan_stops;
  skel->bad_records += m->bad_records;
  skel->steps_folded |= m->steps_folded;
  if (base) *base = b;
  return 0;
}
