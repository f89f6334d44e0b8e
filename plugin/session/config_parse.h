/* Parsing of NCCL_LENS_* (config.c), exposed for unit tests. */
#ifndef NCCL_LENS_PLUGIN_CONFIG_PARSE_H
#define NCCL_LENS_PLUGIN_CONFIG_PARSE_H

#include "config.h"

#define LENS_EVENT_MASK_DEFAULT                                                                               \
  (LENS_EV_GROUP_API | LENS_EV_COLL_API | LENS_EV_P2P_API | LENS_EV_KERNEL_LAUNCH | LENS_EV_COLL | LENS_EV_P2P | \
   LENS_EV_PROXY_OP | LENS_EV_PROXY_STEP | LENS_EV_PROXY_CTRL | LENS_EV_KERNEL_CH | LENS_EV_CE_COLL |            \
   LENS_EV_CE_SYNC | LENS_EV_CE_BATCH)

/* Reads the environment into *c; every bad value is logged (WARN) naming
 * the variable and the default used. Returns the number of bad values. */
int lens_config_parse(struct lens_config *c);
/* Parse once (first init); later calls keep the first result. */
void lens_config_load_once(void);
/* Parsers, 0 ok / -1 bad. */
int lens_parse_mask(const char *s, int *out);
int lens_parse_size(const char *s, uint64_t *out);

#endif
