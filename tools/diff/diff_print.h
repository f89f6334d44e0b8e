/* Output of nccl-lens diff: text (the changes that matter first) or JSON. */
#ifndef NCCL_LENS_DIFF_PRINT_H
#define NCCL_LENS_DIFF_PRINT_H

#include <stdio.h>

#include "diff/diff_model.h"

/* top: changed rows listed as text (0 = all); JSON lists every row. */
void lens_diff_print_text(FILE *f, const struct lens_diff_run *a, const struct lens_diff_run *b,
                          const struct lens_diff *d, size_t top);
void lens_diff_print_json(FILE *f, const struct lens_diff_run *a, const struct lens_diff_run *b,
                          const struct lens_diff *d);

#endif
