/* libFuzzer target: a live page (include/nccl-lens/live.h) as the agent and
 * `top` read it: written as <pid>.live into a directory, read by
 * agent_model_refresh (live_read.c copies it, agent_model.c folds its recent
 * instances), rendered by prom_render (prom_text.c) and otlp_render, twice
 * (the second refresh takes the incremental path). The page is 650 KiB, so
 * the input is its compact form, each part as far as the input goes: the
 * header (magic, version, size and pid forced valid and the seqlock even, or
 * every input would be refused or wait out the torn-page retries), then as many
 * communicators as its n_comms says and as many series as its n_series says
 * (each at most the array), then instances at the ring's newest slots
 * (recent_total's). The counts themselves stay as the input has them: past
 * the arrays, names unterminated, indexes out of range, all from the input.
 * mkseed_live.py makes this form from a real page. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_model.h"
#include "agent/otlp_json.h"
#include "agent/prom_text.h"
#include "fuzz_util.h"
#include "nccl-lens/live.h"

static struct lens_live_page page;
static struct agent_model model;

/* Every line of the Prometheus text must be a comment or one of our series
 * (nccl_...): names and label values from the page must not start a line of
 * their own (corpus/live_page/forged-inject.live once made the agent print
 * "forged_metric 42"; fuzz-prom-linebreak.live is the fuzzer's own).
 * LENS_FUZZ_PROM_ORACLE=0 turns the check off. */
static int prom_oracle;
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *e = getenv("LENS_FUZZ_PROM_ORACLE");
  prom_oracle = !(e && *e == '0');
  return 0;
}
static void prom_lines_check(const struct strbuf *b) {
  for (size_t i = 0; b->s && i < b->len;) {
    const char *l = b->s + i, *nl = memchr(l, '\n', b->len - i);
    size_t n = nl ? (size_t)(nl - l) : b->len - i;
    if (n && strncmp(l, "# ", 2) && strncmp(l, "nccl_", 5)) {
      fprintf(stderr, "prom_render: a line that is no series: %.*s\n", (int)(n < 200 ? n : 200), l);
      abort();
    }
    i += n + 1;
  }
}

static size_t lay(void *dst, size_t cap, const uint8_t **data, size_t *size) {
  size_t n = *size < cap ? *size : cap;
  memcpy(dst, *data, n);
  *data += n, *size -= n;
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > sizeof page) return -1;
  memset(&page, 0, sizeof page);
  lay(&page, offsetof(struct lens_live_page, comms), &data, &size);
  size_t nc = page.n_comms < LENS_LIVE_COMMS ? page.n_comms : LENS_LIVE_COMMS;
  size_t ns = page.n_series < LENS_LIVE_SERIES ? page.n_series : LENS_LIVE_SERIES;
  lay(page.comms, nc * sizeof page.comms[0], &data, &size);
  lay(page.series, ns * sizeof page.series[0], &data, &size);
  size_t n = size / sizeof page.recent[0];
  if (n > LENS_LIVE_RECENT) n = LENS_LIVE_RECENT;
  for (size_t k = 0; k < n; k++)
    lay(&page.recent[(page.recent_total - n + k) % LENS_LIVE_RECENT], sizeof page.recent[0], &data, &size);
  page.magic = LENS_LIVE_MAGIC;
  page.version = LENS_LIVE_VERSION;
  page.size = sizeof page;
  page.seq &= ~1ull;
  page.pid = (uint32_t)getpid(); /* the reader takes a page only under its own pid's name */
  char name[64];
  snprintf(name, sizeof name, "%d.live", (int)getpid()); /* a live process: the page is read */
  fuzz_write(name, (const uint8_t *)&page, sizeof page);
  for (int round = 0; round < 2; round++) {
    if (agent_model_refresh(&model, fuzz_tmpdir(), 3600) == 0) {
      struct strbuf b = {0};
      prom_render(&model, "fuzz-host", &b);
      if (prom_oracle) prom_lines_check(&b);
      otlp_render(&model, "fuzz-host", &b);
      if (getenv("LENS_FUZZ_SHOW")) fprintf(stderr, "round %d: %zu pages, %zu bytes rendered\n", round, model.pages.n, b.len);
      sb_free(&b);
    }
  }
  agent_model_free(&model);
  memset(&model, 0, sizeof model);
  return 0;
}
