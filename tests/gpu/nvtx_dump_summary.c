/* lens-nvtx-dump-summary: what a real NCCL job emitted through NVTX, read
 * from the recording injection's dump files (NVTX_INJ_DUMP, see
 * tests/nvtx/nvtx_inject.h). Prints, per file and domain, the count of each
 * kind of call, push/pop balance, open start/end ranges, and a few sample
 * messages, so a GPU check can see the plugin's ranges beside NCCL's own.
 * Exit status 1 when the nccl-lens domain is absent or unbalanced. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvtx_inject.h"

static const char *kind_name(int k) {
  static const char *names[] = {"?",         "init",         "domain_create", "register_string", "name_category",
                                "push",      "pop",          "start",         "end",             "mark",
                                "name_thread", "schema",     "counter_reg",   "counter_sample",  "is_enabled",
                                "other"};
  return k > 0 && k < (int)(sizeof names / sizeof *names) ? names[k] : "?";
}

static int summarize(const struct nvtx_inject_log *l) {
  uint64_t n = l->count < NVTX_INJ_MAX_EVENTS ? l->count : NVTX_INJ_MAX_EVENTS;
  printf("  events %llu (dropped past cap %llu), domains %d\n", (unsigned long long)l->count,
         (unsigned long long)l->dropped, l->n_domains);
  int lens_dom = -2, bad = 0;
  for (int d = -1; d < l->n_domains && d < NVTX_INJ_MAX_DOMAINS; d++) {
    uint64_t per_kind[16] = {0};
    long depth = 0, starts_open = 0;
    for (uint64_t i = 0; i < n; i++) {
      const struct nvtx_ev *e = &l->ev[i];
      if (e->domain != d || e->kind <= 0 || e->kind >= 16) continue;
      per_kind[e->kind]++;
      if (e->kind == NVTX_EV_PUSH) depth++;
      if (e->kind == NVTX_EV_POP) depth--;
      if (e->kind == NVTX_EV_START) starts_open++;
      if (e->kind == NVTX_EV_END) starts_open--;
    }
    const char *name = d < 0 ? "(default)" : l->domains[d];
    printf("  domain %-20s", name);
    for (int k = 1; k < 16; k++)
      if (per_kind[k]) printf(" %s=%llu", kind_name(k), (unsigned long long)per_kind[k]);
    printf("  push-pop=%ld start-end=%ld\n", depth, starts_open);
    if (d >= 0 && strcmp(name, "nccl-lens") == 0) {
      lens_dom = d;
      if (depth != 0) bad = 1;
    }
  }
  if (lens_dom == -2) return 1;
  int shown = 0;
  for (uint64_t i = 0; i < n && shown < 12; i++) {
    const struct nvtx_ev *e = &l->ev[i];
    if (e->domain != lens_dom) continue;
    if (e->kind != NVTX_EV_PUSH && e->kind != NVTX_EV_START && e->kind != NVTX_EV_MARK &&
        e->kind != NVTX_EV_NAME_THREAD)
      continue;
    printf("    %-11s tid %u: %.100s\n", kind_name(e->kind), e->tid, e->msg);
    shown++;
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s NVTX_DUMP...\n", argv[0]);
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    int fd = open(argv[i], O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(struct nvtx_inject_log)) {
      fprintf(stderr, "%s: not an NVTX dump\n", argv[i]);
      if (fd >= 0) close(fd);
      rc = 1;
      continue;
    }
    const struct nvtx_inject_log *l = mmap(NULL, sizeof *l, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (l == MAP_FAILED) {
      rc = 1;
      continue;
    }
    printf("%s\n", argv[i]);
    if (summarize(l)) rc = 1;
    munmap((void *)l, sizeof *l);
  }
  return rc;
}
