/* See sched_test_util.h. */
#define _GNU_SOURCE
#include "sched_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lens_test_tmp.h"

static int has_caps(void) {
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capget, &h, d) != 0) return 0;
  uint64_t eff = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
  if (eff & (1ull << 21)) return 1;               /* CAP_SYS_ADMIN */
  return (eff & (1ull << 38)) && (eff & (1ull << 39)); /* CAP_PERFMON, CAP_BPF */
}

int sched_test_cli_has_sched(void) {
  char err[512], out[4096];
  char *argv[] = {LENS_CLI, "sched", "--help", NULL};
  return sched_run(argv, 0, err, sizeof err, out, sizeof out) == 0 && strstr(out, "--follow");
}

const char *sched_test_cannot_probe(void) {
  if (!sched_test_cli_has_sched()) return "nccl-lens was built without the eBPF probe (clang/bpftool/libbpf missing)";
  if (!has_caps()) return "needs root or CAP_BPF+CAP_PERFMON to load the probe";
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
  return NULL;
}

/* Copies src to dst with mode 0755 (no shell). 0 / -1. */
static int copy_exec(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  char buf[65536];
  ssize_t n = 0;
  while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) n = -1;
  close(in);
  if (out < 0 || close(out) != 0 || n < 0) return -1;
  return chmod(dst, 0755);
}

/* The CLI as uid 65534 can run it: the build tree may sit below a directory
 * only its owner can enter (a clone in `mktemp -d`), so the unprivileged
 * runs use a copy in a world-readable directory, with the plugin beside it
 * (lib/, where the CLI looks first). Made once per test process. */
static const char *unprivileged_cli(void) {
  static char cli[256];
  if (cli[0]) return cli;
  char dir[64], sub[128], lib[256];
  lens_test_tmpdir(dir, sizeof dir, "unpriv");
  snprintf(sub, sizeof sub, "%s/bin", dir);
  snprintf(lib, sizeof lib, "%s/lib", dir);
  snprintf(cli, sizeof cli, "%s/nccl-lens", sub);
  char so[300];
  snprintf(so, sizeof so, "%s/libnccl-profiler-lens.so", lib);
  if (chmod(dir, 0755) || mkdir(sub, 0755) || mkdir(lib, 0755) || copy_exec(LENS_CLI, cli) ||
      copy_exec(LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so", so)) {
    fprintf(stderr, "cannot copy nccl-lens to %s for the unprivileged run: %s\n", dir, strerror(errno));
    snprintf(cli, sizeof cli, "%s", LENS_CLI);
  }
  return cli;
}

int sched_child_start(struct sched_child *c, char *const argv[], int drop_privs) {
  const char *exe = drop_privs && !strcmp(argv[0], LENS_CLI) ? unprivileged_cli() : argv[0];
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return -1;
  c->pid = fork();
  if (c->pid < 0) return -1;
  if (c->pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (drop_privs) {
      /* setresuid away from 0 clears the effective and permitted capabilities. */
      if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(126);
    }
    execv(exe, argv);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  c->out_fd = out[0];
  c->err_fd = err[0];
  return 0;
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sched_child_wait_line(struct sched_child *c, const char *needle, int timeout_ms, char *buf, size_t len) {
  size_t got = 0;
  long end = now_ms() + timeout_ms;
  buf[0] = 0;
  while (now_ms() < end && got + 1 < len) {
    struct pollfd p = {.fd = c->out_fd, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = read(c->out_fd, buf + got, len - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
    buf[got] = 0;
    if (strstr(buf, needle) && strchr(strstr(buf, needle), '\n')) return 1;
  }
  return 0;
}

static void drain(int fd, char *buf, size_t len) {
  size_t got = strlen(buf);
  for (;;) {
    if (got + 1 >= len) break;
    ssize_t n = read(fd, buf + got, len - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  buf[got] = 0;
}

int sched_child_finish(struct sched_child *c, int timeout_ms, char *err_buf, size_t err_len, char *out_buf,
                       size_t out_len) {
  int st = 0;
  long end = now_ms() + timeout_ms;
  while (waitpid(c->pid, &st, WNOHANG) == 0) {
    if (now_ms() > end) {
      kill(c->pid, SIGKILL);
      waitpid(c->pid, &st, 0);
      break;
    }
    usleep(10000);
  }
  err_buf[0] = 0;
  drain(c->err_fd, err_buf, err_len);
  if (out_buf) {
    drain(c->out_fd, out_buf, out_len);
  }
  close(c->out_fd);
  close(c->err_fd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int sched_run(char *const argv[], int drop_privs, char *err_buf, size_t err_len, char *out_buf, size_t out_len) {
  struct sched_child c;
  if (sched_child_start(&c, argv, drop_privs) != 0) return -1;
  out_buf[0] = 0;
  /* Drain stdout while it runs so a chatty child never blocks on a full pipe. */
  int st = 0;
  size_t got = 0;
  long end = now_ms() + 20000;
  for (;;) {
    struct pollfd p = {.fd = c.out_fd, .events = POLLIN};
    if (poll(&p, 1, 50) > 0 && got + 1 < out_len) {
      ssize_t n = read(c.out_fd, out_buf + got, out_len - 1 - got);
      if (n > 0) got += (size_t)n;
      out_buf[got] = 0;
    }
    if (waitpid(c.pid, &st, WNOHANG) == c.pid) break;
    if (now_ms() > end) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &st, 0);
      break;
    }
  }
  err_buf[0] = 0;
  drain(c.err_fd, err_buf, err_len);
  drain(c.out_fd, out_buf, out_len);
  close(c.out_fd);
  close(c.err_fd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
