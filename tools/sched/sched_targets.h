/* Which threads `nccl-lens sched` watches: processes running the plugin,
 * their registry files (include/nccl-lens/registry.h) read through
 * /proc/<pid>/root so containers work, and the translation of the tids a
 * process sees (its own pid namespace) into the host tids the kernel probe
 * sees. Plain /proc parsing, no libbpf: tests compile it on its own. */
#ifndef NCCL_LENS_SCHED_TARGETS_H
#define NCCL_LENS_SCHED_TARGETS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lens_registry_text.h" /* struct lens_registry_id, the registry parsers */

#define LENS_SCHED_MAX_TIDS 1024
#define LENS_SCHED_MAX_TASKS 65536 /* /proc/<pid>/task entries read per scan at most */
#define LENS_SCHED_SCAN_MAX 16384  /* registry directory entries looked at per scan at most */

struct lens_sched_tid {
  uint32_t host_tid; /* as the kernel (and our /proc) sees it */
  uint32_t ns_tid;   /* in the target's own pid namespace */
  uint32_t roles;    /* LENS_ROLE_* from the registry, 0 with --all-threads */
};

struct lens_sched_target {
  int host_pid;                /* pid in our /proc */
  uint32_t ns_pid;             /* pid in its own namespace (last NSpid field) */
  uint64_t start_ticks;        /* /proc/<pid>/stat starttime: tells pid reuse apart */
  char reg_path[PATH_MAX];     /* /proc/<pid>/root/<dir>/<ns_pid>.reg */
  int has_registry;            /* the last refresh found and parsed it */
  int refused;                 /* the last refresh found one and refused it (not the target's own, not safe) */
  int refusal_noted;           /* for the caller: the refusal was reported (once per target) */
  uint32_t reg_crc;            /* of the registry text last translated */
  uint64_t translated_mono_ns; /* when its tids were last matched against /proc */
  size_t n_tids;
  struct lens_sched_tid tids[LENS_SCHED_MAX_TIDS];
};

/* Last NSpid field of /proc/<pid>/status (or Tgid if the kernel has no NSpid). 0 / -1. */
int lens_sched_ns_pid(int host_pid, uint32_t *ns_pid);
/* 1 if the process maps libnccl-profiler-lens*.so, 0 if not, -1 if it is gone/unreadable. */
int lens_sched_maps_plugin(int host_pid);
/* The registry directory the process uses: registry_dir if not NULL, else its
 * NCCL_LENS_REGISTRY_DIR (from /proc/<pid>/environ), else the per-user
 * default as it computes it (its XDG_RUNTIME_DIR and euid); then prefixed
 * with /proc/<pid>/root (or /proc/<pid>/cwd/ when relative): the directory
 * as the target sees it, from our namespace. */
void lens_sched_registry_dir(int host_pid, const char *registry_dir, char *out, size_t len);
/* The same plus /<ns_pid>.reg. */
void lens_sched_registry_path(int host_pid, uint32_t ns_pid, const char *registry_dir, char *out, size_t len);

/* 0 if a registry read through /proc/<host_pid>/root can be the process's
 * own: its pid is ns_pid, its pidns the inode of /proc/<host_pid>/ns/pid and
 * its start the process's start ticks (compared only when we share its time
 * namespace: /proc/<pid>/stat is shifted into the reader's). Lines a plugin
 * did not write are not checked. -1 with why otherwise. */
int lens_sched_registry_matches(int host_pid, uint32_t ns_pid, const struct lens_registry_id *id, char *why,
                                size_t why_len);

/* Fills t->tids from its registry (threads with LENS_ROLE_PROXY or, on NCCL >= 2.31,
 * LENS_ROLE_PROFILER: the thread that polls KernelCh), or with
 * every thread of the process when all_threads. Returns the number of tids,
 * or -1 when there is no registry (and !all_threads), it was refused
 * (t->refused: not a regular file of the target's euid in a directory of its
 * user, not the target's own by pid, pidns or start; the caller reports it
 * once) or the process is gone; why in err. Cheap when called often: an unchanged registry is matched
 * against /proc/<pid>/task again only once a second (threads that exited). */
int lens_sched_target_refresh(struct lens_sched_target *t, const char *registry_dir, int all_threads,
                              char *err, size_t err_len);

/* Host tid of the thread whose innermost-namespace tid is ns_tid in process
 * host_pid (scans /proc/<pid>/task/ * /status NSpid). 0 if not found. */
uint32_t lens_sched_host_tid(int host_pid, uint32_t ns_tid);

/* Registry files <pid>.reg in dir (our own mount and pid namespace): calls fn
 * for each pid that is alive, maps the plugin and owns the file (a regular
 * file, never followed). dir is opened with lens_dir_open: ours, or sticky
 * and owned by root; at most LENS_SCHED_SCAN_MAX entries are looked at.
 * Cheap enough to run every poll, so --follow sees a new process as soon as
 * it publishes. Pids found, or -1 with why (the directory refused). */
int lens_sched_scan_registry_dir(const char *dir, void (*fn)(void *ctx, int host_pid), void *ctx, char *why,
                                 size_t why_len);

/* Scans /proc for processes that map the plugin; calls fn for each pid. */
int lens_sched_scan_plugin_procs(void (*fn)(void *ctx, int host_pid), void *ctx);

#endif
