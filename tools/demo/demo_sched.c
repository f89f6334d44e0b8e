/* The scheduler probe inside `nccl-lens demo` (the hooks of demo_hooks.h).
 *
 * When this host can load the probe (root or CAP_BPF + CAP_PERFMON, kernel
 * BTF, probe built in), the demo forks a child that runs the `nccl-lens sched`
 * loader itself (lens_cmd_sched) in --follow mode, writing its .lens next to
 * the plugin's traces. A child rather than a thread because the loader owns
 * process-wide state (SIGINT/SIGTERM handlers, static run state), and a child
 * is stopped exactly as a user stops it: SIGINT, then it flushes and writes
 * FINI.
 *
 * The demo's replay processes publish their proxy threads in a registry
 * directory of the demo's own (DIR/traces/registry, through
 * NCCL_LENS_REGISTRY_DIR), and the loader follows only that directory
 * (--registry-only), so other jobs on the machine never end up in the demo.
 *
 * NCCL_LENS_DEMO_NO_PROBE=1 makes the demo behave as if it had no
 * privileges (tests, or a user who wants the plain demo as root). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo/demo_hooks.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define READY_TIMEOUT_MS 5000 /* probe load + attach; a few hundred ms normally */
#define STOP_TIMEOUT_MS 5000  /* SIGINT to FINI written */

#ifdef LENS_HAVE_BPF
int lens_cmd_sched(int argc, char **argv);
#endif

static pid_t g_child = -1;
static int g_err_fd = -1; /* the child's stderr */

/* 1 if the effective set can load the probe: root, CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON. */
static int privileged(void) {
  if (geteuid() == 0) return 1;
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capget, &h, d) != 0) return 0;
  uint64_t eff = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
  if (eff & (1ull << CAP_SYS_ADMIN)) return 1;
  return (eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON));
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* What the child wrote on stderr, as one line (its last non-empty one). */
static void read_reason(int fd, char *why, size_t why_len) {
  char buf[2048];
  size_t n = 0;
  ssize_t k;
  while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)k;
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  char *line = strrchr(buf, '\n');
  line = line ? line + 1 : buf;
  const char *prefix = "nccl-lens sched: ";
  if (!strncmp(line, prefix, strlen(prefix))) line += strlen(prefix);
  if (*line) snprintf(why, why_len, "%s", line);
}

#ifdef LENS_HAVE_BPF
/* Runs the loader in this (forked) process and never returns. */
static void child_main(const char *traces, const char *registry, int err_fd, pid_t parent) {
  /* A demo killed outright must not leave the probe attached: the loader
   * stops (cleanly, as on SIGINT) when the demo goes away. */
  prctl(PR_SET_PDEATHSIG, SIGINT);
  if (getppid() != parent) _exit(1);
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  char *argv[] = {"sched", "--follow", "--registry-only", "--registry-dir", (char *)registry,
                  "--out", (char *)traces, "--quiet", NULL};
  int rc = lens_cmd_sched((int)(sizeof argv / sizeof argv[0]) - 1, argv);
  fflush(NULL);
  _exit(rc);
}

/* 1 once the loader created its trace: it does so right after the probe is
 * loaded and attached. */
static int trace_path(const char *traces, pid_t pid, char *path, size_t len) {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  int n = snprintf(path, len, "%s/nccl-lens-sched-%s-%d.lens", traces, host, (int)pid);
  return n > 0 && (size_t)n < len ? 0 : -1;
}
#endif

int lens_demo_sched_start(const char *dir, char *why, size_t why_len) {
  const char *off = getenv("NCCL_LENS_DEMO_NO_PROBE");
  if (off && *off && strcmp(off, "0")) {
    snprintf(why, why_len, "NCCL_LENS_DEMO_NO_PROBE is set");
    return -1;
  }
#ifndef LENS_HAVE_BPF
  (void)dir;
  snprintf(why, why_len, "this nccl-lens was built without the eBPF probe (needs clang, bpftool and libbpf at "
                         "build time)");
  return -1;
#else
  if (!privileged()) {
    snprintf(why, why_len, "needs root or CAP_BPF + CAP_PERFMON (run the demo as root to measure proxy-thread "
                           "starvation)");
    return -1;
  }
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    snprintf(why, why_len, "this kernel has no BTF (/sys/kernel/btf/vmlinux: %s)", strerror(errno));
    return -1;
  }
  /* Absolute: the loader reads it as /proc/<pid>/root/<registry>. */
  char abs_traces[PATH_MAX], registry[PATH_MAX];
  if (!realpath(dir, abs_traces)) {
    snprintf(why, why_len, "cannot resolve %s: %s", dir, strerror(errno));
    return -1;
  }
  int n = snprintf(registry, sizeof registry, "%s/registry", abs_traces);
  if (n < 0 || (size_t)n >= sizeof registry || (mkdir(registry, 0755) && errno != EEXIST)) {
    snprintf(why, why_len, "cannot create %s/registry: %s", abs_traces, strerror(errno));
    return -1;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    snprintf(why, why_len, "pipe: %s", strerror(errno));
    return -1;
  }
  char path[PATH_MAX + 300];
  pid_t self = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, why_len, "fork: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    child_main(abs_traces, registry, p[1], self);
  }
  close(p[1]);
  for (int waited = 0;; waited += 10) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) { /* it failed: its one line says why */
      snprintf(why, why_len, "the probe did not start (exit status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
      read_reason(p[0], why, why_len);
      close(p[0]);
      return -1;
    }
    if (trace_path(abs_traces, pid, path, sizeof path) == 0 && access(path, F_OK) == 0) break;
    if (waited >= READY_TIMEOUT_MS) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      close(p[0]);
      snprintf(why, why_len, "the probe did not attach within %d ms", READY_TIMEOUT_MS);
      return -1;
    }
    sleep_ms(10);
  }
  /* The replay's node processes inherit it before they load the plugin. */
  setenv("NCCL_LENS_REGISTRY_DIR", registry, 1);
  printf("scheduler probe (eBPF) watching the replay's proxy threads: %s\n", path);
  g_child = pid;
  g_err_fd = p[0];
  fcntl(g_err_fd, F_SETFL, O_NONBLOCK);
  return 0;
#endif
}

void lens_demo_sched_stop(void) {
  if (g_child <= 0) return;
  kill(g_child, SIGINT);
  int st = 0, done = 0;
  for (int waited = 0; waited < STOP_TIMEOUT_MS; waited += 10) {
    if (waitpid(g_child, &st, WNOHANG) == g_child) {
      done = 1;
      break;
    }
    sleep_ms(10);
  }
  if (!done) { /* its last 200 ms of samples are lost; the file stays readable */
    kill(g_child, SIGKILL);
    waitpid(g_child, &st, 0);
    fprintf(stderr, "nccl-lens demo: the scheduler probe did not stop within %d ms; killed it\n", STOP_TIMEOUT_MS);
  } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char why[512] = "";
    read_reason(g_err_fd, why, sizeof why);
    fprintf(stderr, "nccl-lens demo: the scheduler probe ended badly (status 0x%x)%s%s\n", st, why[0] ? ": " : "",
            why);
  }
  close(g_err_fd);
  g_err_fd = -1;
  g_child = -1;
}

/* With the probe running, the demo replays the `all` scenario, whose last
 * part is a starvation phase (a CPU hog pinned to each proxy's CPU); a
 * separate `--scenario starved` would replace `all` (the replay runs one
 * scenario), so nothing is added. NULL keeps the demo's workload. */
const char *const *lens_demo_sched_scenario(void) {
  static const char *const none[] = {NULL};
  return g_child > 0 ? none : NULL;
}
