/* Formatting shared by every view (format.h). */
#include "cli/format.h"

#include <inttypes.h>
#include <stdio.h>

void lens_fmt_ns(double ns, char *buf, size_t len) {
  if (ns < 1e3) snprintf(buf, len, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, len, "%.2f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, len, "%.2f ms", ns / 1e6);
  else snprintf(buf, len, "%.2f s", ns / 1e9);
}

const char *lens_fmt_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len) {
  if (name && *name) return name;
  snprintf(buf, len, "comm 0x%" PRIx64, comm_id);
  return buf;
}
