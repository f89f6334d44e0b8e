/* Small shared helpers: the host clock, thread ids, sleeping, names. */
#define _GNU_SOURCE
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "replay/rp_internal.h"

int64_t rp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

pid_t rp_gettid(void) { return (pid_t)syscall(SYS_gettid); }

void rp_sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

const char *rp_func_name(int func) {
  static const char *names[RP_NFUNC] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                        "Reduce",    "Send",      "Recv"};
  return func >= 0 && func < RP_NFUNC ? names[func] : "Unknown";
}
