/* Formatting shared by every view (summary, report, net, validate, job, hang,
 * diff): one way to write a duration and a communicator, so that the views
 * that speak of the same thing read the same. Views include this, never each
 * other, for it. */
#ifndef NCCL_LENS_CLI_FORMAT_H
#define NCCL_LENS_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* "812 ns", "3.20 us", "9.10 ms", "1.50 s" */
void lens_fmt_ns(double ns, char *buf, size_t len);
/* A communicator as people name it: its name, else "comm 0x<id>". */
const char *lens_fmt_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len);

#endif
