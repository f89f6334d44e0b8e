/* nccl-lens: one command, one subcommand per tools/<name>/ folder. A
 * subcommand that was not built (its weak symbol is absent) says so. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define W __attribute__((weak))
W int lens_cmd_replay(int argc, char **argv);
W int lens_cmd_export(int argc, char **argv);
W int lens_cmd_summary(int argc, char **argv);
W int lens_cmd_demo(int argc, char **argv);
W int lens_cmd_bench(int argc, char **argv);
W int lens_cmd_agent(int argc, char **argv);
W int lens_cmd_top(int argc, char **argv);
W int lens_cmd_validate(int argc, char **argv);
W int lens_cmd_sched(int argc, char **argv);
W int lens_cmd_report(int argc, char **argv);
W int lens_cmd_net(int argc, char **argv);
W int lens_cmd_hang(int argc, char **argv);
W int lens_cmd_job(int argc, char **argv);
W int lens_cmd_dump(int argc, char **argv);
W int lens_cmd_diff(int argc, char **argv);

static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
} commands[] = {
    {"demo", lens_cmd_demo, "replay a multi-rank workload through the plugin, export and summarise it"},
    {"replay", lens_cmd_replay, "drive a profiler plugin .so with NCCL's call sequences"},
    {"export", lens_cmd_export, "write a trace as Chrome Trace Event JSON (Perfetto)"},
    {"summary", lens_cmd_summary, "per-communicator, per-operation tables"},
    {"validate", lens_cmd_validate, "join CUPTI kernel records, map GPU clocks, check accuracy"},
    {"sched", lens_cmd_sched, "eBPF probe: scheduling delays of NCCL proxy threads"},
    {"report", lens_cmd_report, "write a report of a run"},
    {"net", lens_cmd_net, "the network: per link and step, where the time goes (GPU, peer, wire)"},
    {"hang", lens_cmd_hang, "hang diagnosis: where the ranks part, what each stuck rank waits for"},
    {"job", lens_cmd_job, "the whole job: execution vs waiting, stragglers and why, across ranks"},
    {"diff", lens_cmd_diff, "compare two runs per communicator and operation: what changed, what matters most"},
    {"dump", lens_cmd_dump, "ask processes in recorder mode to write their flight recorder now"},
    {"bench", lens_cmd_bench, "measure the plugin's cost per callback"},
    {"agent", lens_cmd_agent, "node agent: live metrics for Prometheus, textfiles and OTLP"},
    {"top", lens_cmd_top, "live terminal view of this node's ranks"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    if (commands[i].fn) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\n'nccl-lens <command> --help' for a command's options (docs/cli.md: the options every command\n"
             "that reads traces shares). Exit status: 0 done, 1 failed, 2 usage error.\n");
}

/* Read by LeakSanitizer only (ASan builds); unused otherwise. `nccl-lens job`
 * maps traces on worker threads, and at exit this GCC's LeakSanitizer then
 * crashed now and then walking the main thread's dynamic TLS (its record of
 * it was garbage: "Tracer caught signal 11"), failing the run. Our
 * thread-locals hold no heap pointer that outlives a call, so not scanning
 * TLS for roots loses no leak report. */
const char *__lsan_default_options(void);
/* Without TLS roots, the dynamic TLS blocks glibc allocates through
 * __tls_get_addr look leaked; LeakSanitizer's built-in suppression covers
 * them, and print_suppressions=0 keeps its "Suppressions used" table off
 * stderr (the tests read every command's stderr). */
const char *__lsan_default_options(void) { return "use_tls=0:print_suppressions=0"; }
/* libcupti keeps its per-thread state (activity-walk buffers) behind
 * thread-local pointers: without TLS roots those look leaked. Not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libcupti.so\n"; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "nccl-lens: no command given (try 'nccl-lens --help')\n");
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("nccl-lens %s\n", LENS_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    if (!commands[i].fn) {
      fprintf(stderr, "nccl-lens: '%s' was not built into this binary\n", argv[1]);
      return 2;
    }
    if (argc > 2 && !strcmp(argv[2], "--version")) { /* every command answers it */
      printf("nccl-lens %s\n", LENS_VERSION);
      return 0;
    }
    int rc = commands[i].fn(argc - 1, argv + 1);
    /* What went to stdout must have arrived (`> /dev/full`, a full disk):
     * commands that check their own output have said so already (rc != 0). */
    if (fflush(stdout) != 0 || ferror(stdout)) {
      if (rc == 0) {
        fprintf(stderr, "nccl-lens %s: write error on standard output: %s\n", argv[1],
                errno ? strerror(errno) : "I/O error");
        rc = 1;
      }
    }
    return rc;
  }
  fprintf(stderr, "nccl-lens: unknown command '%s' (try 'nccl-lens --help')\n", argv[1]);
  return 2;
}
