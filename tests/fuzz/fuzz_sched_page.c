/* libFuzzer target: a sched page (tools/sched/sched_page.h, the text file
 * `nccl-lens sched` publishes) as the agent reads it: lens_sched_page_read on
 * the bytes, then the agent's refresh of a directory holding it as
 * <pid>.sched (agent_sched.c) and the Prometheus and OTLP renderings of the
 * threads it gave. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_model.h"
#include "agent/otlp_json.h"
#include "agent/prom_text.h"
#include "fuzz_util.h"
#include "sched/sched_page.h"

static struct lens_sched_page page;
static struct agent_model model;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return -1;
  char name[64];
  snprintf(name, sizeof name, "%d.sched", (int)getpid()); /* a live writer: the page is taken */
  const char *path = fuzz_write(name, data, size);
  uint32_t pid;
  uint64_t updated;
  if (lens_sched_page_read(path, &page, &pid, &updated) == 0 && page.n > LENS_SCHED_PAGE_THREADS) __builtin_trap();
  if (agent_model_refresh(&model, fuzz_tmpdir(), 3600) == 0) {
    struct strbuf b = {0};
    prom_render(&model, "fuzz-host", &b);
    otlp_render(&model, "fuzz-host", &b);
    sb_free(&b);
  }
  agent_model_free(&model);
  memset(&model, 0, sizeof model);
  return 0;
}
