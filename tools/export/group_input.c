/* See group_input.h. */
#include "export/group_input.h"

#include <stdlib.h>
#include <string.h>

/* Input i as a model names it. */
static const char *input_name(const struct lens_trace_cli *c, size_t i) {
  for (size_t k = 0; k < c->n_spooled; k++)
    if (c->spooled[k].fd_path && !strcmp(c->spooled[k].fd_path, c->paths[i])) return c->spooled[k].shown;
  return c->paths[i];
}

long lens_group_input(const struct lens_model *m, const struct lens_trace_cli *c) {
  const char *p = m->n_files ? m->files[0].path : m->n_same_traces ? m->same_traces[0].path : NULL;
  for (size_t i = 0; p && i < c->n; i++) {
    const char *name = input_name(c, i);
    if (name && !strcmp(name, p)) return (long)i;
  }
  return -1;
}

long *lens_groups_of_inputs(const struct lens_trace_cli *c, const struct lens_passes_out *po) {
  long *v = malloc((c->n + 1) * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < c->n; i++) v[i] = -1;
  for (size_t g = 0; g < po->n_groups; g++) {
    size_t end = g + 1 < po->n_groups ? po->bases[g + 1].file : po->skel->n_files;
    for (size_t f = po->bases[g].file; f < end; f++)
      for (size_t i = 0; i < c->n; i++) {
        const char *name = input_name(c, i);
        if (po->skel->files[f].path && name && !strcmp(name, po->skel->files[f].path)) v[i] = (long)g;
      }
  }
  return v;
}
