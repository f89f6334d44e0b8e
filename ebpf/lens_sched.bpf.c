// SPDX-License-Identifier: GPL-2.0 OR MIT
/* nccl-lens scheduling probe: how long NCCL's proxy progress threads wait
 * for a CPU, and who held it.
 *
 * Three BTF tracepoints (tp_btf: attached by BTF id, no tracefs needed):
 *   sched_wakeup / sched_wakeup_new  a watched thread became runnable
 *   sched_switch                      a CPU changed hands
 * Only threads whose bit is set in `watch_bits` (filled by the loader, with
 * their `tid_slots` entry) are followed; every other task costs two bitmap
 * tests and one per-CPU load per switch. A watched thread's state and
 * histograms live in its array slot (`slots`), found through `tid_slots`:
 * array loads the verifier inlines, no hashing and no helper call.
 *
 * A watched thread goes RUNNING -> (switch-out) -> BLOCKED or PREEMPT, then
 * BLOCKED -> (wakeup) -> RUNQ, then RUNQ/PREEMPT -> (switch-in) -> RUNNING.
 * Each RUNQ/PREEMPT -> RUNNING transition is a wait, each BLOCKED -> RUNQ an
 * off-CPU sleep; both go into a log2 histogram and, above their thresholds,
 * into the ring buffer. The culprit of a wait is the task that held the CPU
 * longest while the thread waited for it (per-CPU slot `cpus`). Kernel
 * structs are declared with only the fields read (CO-RE relocates them
 * against the running kernel's BTF). */
#include <linux/types.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "lens_sched_bpf.h"

struct thread_info {
  unsigned int cpu;
} __attribute__((preserve_access_index));

struct task_struct {
  struct thread_info thread_info; /* x86, arm64: the CPU a task is queued on */
  int pid;
  int tgid;
  char comm[16];
} __attribute__((preserve_access_index));

/* Architectures without thread_info in task_struct keep `cpu` there. */
struct task_struct___cpu {
  unsigned int cpu;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define RINGBUF_BYTES (1 << 22) /* 4 MiB: ~58k samples, over 0.1 s of the heaviest load measured */
/* Records per CPU between early wake-ups of the loader: a power of two; with
 * the ring a quarter full on 4 CPUs writing alike. */
#define WAKE_EVERY 4096

/* Set by the loader before load. */
const volatile __u64 min_wait_ns = 0;          /* RUNQ/PREEMPT shorter than this: histogram only */
const volatile __u64 min_offcpu_ns = 1000000;  /* OFFCPU shorter than this: histogram only */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, LENS_BPF_SLOTS);
  __type(key, __u32);
  __type(value, struct lens_bpf_watch);
} watched SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, LENS_BPF_SLOTS);
  __type(key, __u32);
  __type(value, struct lens_bpf_slot);
} slots SEC(".maps");

/* One bit per tid (word = tid / 64), set by the loader for watched tids: an
 * array lookup the verifier inlines, so the common case, a switch between two
 * unwatched tasks, costs two loads instead of two hash lookups. The loader
 * sizes it from kernel.pid_max; tids past its end fall back to the hash. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, __u64);
} watch_bits SEC(".maps");

/* tid -> slot + 1, four 16-bit entries per word (see lens_sched_bpf.h); the
 * loader sizes it from kernel.pid_max like the bitmap. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1048576);
  __type(key, __u32);
  __type(value, __u64);
} tid_slots SEC(".maps");

/* Sized to the possible CPUs by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct lens_bpf_cpu);
} cpus SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, RINGBUF_BYTES);
} samples SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, LENS_CNT_N);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

/* Returns the new count on this CPU (0 if the counter is missing). */
static __always_inline __u64 count(__u32 which) {
  __u64 *c = bpf_map_lookup_elem(&counters, &which);
  if (!c) return 0;
  return *c += 1; /* per-CPU slot: no atomics needed */
}

/* The slot of `tid` if it is watched, else 0: its state and histograms.
 * Unwatched (the common case): one inlined bitmap load. Watched: two more
 * inlined array loads (tid_slots, slots) and no helper call; the `watched`
 * hash only for tids past the bitmap. A gen the state has not seen is a new
 * watch of this slot: the state starts over (phase UNKNOWN, so no wait is
 * measured across the gap). */
static __always_inline struct lens_bpf_slot *watched_slot(__u32 tid) {
  __u32 word = tid >> 6, idx;
  __u64 *bits = bpf_map_lookup_elem(&watch_bits, &word);
  __u64 *ix = 0;
  if (bits) {
    if (!((*bits >> (tid & 63)) & 1)) return 0;
    __u32 iword = tid / LENS_TID_SLOTS_PER_WORD;
    ix = bpf_map_lookup_elem(&tid_slots, &iword);
  }
  if (ix) {
    idx = (__u32)(*ix >> ((tid % LENS_TID_SLOTS_PER_WORD) * 16)) & 0xFFFF;
    if (!idx) return 0;
    idx -= 1;
  } else {
    struct lens_bpf_watch *w = bpf_map_lookup_elem(&watched, &tid);
    if (!w) return 0; /* past the bitmap (pid_max raised after load): the hash decides */
    idx = w->slot;
  }
  struct lens_bpf_slot *s = bpf_map_lookup_elem(&slots, &idx);
  if (!s || s->tid != tid || !s->gen) return 0; /* the loader is changing it */
  if (s->st_gen != s->gen) {
    __builtin_memset(&s->st, 0, sizeof(s->st));
    s->st_gen = s->gen;
  }
  return s;
}

static __always_inline __u32 task_cpu(struct task_struct *p) {
  /* `p` is a BTF pointer: plain (CO-RE relocated) loads, no probe_read helper. */
  if (bpf_core_field_exists(p->thread_info.cpu)) return p->thread_info.cpu;
  struct task_struct___cpu *q = (void *)p;
  if (bpf_core_field_exists(q->cpu)) return q->cpu;
  return bpf_get_smp_processor_id();
}

/* A watched thread starts waiting for `cpu`: claim the CPU's waiter slot, so
 * the switches on that CPU measure who holds it meanwhile. */
static __always_inline void wait_begin(struct lens_bpf_tstate *st, __u32 tid, __u32 cpu, __u64 now) {
  st->cpu = cpu;
  struct lens_bpf_cpu *c = bpf_map_lookup_elem(&cpus, &cpu);
  if (!c || c->waiter_tid) return;
  c->waiter_tid = tid;
  c->since_ns = now;
  c->best_ns = 0;
  c->best_pid = c->best_tid = 0;
}

/* `prev` gives up a CPU that a watched thread is waiting for: was its turn the longest? */
static __always_inline void holder_done(struct lens_bpf_cpu *c, struct task_struct *prev, __u64 now) {
  __u64 turn = now - c->since_ns;
  c->since_ns = now;
  if (!prev->pid || turn <= c->best_ns) return; /* the idle task holds nothing */
  c->best_ns = turn;
  c->best_pid = prev->tgid;
  c->best_tid = prev->pid;
  __builtin_memcpy(c->best_comm, prev->comm, sizeof(c->best_comm));
}

static __always_inline __u32 log2_u64(__u64 v) {
  __u32 r = 0, s;
  s = (v > 0xFFFFFFFFull) << 5; v >>= s; r |= s;
  s = (v > 0xFFFF) << 4; v >>= s; r |= s;
  s = (v > 0xFF) << 3; v >>= s; r |= s;
  s = (v > 0xF) << 2; v >>= s; r |= s;
  s = (v > 0x3) << 1; v >>= s; r |= s;
  return r | (__u32)(v >> 1);
}

/* One thread's waits are counted only by its own wakeup and switch-in, which
 * the scheduler serializes (pi_lock, run-queue lock), so a plain add suffices. */
static __always_inline void hist_add(struct lens_bpf_slot *slot, __u32 kind, __u64 delta_ns) {
  __u32 k = kind - 1;
  barrier_var(k);
  if (k >= LENS_BPF_KINDS - 1) return;
  struct lens_bpf_hist *h = &slot->hist[k];
  /* ns -> us without a 64-bit divide (tens of cycles): floor(n / 1000) equals
   * (n * 0x10624DD3) >> 38 for every n < 2^32, which is what gcc emits for a
   * 32-bit n / 1000; waits of 4.3 s and more take the divide. */
  __u64 us = delta_ns < (1ull << 32) ? (delta_ns * 0x10624DD3ull) >> 38 : delta_ns / 1000;
  __u64 b = us ? log2_u64(us) + 1 : 0; /* bucket 0: < 1 us; bucket k: [2^(k-1), 2^k) us */
  if (b >= LENS_HIST_BUCKETS) b = LENS_HIST_BUCKETS - 1;
  /* clang folds a plain mask into the clamp above and the verifier then sees
   * no bound; the barrier keeps the mask, a no-op after the clamp. */
  barrier_var(b);
  b &= LENS_HIST_BUCKETS - 1;
  h->buckets[b] += 1;
}

static __always_inline void emit(__u32 kind, __u32 cpu, __u64 start, __u64 end, struct task_struct *t,
                                 const struct lens_bpf_slot *slot, __u32 culprit_pid, __u32 culprit_tid,
                                 const char *culprit_comm_kernel, const char *culprit_comm_saved) {
  struct lens_bpf_sample *s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
  if (!s) {
    count(LENS_CNT_RINGBUF_FULL);
    return;
  }
  s->start_ns = start;
  s->end_ns = end;
  s->kind = kind;
  s->pid = t->tgid;
  s->tid = t->pid;
  s->cpu = cpu;
  s->culprit_pid = culprit_pid;
  s->culprit_tid = culprit_tid;
  s->prev_state = slot->st.prev_state;
  s->ns_tid = slot->ns_tid;
  if (culprit_comm_kernel) /* a BTF pointer: plain loads, no helper call */
    __builtin_memcpy(s->culprit_comm, culprit_comm_kernel, sizeof(s->culprit_comm));
  else if (culprit_comm_saved)
    __builtin_memcpy(s->culprit_comm, culprit_comm_saved, sizeof(s->culprit_comm));
  else
    __builtin_memset(s->culprit_comm, 0, sizeof(s->culprit_comm));
  /* Waking the loader for every record costs more than the record, and so
   * does asking the ring how full it is (a load of the loader's consumer
   * position, a cache line another CPU writes). The loader polls every 50 ms
   * anyway; each CPU wakes it early once per WAKE_EVERY records it wrote. */
  __u64 n = count(LENS_CNT_SAMPLES);
  bpf_ringbuf_submit(s, (n & (WAKE_EVERY - 1)) ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

/* A watched thread became runnable. Only a BLOCKED (or not yet seen) thread
 * starts a run-queue wait; a wakeup of a thread that is running or already
 * queued changes nothing. */
static __always_inline int on_wake(struct task_struct *p) {
  __u32 tid = p->pid;
  struct lens_bpf_slot *slot = watched_slot(tid);
  if (!slot) return 0;
  struct lens_bpf_tstate *st = &slot->st;
  __u64 now = bpf_ktime_get_ns();
  if (st->phase == LENS_PHASE_BLOCKED) {
    __u64 slept = now - st->since_ns;
    hist_add(slot, LENS_BPF_OFFCPU, slept);
    if (slept >= min_offcpu_ns)
      emit(LENS_BPF_OFFCPU, bpf_get_smp_processor_id(), st->since_ns, now, p, slot, 0, 0, 0, 0);
  } else if (st->phase != LENS_PHASE_UNKNOWN) {
    return 0;
  }
  st->phase = LENS_PHASE_RUNQ;
  st->since_ns = now;
  wait_begin(st, tid, task_cpu(p), now);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p) { return on_wake(p); }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p) { return on_wake(p); }

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state) {
  __u32 prev_tid = prev->pid, next_tid = next->pid;
  __u32 cpu = bpf_get_smp_processor_id();
  struct lens_bpf_tstate *st;
  struct lens_bpf_slot *slot;
  __u64 now = 0;

  /* A watched thread waits for this CPU: account the turn `prev` just had. */
  struct lens_bpf_cpu *c = bpf_map_lookup_elem(&cpus, &cpu);
  if (c && c->waiter_tid) {
    now = bpf_ktime_get_ns();
    holder_done(c, prev, now);
  }

  slot = watched_slot(prev_tid);
  if (slot) {
    st = &slot->st;
    if (!now) now = bpf_ktime_get_ns();
    st->since_ns = now;
    st->prev_state = prev_state;
    if (prev_state == 0) { /* TASK_RUNNING: preempted or yielded; `next` takes the CPU */
      st->phase = LENS_PHASE_PREEMPT;
      st->culprit_pid = next->tgid;
      st->culprit_tid = next_tid;
      __builtin_memcpy(st->culprit_comm, next->comm, sizeof(st->culprit_comm));
      wait_begin(st, prev_tid, cpu, now);
    } else {
      st->phase = LENS_PHASE_BLOCKED;
      st->cpu = cpu;
    }
  }

  slot = watched_slot(next_tid);
  if (slot) {
    st = &slot->st;
    if (!now) now = bpf_ktime_get_ns();
    __u32 phase = st->phase;
    if (phase == LENS_PHASE_RUNQ || phase == LENS_PHASE_PREEMPT) {
      __u64 waited = now - st->since_ns;
      __u32 kind = phase == LENS_PHASE_RUNQ ? LENS_BPF_RUNQ_WAIT : LENS_BPF_PREEMPT;
      /* Culprit: whoever held this CPU longest while it waited here; else the
       * task that took the CPU (PREEMPT) or had it until now (RUNQ). */
      struct lens_bpf_cpu *w = 0;
      if (c && c->waiter_tid == next_tid && st->cpu == cpu) w = c;
      hist_add(slot, kind, waited);
      if (waited >= min_wait_ns) {
        if (w && w->best_ns)
          emit(kind, cpu, st->since_ns, now, next, slot, w->best_pid, w->best_tid, 0, w->best_comm);
        else if (kind == LENS_BPF_PREEMPT)
          emit(kind, cpu, st->since_ns, now, next, slot, st->culprit_pid, st->culprit_tid, 0, st->culprit_comm);
        else
          emit(kind, cpu, st->since_ns, now, next, slot, prev->pid ? prev->tgid : 0, prev_tid,
               prev->pid ? prev->comm : 0, 0);
      }
    }
    /* Give back the waiter slot it held, here or on the CPU it left. */
    if (c && c->waiter_tid == next_tid) {
      c->waiter_tid = 0;
    } else if (st->cpu != cpu) {
      __u32 old = st->cpu;
      struct lens_bpf_cpu *oc = bpf_map_lookup_elem(&cpus, &old);
      if (oc && oc->waiter_tid == next_tid) oc->waiter_tid = 0;
    }
    st->phase = LENS_PHASE_RUNNING;
    st->since_ns = now;
  }
  return 0;
}
