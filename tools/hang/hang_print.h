/* Text and JSON forms of the hang diagnosis (also a section of `report`). */
#ifndef NCCL_LENS_HANG_PRINT_H
#define NCCL_LENS_HANG_PRINT_H

#include <stdio.h>

#include "analysis/hang/hang_analysis.h"
#include "reader/lensread.h"

void lens_hang_print_text(FILE *f, const struct lens_model *m, const struct lens_hang_report *h);
void lens_hang_print_json(FILE *f, const struct lens_model *m, const struct lens_hang_report *h);

#endif
