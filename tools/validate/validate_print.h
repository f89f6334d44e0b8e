/* Output of nccl-lens validate: text or JSON, and the verdict. */
#ifndef NCCL_LENS_VALIDATE_PRINT_H
#define NCCL_LENS_VALIDATE_PRINT_H

#include <stdio.h>

#include "reader/lensread.h"

#define LENS_VALIDATE_LIMIT_DEFAULT (-2)
#define LENS_VALIDATE_TEXT_LAUNCHES 20 /* a real run has thousands: the terminal gets the first ones */

struct lens_validate_opts {
  int json;
  long limit; /* launches listed in detail, -1 all, LENS_VALIDATE_LIMIT_DEFAULT: 20 as text, all as JSON */
};

struct lens_validate_verdict {
  const char *level; /* "trusted", "mostly trusted", "unreliable", "unmapped" */
  char text[512];
};

/* Judges the analysed model (after lens_analyze_gpu). */
void lens_validate_judge(const struct lens_model *m, struct lens_validate_verdict *v);
/* Prints the analysis; returns the command's exit status (0). */
int lens_validate_print(FILE *f, const struct lens_model *m, const struct lens_validate_opts *o);

#endif
