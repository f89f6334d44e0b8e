/* Every field of an event as JSON members (no braces): descriptor payload,
 * ids, flags, accuracy. Shared by export (Chrome "args") and anything else
 * that shows one event. */
#ifndef NCCL_LENS_EVENT_ARGS_H
#define NCCL_LENS_EVENT_ARGS_H

#include <stdio.h>

#include "reader/lensread.h"

void lens_json_event_args(FILE *f, const struct lens_model *m, const struct lens_event *e);
/* ["flag", ...] for LENS_EVF_* and LENS_ACC_* bits. */
void lens_json_flag_list(FILE *f, uint32_t flags, const char *(*name)(uint32_t));

#endif
