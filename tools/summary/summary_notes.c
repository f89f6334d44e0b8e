/* The WARN lines the plugin mirrored into its traces (NOTE chunks): the
 * user's only view of what went wrong inside the job's processes when NCCL's
 * own log was not kept. Identical lines from many processes are shown once,
 * with how many processes said them. */
#include <stdio.h>
#include <string.h>

#include "cli/format.h"
#include "summary/summary_print.h"

#define NOTES_SHOWN 20
#define NOTE_LEVEL_WARN 2 /* NCCL's NCCL_LOG_WARN; INFO (3) and above are only counted */

void lens_summary_print_notes(FILE *f, const struct lens_model *m, int markdown) {
  size_t warn = 0, info = 0;
  for (size_t i = 0; i < m->n_notes; i++) m->notes[i].level <= NOTE_LEVEL_WARN ? warn++ : info++;
  if (!warn && !info) return;
  fprintf(f, markdown ? "\n## Plugin messages\n\n" : "\nplugin messages\n");
  size_t shown = 0, distinct = 0;
  for (size_t i = 0; i < m->n_notes; i++) {
    const struct lens_note *n = &m->notes[i];
    if (n->level > NOTE_LEVEL_WARN || !n->text) continue;
    size_t k = 0;
    while (k < i && !(m->notes[k].level <= NOTE_LEVEL_WARN && m->notes[k].text && !strcmp(m->notes[k].text, n->text)))
      k++;
    if (k < i) continue; /* said before */
    distinct++;
    if (shown == NOTES_SHOWN) continue;
    size_t procs = 0;
    int32_t last = -1;
    for (size_t j = i; j < m->n_notes; j++)
      if (m->notes[j].text && !strcmp(m->notes[j].text, n->text) && m->notes[j].proc != last) procs++, last = m->notes[j].proc;
    const struct lens_proc *p = n->proc >= 0 && (size_t)n->proc < m->n_procs ? &m->procs[n->proc] : NULL;
    char who[96] = "?";
    if (p) snprintf(who, sizeof who, "%s:%u", p->host, p->pid);
    if (markdown) { /* the host and the line as the process wrote them: escaped (cli/format.h) */
      fputs("- WARN ", f);
      lens_fmt_md_code_put(f, who);
      fprintf(f, "%s: ", procs > 1 ? " and others" : "");
      lens_fmt_md_put(f, n->text);
      fputc('\n', f);
    } else
      fprintf(f, "  WARN %s%s: %s\n", who, procs > 1 ? " and others" : "", n->text);
    if (procs > 1) fprintf(f, markdown ? "  (%zu processes)\n" : "       (%zu processes)\n", procs);
    shown++;
  }
  if (distinct > shown) fprintf(f, markdown ? "- ... %zu more distinct WARN lines\n" : "  ... %zu more distinct WARN lines\n", distinct - shown);
  if (info) fprintf(f, markdown ? "- %zu informational lines (INFO) not shown\n" : "  %zu informational lines (INFO) not shown\n", info);
}
