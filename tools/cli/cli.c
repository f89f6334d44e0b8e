#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lens_utf8.h"

static struct { const char *real, *shown; } aliases[64];

void lens_cli_input_alias(const char *real, const char *shown) {
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (aliases[i].real && !strcmp(aliases[i].real, real)) aliases[i].real = NULL;
  if (!shown) return;
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (!aliases[i].real) {
      aliases[i].real = real, aliases[i].shown = shown;
      return;
    }
}

/* While set, this thread's error lines go here instead of to stderr. */
static _Thread_local struct lens_cli_capture *capture;

int lens_cli_capture_begin(struct lens_cli_capture *c) {
  c->text = NULL, c->len = 0;
  c->f = open_memstream(&c->text, &c->len);
  if (!c->f) return -1;
  capture = c;
  return 0;
}

void lens_cli_capture_end(struct lens_cli_capture *c) {
  if (capture == c) capture = NULL;
  if (c->f) fclose(c->f);
  c->f = NULL;
}

static FILE *err_out(void) { return capture ? capture->f : stderr; }

/* msg with every aliased name written as the user gave it. */
static void put_aliased(FILE *out, const char *msg) {
  while (*msg) {
    const char *best = NULL;
    size_t bi = 0;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
      const char *p = aliases[i].real ? strstr(msg, aliases[i].real) : NULL;
      /* /proc/self/fd/1 is not /proc/self/fd/12: the match must end there */
      while (p && p[strlen(aliases[i].real)] >= '0' && p[strlen(aliases[i].real)] <= '9')
        p = strstr(p + 1, aliases[i].real);
      if (p && (!best || p < best)) best = p, bi = i;
    }
    if (!best) {
      fputs(msg, out);
      return;
    }
    fwrite(msg, 1, (size_t)(best - msg), out);
    fputs(aliases[bi].shown, out);
    msg = best + strlen(aliases[bi].real);
  }
}

const char *lens_cli_shown(const char *name, char *buf, size_t cap) {
  if (!cap) return "";
  snprintf(buf, cap, "%s", name ? name : "");
  lens_label_clean(buf, cap);
  return buf;
}

int lens_cli_error(const char *cmd, const char *fmt, ...) {
  char msg[4096], line[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* the whole line, aliases put in, then cleaned: no part of it reaches the terminal raw */
  FILE *mem = fmemopen(line, sizeof line, "w");
  if (mem) {
    put_aliased(mem, msg);
    fputc(0, mem);
    fclose(mem);
    line[sizeof line - 1] = 0;
  } else {
    snprintf(line, sizeof line, "%s", msg);
  }
  lens_label_clean(line, sizeof line);
  FILE *out = err_out();
  fprintf(out, "nccl-lens %s: %s\n", cmd, line);
  return 1;
}

int lens_cli_usage(const char *cmd, const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lens_label_clean(msg, sizeof msg); /* it may quote an argument, e.g. an unknown option */
  fprintf(err_out(), "nccl-lens %s: %s (try 'nccl-lens %s --help')\n", cmd, msg, cmd);
  return 2;
}

void lens_cli_progress(const char *what, long done, long total) {
  /* called from the pass driver's threads too: the answer cached atomically */
  static atomic_int tty = -1;
  int t = atomic_load_explicit(&tty, memory_order_relaxed);
  if (t < 0) atomic_store_explicit(&tty, t = isatty(STDERR_FILENO), memory_order_relaxed);
  if (!t) return;
  if (done < 0) {
    fprintf(stderr, "\r\033[K");
    return;
  }
  if (total > 0)
    fprintf(stderr, "\r%s: %ld/%ld (%ld%%)\033[K", what, done, total, done * 100 / total);
  else
    fprintf(stderr, "\r%s: %ld\033[K", what, done);
}

int lens_cli_check_dir(const char *cmd, const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return lens_cli_error(cmd, "%s: %s", dir, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return lens_cli_error(cmd, "%s: not a directory", dir);
  return 0;
}

int lens_cli_make_dir(const char *dir) {
  char p[4096];
  if (!*dir) return errno = ENOENT, -1;
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return errno = ENAMETOOLONG, -1;
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
      *s = '/';
    }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(p, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return access(p, W_OK | X_OK);
}

FILE *lens_cli_fopen_new(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}
