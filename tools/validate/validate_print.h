/* Output of nccl-lens validate: text or JSON, and the verdict. */
#ifndef NCCL_LENS_VALIDATE_PRINT_H
#define NCCL_LENS_VALIDATE_PRINT_H

#include <stdio.h>

#include "reader/lensread.h"

struct lens_validate_opts {
  int json;
  long limit; /* launches listed in detail, -1 all */
};

struct lens_validate_verdict {
  const char *level; /* "trusted", "mostly trusted", "unreliable", "unmapped" */
  char text[256];
};

/* Judges the analysed model (after lens_analyze_gpu). */
void lens_validate_judge(const struct lens_model *m, struct lens_validate_verdict *v);
/* Prints the analysis; returns the command's exit status (0). */
int lens_validate_print(FILE *f, const struct lens_model *m, const struct lens_validate_opts *o);

#endif
