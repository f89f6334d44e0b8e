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
  /* Which thread owns each histogram slot: the loader's own copy, so that
   * reading histograms never scans the map. A slot stays RETIRED after
   * unwatch until its histograms are taken. */
  uint32_t slot_tid[LENS_BPF_SLOTS];
  uint8_t slot_use[LENS_BPF_SLOTS];
  uint32_t gen; /* last watch generation handed out */
};

enum { SLOT_FREE, SLOT_WATCHED, SLOT_RETIRED };

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
int lens_sched_has_bpf_caps(void) {
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

/* Words of tid_slots: four 16-bit entries per word, up to kernel.pid_max. */
static uint32_t tid_slot_words(void) { return bitmap_words() * (64 / LENS_TID_SLOTS_PER_WORD); }

/* Sets one tid's tid_slots entry (slot + 1, or 0 for none). The loader is
 * the only writer. */
static int set_tid_slot(struct lens_sched_probe *p, uint32_t tid, uint32_t entry) {
  uint32_t word = tid / LENS_TID_SLOTS_PER_WORD, shift = (tid % LENS_TID_SLOTS_PER_WORD) * 16;
  uint64_t v = 0;
  int fd = bpf_map__fd(p->skel->maps.tid_slots);
  if (word >= bpf_map__max_entries(p->skel->maps.tid_slots)) return 0; /* the hash alone decides */
  if (bpf_map_lookup_elem(fd, &word, &v) != 0) return -errno;
  v = (v & ~(0xFFFFull << shift)) | ((uint64_t)(entry & 0xFFFF) << shift);
  return bpf_map_update_elem(fd, &word, &v, BPF_ANY) ? -errno : 0;
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

  if (!lens_sched_has_bpf_caps()) {
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
  bpf_map__set_max_entries(p->skel->maps.tid_slots, tid_slot_words());
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

static int find_slot(const struct lens_sched_probe *p, uint32_t tid, int use) {
  for (int i = 0; i < LENS_BPF_SLOTS; i++)
    if (p->slot_use[i] == use && (use == SLOT_FREE || p->slot_tid[i] == tid)) return i;
  return -1;
}

/* Writes a slot's owner and zeroes its state and histograms (tid 0: free). */
static int write_slot(struct lens_sched_probe *p, uint32_t slot, uint32_t tid, uint32_t gen, uint32_t ns_tid) {
  static struct lens_bpf_slot s; /* 896 bytes: not on the stack; the loader is single-threaded */
  memset(&s, 0, sizeof s);
  s.tid = tid;
  s.gen = gen;
  s.ns_tid = ns_tid;
  return bpf_map__update_elem(p->skel->maps.slots, &slot, sizeof slot, &s, sizeof s, BPF_ANY);
}

int lens_sched_probe_watch(struct lens_sched_probe *p, uint32_t host_tid, uint32_t ns_tid) {
  struct lens_bpf_watch w;
  /* Re-adding a watched thread must not wipe the probe's state. */
  if (bpf_map__lookup_elem(p->skel->maps.watched, &host_tid, sizeof host_tid, &w, sizeof w, 0) == 0)
    return set_bit(p, host_tid, 1);
  /* Watched before and its histograms not yet taken: they go on in the same slot. */
  int slot = find_slot(p, host_tid, SLOT_RETIRED);
  int fresh = slot < 0;
  if (fresh) slot = find_slot(p, 0, SLOT_FREE);
  if (slot < 0) return -ENOSPC;
  memset(&w, 0, sizeof w);
  w.slot = (uint32_t)slot;
  uint32_t gen = ++p->gen ? p->gen : ++p->gen; /* never 0: a slot's state starts at st_gen 0 */
  /* The slot first (the probe checks its tid, and resets its state on a new
   * gen), then the watch entry and the tid_slots entry, then the bit that
   * makes the probe look. */
  int rc;
  if (fresh) {
    rc = write_slot(p, (uint32_t)slot, host_tid, gen, ns_tid);
  } else {
    uint32_t key = (uint32_t)slot;
    static struct lens_bpf_slot s;
    rc = bpf_map__lookup_elem(p->skel->maps.slots, &key, sizeof key, &s, sizeof s, 0);
    if (!rc) {
      s.gen = gen;
      s.ns_tid = ns_tid;
      rc = bpf_map__update_elem(p->skel->maps.slots, &key, sizeof key, &s, sizeof s, BPF_ANY);
    }
  }
  if (rc) return rc;
  rc = bpf_map__update_elem(p->skel->maps.watched, &host_tid, sizeof host_tid, &w, sizeof w, BPF_NOEXIST);
  if (rc) return rc;
  rc = set_tid_slot(p, host_tid, (uint32_t)slot + 1);
  if (rc) return rc;
  p->slot_tid[slot] = host_tid;
  p->slot_use[slot] = SLOT_WATCHED;
  return set_bit(p, host_tid, 1);
}

int lens_sched_probe_unwatch(struct lens_sched_probe *p, uint32_t host_tid) {
  set_bit(p, host_tid, 0);
  set_tid_slot(p, host_tid, 0);
  int rc = bpf_map__delete_elem(p->skel->maps.watched, &host_tid, sizeof host_tid, 0);
  /* Its state in the slot is reset by the next watch (new gen). */
  int slot = find_slot(p, host_tid, SLOT_WATCHED);
  if (slot >= 0) p->slot_use[slot] = SLOT_RETIRED;
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

/* Calls fn for each kind of one slot that counted anything (a kind with no
 * waits has no histogram, as before the slots existed). */
static int report_slot(struct lens_sched_probe *p, uint32_t slot,
                       void (*fn)(void *, const struct lens_bpf_hist_key *, const struct lens_bpf_hist *),
                       void *ctx) {
  static struct lens_bpf_slot s;
  if (bpf_map__lookup_elem(p->skel->maps.slots, &slot, sizeof slot, &s, sizeof s, 0) != 0) return -1;
  for (uint32_t kind = 1; kind < LENS_BPF_KINDS; kind++) {
    const struct lens_bpf_hist *h = &s.hist[kind - 1];
    uint64_t any = 0;
    for (int b = 0; b < LENS_HIST_BUCKETS; b++) any |= h->buckets[b];
    if (!any) continue;
    struct lens_bpf_hist_key key = {.tid = p->slot_tid[slot], .kind = kind};
    fn(ctx, &key, h);
  }
  return 0;
}

void lens_sched_probe_hists(struct lens_sched_probe *p,
                            void (*fn)(void *, const struct lens_bpf_hist_key *, const struct lens_bpf_hist *),
                            void *ctx) {
  for (uint32_t i = 0; i < LENS_BPF_SLOTS; i++)
    if (p->slot_use[i] != SLOT_FREE) report_slot(p, i, fn, ctx);
}

void lens_sched_probe_take_hists(struct lens_sched_probe *p, uint32_t tid,
                                 void (*fn)(void *, const struct lens_bpf_hist_key *, const struct lens_bpf_hist *),
                                 void *ctx) {
  int slot = find_slot(p, tid, SLOT_RETIRED);
  int watched = slot < 0;
  if (watched) slot = find_slot(p, tid, SLOT_WATCHED);
  if (slot < 0) return;
  if (report_slot(p, (uint32_t)slot, fn, ctx) != 0) return;
  if (watched) {
    /* Still watched: start its histograms over, keep the owner and the
     * probe's state (a wait in progress stays measured). */
    static struct lens_bpf_slot s;
    uint32_t key = (uint32_t)slot;
    if (bpf_map__lookup_elem(p->skel->maps.slots, &key, sizeof key, &s, sizeof s, 0) == 0) {
      memset(s.hist, 0, sizeof s.hist);
      bpf_map__update_elem(p->skel->maps.slots, &key, sizeof key, &s, sizeof s, BPF_ANY);
    }
    return;
  }
  write_slot(p, (uint32_t)slot, 0, 0, 0);
  p->slot_use[slot] = SLOT_FREE;
  p->slot_tid[slot] = 0;
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
