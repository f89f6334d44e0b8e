/* Helpers for the tests that play a local attacker against root's tools
 * (docs/security.md): run a command with a deadline and its output captured,
 * start a process as another user, plant files owned by another user, and a
 * victim file whose content and mtime must not change. */
#ifndef NCCL_LENS_TESTS_ATTACK_H
#define NCCL_LENS_TESTS_ATTACK_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* An unused uid/gid standing for "another local user". */
#define LENS_TEST_OTHER_UID 4242

/* Runs argv (envp NULL: ours) with stdin /dev/null; kills it (SIGKILL)
 * after timeout_ms. Returns its exit status, 128 + the signal that ended it,
 * or -1 when it had to be killed at the deadline. Captures stderr and stdout
 * (NUL-terminated, truncated to fit); *secs: how long it ran. */
int lens_attack_run(char *const argv[], char *const envp[], int timeout_ms, char *err, size_t err_len, char *out,
                    size_t out_len, double *secs);
/* Starts argv as uid/gid `uid` (envp as given). Its pid, or -1. */
pid_t lens_attack_spawn_as(uid_t uid, char *const argv[], char *const envp[]);
/* Kills and reaps a process started above. */
void lens_attack_reap(pid_t pid);
/* Gives path (never following a link) to uid LENS_TEST_OTHER_UID. 0 / -1. */
int lens_attack_give(const char *path);

struct lens_victim {
  char path[512];
  struct stat st;
};
/* Creates path with known content (root's file) and remembers its stat. */
void lens_victim_make(struct lens_victim *v, const char *path);
/* 1 if its content, size, mtime and inode are as made. */
int lens_victim_intact(const struct lens_victim *v);
/* How many lines of s contain needle. */
int lens_count_lines(const char *s, const char *needle);

#endif
