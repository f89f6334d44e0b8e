/* libbpf side of the loader. See sched_probe.h. */
#ifdef LENS_HAVE_BPF
#define _GNU_SOURCE
#include "sched/sched_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lens_sched.skel.h"

struct lens_sched_probe {
  struct lens_sched_bpf *skel;
  struct ring_buffer *rb;
  int stats_fd; /* BPF_ENABLE_STATS handle: stats stay on while it is open */
  void (*fn)(void *, const struct lens_bpf_sample *);
  void *ctx;
};

static int libbpf_verbose;
/* libbpf's messages mislead when the real cause is privileges ("Make sure your
 * kernel supports BPF", RLIMIT_MEMLOCK); we print one line of our own instead. */
static int print_filter(enum libbpf_print_level level, const char *fmt, va_list ap) {
  if (!libbpf_verbose || level == LIBBPF_DEBUG) return 0;
  return vfprintf(stderr, fmt, ap);
}

/* EPERM is the kernel refusing bpf() to an unprivileged caller; EACCES is
 * also what the verifier returns for a rejected program, so it only means
 * privileges when the capability check below already failed. */
static int is_priv_error(int e) { return e == EPERM; }

/* 1 if the effective set has CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN. */
static int has_bpf_caps(void) {
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capget, &h, d) != 0) return 1; /* cannot tell: let the kernel decide */
  uint64_t eff = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
  if (eff & (1ull << CAP_SYS_ADMIN)) return 1;
  return (eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON));
}

static void priv_message(char *err, size_t err_len, int e) {
  snprintf(err, err_len, "needs CAP_BPF and CAP_PERFMON, or root (the kernel refused: %s)", strerror(e));
}

/* Words of the tid bitmap: enough for every tid up to kernel.pid_max. */
static uint32_t bitmap_words(void) {
  unsigned long pid_max = 4194304; /* the 64-bit default ceiling */
  FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
  if (f) {
    if (fscanf(f, "%lu", &pid_max) != 1) pid_max = 4194304;
    fclose(f);
  }
  return (uint32_t)((pid_max + 63) / 64);
}

/* Sets or clears one tid's bit. The loader is the only writer. */
static int set_bit(struct lens_sched_probe *p, uint32_t tid, int on) {
  uint32_t word = tid >> 6;
  uint64_t bits = 0;
  int fd = bpf_map__fd(p->skel->maps.watch_bits);
  if (word >= bpf_map__max_entries(p->skel->maps.watch_bits)) return 0; /* the hash alone decides */
  if (bpf_map_lookup_elem(fd, &word, &bits) != 0) return -errno;
  bits = on ? bits | (1ull << (tid & 63)) : bits & ~(1ull << (tid & 63));
  return bpf_map_update_elem(fd, &word, &bits, BPF_ANY) ? -errno : 0;
}

int lens_sched_probe_open(struct lens_sched_probe **out, const struct lens_sched_probe_opts *o, char *err,
                          size_t err_len) {
  *out = NULL;
  libbpf_verbose = o->verbose;
  libbpf_set_print(print_filter);

  if (o->btf_path) {
    if (access(o->btf_path, R_OK) != 0) {
      snprintf(err, err_len, "cannot read BTF file %s: %s", o->btf_path, strerror(errno));
      return -1;
    }
  } else if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    snprintf(err, err_len,
             "this kernel has no BTF (/sys/kernel/btf/vmlinux: %s); it needs CONFIG_DEBUG_INFO_BTF=y, "
             "or pass --btf FILE",
             strerror(errno));
    return -1;
  }

  if (!has_bpf_caps()) {
    snprintf(err, err_len, "needs CAP_BPF and CAP_PERFMON, or root");
    return -1;
  }

  struct lens_sched_probe *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  p->stats_fd = -1;
  LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = o->btf_path);
  p->skel = lens_sched_bpf__open_opts(&oo);
  if (!p->skel) {
    int e = errno;
    snprintf(err, err_len, "cannot open the BPF object: %s", strerror(e));
    goto fail;
  }
  bpf_map__set_max_entries(p->skel->maps.watch_bits, bitmap_words());
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu > 0) bpf_map__set_max_entries(p->skel->maps.cpus, (uint32_t)ncpu);
  p->skel->rodata->min_wait_ns = o->min_wait_ns;
  p->skel->rodata->min_offcpu_ns = o->min_offcpu_ns;

  int rc = lens_sched_bpf__load(p->skel);
  if (rc) {
    int e = -rc;
    if (is_priv_error(e))
      priv_message(err, err_len, e);
    else if (o->btf_path)
      snprintf(err, err_len, "cannot load the probe with BTF from %s: %s (--verbose shows libbpf's log)",
               o->btf_path, strerror(e));
    else
      snprintf(err, err_len, "the kernel rejected the probe: %s (it needs BTF tracepoints with "
               "sched_switch's prev_state argument, Linux 5.18+; --verbose shows libbpf's log)", strerror(e));
    goto fail;
  }
  if (o->stats) {
    p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (p->stats_fd < 0)
      fprintf(stderr, "nccl-lens sched: cannot enable BPF run-time stats (%s); --stats will be empty\n",
              strerror(errno));
  }
  rc = lens_sched_bpf__attach(p->skel);
  if (rc) {
    int e = -rc;
    if (is_priv_error(e))
      priv_message(err, err_len, e);
    else
      snprintf(err, err_len, "cannot attach to the sched tracepoints: %s", strerror(e));
    goto fail;
  }
  *out = p;
  return 0;
fail:
  lens_sched_probe_close(p);
  return -1;
}

void lens_sched_probe_close(struct lens_sched_probe *p) {
  if (!p) return;
  ring_buffer__free(p->rb);
  lens_sched_bpf__destroy(p->skel);
  if (p->stats_fd >= 0) close(p->stats_fd);
  free(p);
}

int lens_sched_probe_watch(struct lens_sched_probe *p, uint32_t host_tid, uint32_t ns_tid) {
  struct lens_bpf_tstate st;
  memset(&st, 0, sizeof st);
  st.ns_tid = ns_tid;
  /* NOEXIST: re-adding a watched thread must not wipe the probe's state. */
  int rc = bpf_map__update_elem(p->skel->maps.watched, &host_tid, sizeof host_tid, &st, sizeof st, BPF_NOEXIST);
  if (rc && rc != -EEXIST) return rc;
  return set_bit(p, host_tid, 1); /* state first, then the bit that makes the probe look */
}

int lens_sched_probe_unwatch(struct lens_sched_probe *p, uint32_t host_tid) {
  set_bit(p, host_tid, 0);
  int rc = bpf_map__delete_elem(p->skel->maps.watched, &host_tid, sizeof host_tid, 0);
  /* A CPU slot it still claims would keep that CPU timing every switch. */
  int fd = bpf_map__fd(p->skel->maps.cpus);
  uint32_t n = bpf_map__max_entries(p->skel->maps.cpus);
  for (uint32_t cpu = 0; cpu < n; cpu++) {
    struct lens_bpf_cpu c;
    if (bpf_map_lookup_elem(fd, &cpu, &c) != 0 || c.waiter_tid != host_tid) continue;
    c.waiter_tid = 0;
    bpf_map_update_elem(fd, &cpu, &c, BPF_ANY);
  }
  return rc;
}

static int on_sample(void *ctx, void *data, size_t len) {
  struct lens_sched_probe *p = ctx;
  if (len >= sizeof(struct lens_bpf_sample)) p->fn(p->ctx, data);
  return 0;
}

int lens_sched_probe_poll(struct lens_sched_probe *p, int timeout_ms,
                          void (*fn)(void *, const struct lens_bpf_sample *), void *ctx) {
  p->fn = fn;
  p->ctx = ctx;
  if (!p->rb) {
    p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.samples), on_sample, p, NULL);
    if (!p->rb) return -errno;
  }
  /* The probe wakes us only when the ring fills up (waking per record costs
   * more than the record), so a poll that times out must still consume. */
  int n = timeout_ms ? ring_buffer__poll(p->rb, timeout_ms) : 0;
  if (n < 0) return n;
  int m = ring_buffer__consume(p->rb);
  return m < 0 ? m : n + m;
}

void lens_sched_probe_hists(struct lens_sched_probe *p,
                            void (*fn)(void *, const struct lens_bpf_hist_key *, const struct lens_bpf_hist *),
                            void *ctx) {
  int fd = bpf_map__fd(p->skel->maps.hists);
  struct lens_bpf_hist_key key, next;
  struct lens_bpf_hist h;
  const void *prev = NULL;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, &h) == 0) fn(ctx, &next, &h);
    key = next;
    prev = &key;
  }
}

void lens_sched_probe_take_hists(struct lens_sched_probe *p, uint32_t tid,
                                 void (*fn)(void *, const struct lens_bpf_hist_key *, const struct lens_bpf_hist *),
                                 void *ctx) {
  int fd = bpf_map__fd(p->skel->maps.hists);
  for (uint32_t kind = 1; kind < LENS_BPF_KINDS; kind++) {
    struct lens_bpf_hist_key key = {.tid = tid, .kind = kind};
    struct lens_bpf_hist h;
    if (bpf_map_lookup_elem(fd, &key, &h) != 0) continue;
    fn(ctx, &key, &h);
    bpf_map_delete_elem(fd, &key);
  }
}

void lens_sched_probe_counters(struct lens_sched_probe *p, uint64_t out[LENS_CNT_N]) {
  int ncpu = libbpf_num_possible_cpus();
  memset(out, 0, sizeof(uint64_t) * LENS_CNT_N);
  if (ncpu <= 0) return;
  uint64_t *vals = calloc((size_t)ncpu, sizeof *vals);
  if (!vals) return;
  int fd = bpf_map__fd(p->skel->maps.counters);
  for (uint32_t k = 0; k < LENS_CNT_N; k++) {
    if (bpf_map_lookup_elem(fd, &k, vals) != 0) continue;
    for (int c = 0; c < ncpu; c++) out[k] += vals[c];
  }
  free(vals);
}

int lens_sched_probe_prog_stats(struct lens_sched_probe *p, struct lens_sched_prog_stats out[3]) {
  struct bpf_program *progs[3] = {p->skel->progs.on_switch, p->skel->progs.on_wakeup,
                                  p->skel->progs.on_wakeup_new};
  int n = 0;
  for (int i = 0; i < 3; i++) {
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len) != 0) continue;
    out[n].name = bpf_program__name(progs[i]);
    out[n].run_cnt = info.run_cnt;
    out[n].run_time_ns = info.run_time_ns;
    n++;
  }
  return n;
}
#endif
