/* How every view labels a summary row (summary_model.h). */
#include "summary/summary_model.h"

#include <stdio.h>

void lens_size_bucket_label(int bucket, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bucket < 0) {
    snprintf(buf, len, "0 B");
    return;
  }
  int u = bucket / 10, e = bucket % 10;
  if (bucket == 63) snprintf(buf, len, "%u %s-", 1u << e, unit[u]);
  else if (e == 9) snprintf(buf, len, "%u %s-1 %s", 1u << e, unit[u], unit[u + 1]);
  else snprintf(buf, len, "%u-%u %s", 1u << e, 1u << (e + 1), unit[u]);
}

const char *lens_summary_func_label(const struct lens_sum_row *r, char *buf, size_t len) {
  const char *func = r->func && *r->func ? r->func : "-";
  if (!r->user_tag) return func;
  char tb[32];
  snprintf(buf, len, "%s, %s", func, lens_tag_label(r->user_tag, tb, sizeof tb));
  return buf;
}

const char *lens_summary_algo_label(const struct lens_sum_row *r, char *buf, size_t len) {
  const char *algo = r->algo && *r->algo ? r->algo : "-";
  if (!r->kernel_variant) return algo;
  snprintf(buf, len, "sym %s", algo);
  return buf;
}
