/* Scheduler load for the probe's cost benchmark: P pairs of threads pass a
 * token back and forth through pipes, so every hand-over is one wakeup and
 * one context switch. Usage: lens-sched-pingpong [pairs] [seconds] [cpu] [split]
 * (cpu >= 0 pins every thread there; split = 1 puts the second thread of
 * each pair in a child process, so watching "ready <pid>" watches one side
 * of every hand-over, as a proxy thread is one side of its switches).
 * Prints "ready <pid>" once the threads run, and at the end the hand-overs
 * per second. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static int pin_cpu = -1;

struct pair_end {
  int rd, wr;
  unsigned long rounds;
};

static void pin(void) {
  if (pin_cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(pin_cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *bounce(void *arg) {
  struct pair_end *e = arg;
  char c;
  pin();
  while (!stop && read(e->rd, &c, 1) == 1) {
    e->rounds++;
    if (write(e->wr, &c, 1) != 1) break;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : 4;
  double seconds = argc > 2 ? atof(argv[2]) : 3;
  pin_cpu = argc > 3 ? atoi(argv[3]) : -1;
  int split = argc > 4 ? atoi(argv[4]) : 0;
  if (pairs < 1 || pairs > 256 || seconds <= 0) {
    fprintf(stderr, "usage: lens-sched-pingpong [pairs 1..256] [seconds] [cpu]\n");
    return 2;
  }
  pthread_t th[512];
  struct pair_end ends[512];
  for (int i = 0; i < pairs; i++) {
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) return perror("pipe"), 1;
    ends[2 * i] = (struct pair_end){.rd = ba[0], .wr = ab[1]};
    ends[2 * i + 1] = (struct pair_end){.rd = ab[0], .wr = ba[1]};
    if (write(ab[1], "x", 1) != 1) return 1; /* the token */
  }
  /* split: the child runs the odd ends, the parent the even ones. */
  pid_t child = split ? fork() : 0;
  if (child < 0) return perror("fork"), 1;
  int first = split && child == 0 ? 1 : 0, step = split ? 2 : 1;
  for (int i = first; i < 2 * pairs; i += step) pthread_create(&th[i], NULL, bounce, &ends[i]);
  if (split && child == 0) {
    for (int i = first; i < 2 * pairs; i += step) pthread_join(th[i], NULL);
    _exit(0);
  }
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  usleep((useconds_t)(seconds * 1e6));
  stop = 1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  unsigned long total = 0;
  for (int i = 0; i < 2 * pairs; i++) {
    close(ends[i].wr); /* unblocks a peer stuck in read */
  }
  for (int i = 0; i < 2 * pairs; i += step) {
    pthread_join(th[i], NULL);
    total += ends[i].rounds * step; /* split: the child's ends made as many */
  }
  if (split) {
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
  }
  double dt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("handovers %lu in %.2f s = %.0f /s\n", total, dt, total / dt);
  return 0;
}
