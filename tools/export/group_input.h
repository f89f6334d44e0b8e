/* Which inputs a host group's model was read from: export's groups number
 * their ids and tracks from their first trace's position among the inputs
 * (the same on any number of threads), and the second reading of
 * --format job finds its group of the first by it. A model names a spooled
 * input ("-", NAME.gz) as the user gave it, not by its /proc/self/fd path. */
#ifndef NCCL_LENS_EXPORT_GROUP_INPUT_H
#define NCCL_LENS_EXPORT_GROUP_INPUT_H

#include "cli/passes.h"
#include "cli/trace_args.h"

/* The input position of m's first trace, -1 if none of c's. */
long lens_group_input(const struct lens_model *m, const struct lens_trace_cli *c);
/* Per input position, the group of po that read it (-1 none); malloc'd, NULL
 * when out of memory. */
long *lens_groups_of_inputs(const struct lens_trace_cli *c, const struct lens_passes_out *po);

#endif
