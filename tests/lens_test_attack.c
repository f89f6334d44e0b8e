/* See lens_test_attack.h. */
#define _GNU_SOURCE
#include "lens_test_attack.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append(char *buf, size_t cap, size_t *len, const char *src, size_t n) {
  if (!cap) return;
  size_t room = *len < cap - 1 ? cap - 1 - *len : 0;
  size_t k = n < room ? n : room;
  memcpy(buf + *len, src, k);
  *len += k;
  buf[*len] = 0;
}

int lens_attack_run(char *const argv[], char *const envp[], int timeout_ms, char *err, size_t err_len, char *out,
                    size_t out_len, double *secs) {
  int pe[2], po[2];
  if (pipe2(pe, O_CLOEXEC) || pipe2(po, O_CLOEXEC)) return -2;
  double t0 = mono_s();
  pid_t pid = fork();
  if (pid == 0) {
    int dn = open("/dev/null", O_RDONLY);
    dup2(dn, 0);
    dup2(po[1], 1);
    dup2(pe[1], 2);
    if (envp) execve(argv[0], argv, envp);
    else execv(argv[0], argv);
    _exit(127);
  }
  close(pe[1]);
  close(po[1]);
  size_t len[2] = {0, 0};
  char *buf[2] = {err, out};
  size_t cap[2] = {err_len, out_len};
  for (int i = 0; i < 2; i++)
    if (cap[i]) buf[i][0] = 0;
  struct pollfd p[2] = {{pe[0], POLLIN, 0}, {po[0], POLLIN, 0}};
  int status = 0, killed = 0, done = 0;
  while (p[0].fd >= 0 || p[1].fd >= 0) {
    double el = mono_s() - t0;
    if (!done && waitpid(pid, &status, WNOHANG) == pid) done = 1;
    if (el * 1000 >= timeout_ms && !done && !killed) {
      kill(pid, SIGKILL);
      killed = 1;
    }
    if (el * 1000 >= timeout_ms + 2000) break; /* something it started holds the pipes */
    if (poll(p, 2, 50) <= 0) continue;
    for (int i = 0; i < 2; i++) {
      if (p[i].fd < 0 || !p[i].revents) continue;
      char tmp[4096];
      ssize_t n = read(p[i].fd, tmp, sizeof tmp);
      if (n > 0) {
        append(buf[i], cap[i], &len[i], tmp, (size_t)n);
      } else {
        close(p[i].fd);
        p[i].fd = -1;
      }
    }
  }
  for (int i = 0; i < 2; i++)
    if (p[i].fd >= 0) close(p[i].fd);
  if (!done) waitpid(pid, &status, 0);
  if (secs) *secs = mono_s() - t0;
  if (killed) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t lens_attack_spawn_as(uid_t uid, char *const argv[], char *const envp[]) {
  pid_t pid = fork();
  if (pid == 0) {
    int dn = open("/dev/null", O_RDWR);
    dup2(dn, 0), dup2(dn, 1);
    if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) _exit(126);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  return pid;
}

void lens_attack_reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

int lens_attack_give(const char *path) {
  return lchown(path, LENS_TEST_OTHER_UID, LENS_TEST_OTHER_UID);
}

static const char victim_text[] = "root's file: must not change\n";

void lens_victim_make(struct lens_victim *v, const char *path) {
  snprintf(v->path, sizeof v->path, "%s", path);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(victim_text, f);
  fclose(f);
  /* An mtime in the past: any write now would show. */
  struct timespec t[2] = {{1000000000, 0}, {1000000000, 0}};
  utimensat(AT_FDCWD, path, t, 0);
  stat(path, &v->st);
}

int lens_victim_intact(const struct lens_victim *v) {
  struct stat st;
  char buf[256];
  if (lstat(v->path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  if (st.st_ino != v->st.st_ino || st.st_size != v->st.st_size || st.st_mtim.tv_sec != v->st.st_mtim.tv_sec ||
      st.st_uid != v->st.st_uid || (st.st_mode & 07777) != (v->st.st_mode & 07777))
    return 0;
  FILE *f = fopen(v->path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strcmp(buf, victim_text) == 0;
}

int lens_count_lines(const char *s, const char *needle) {
  int n = 0;
  while (s && *s) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), s);
    if (strstr(line, needle)) n++;
    s = e ? e + 1 : NULL;
  }
  return n;
}
