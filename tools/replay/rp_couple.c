/* Coupled simulated GPUs (rp_couple.h): one board for the whole run, posted
 * arrivals, ends fixed by the rank that arrives last, published by each
 * process to its own GPUs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_job.h"
#include "replay/rp_truth.h"

#define BOARD_MAGIC 0x6c656e73626f6172ULL /* "lensboar" */
#define CH_SKEW_NS 250                     /* as rp_plan.c: channels start 250 ns apart */

struct rp_pending_task {
  int op_id, nch;
  uint64_t items[RP_MAX_CH];
  int64_t off, dur; /* from the instance's start */
  int follower;     /* index of the task whose items it shares, -1 */
};

struct rp_pending {
  struct rp_pending *next;
  struct rp_comm *comm;
  struct rp_board_inst *inst;
  int ntasks;
  int64_t total;
  struct rp_pending_task t[];
};

struct rp_couple {
  struct rp_pending *head, **tail;
  int ord[RP_MAX_COMMSETS * RP_MAX_LOCAL]; /* next instance per communicator */
  long overflow;                            /* arrivals past the board's capacity: left uncoupled */
};

struct rp_board *rp_board_current;

static struct rp_board *board_init(struct rp_board *b) {
  if (b->magic != BOARD_MAGIC) b->magic = BOARD_MAGIC;
  return b;
}

struct rp_board *rp_board_anon(void) {
  void *p = mmap(NULL, sizeof(struct rp_board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : board_init(p);
}

struct rp_board *rp_board_file(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600); /* nofollow-ok: --board FILE, named on the command line */
  if (fd < 0 || ftruncate(fd, (off_t)sizeof(struct rp_board)) != 0) {
    snprintf(err, errlen, "board %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  void *p = mmap(NULL, sizeof(struct rp_board), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    snprintf(err, errlen, "board %s: mmap: %s", path, strerror(errno));
    return NULL;
  }
  return board_init(p);
}

void rp_board_unmap(struct rp_board *b) {
  if (b) munmap(b, sizeof *b);
}

int64_t rp_board_delta(void) {
  /* CLOCK_REALTIME is not namespaced: it is the one clock every "host" of a
   * multi-host replay shares. Best of 9 bracketed reads, more (up to 1000)
   * while the best bracket is above 1 us: a receive step waits for its
   * sender's post + 4 us on this offset (rp_couple_link_ready), so the
   * offset's error must stay well below that for the truth to be causal. */
  int64_t best = INT64_MAX, delta = 0;
  for (int i = 0; i < 1000 && (i < 9 || best > 1000); i++) {
    struct timespec r;
    int64_t a = rp_now();
    clock_gettime(CLOCK_REALTIME, &r);
    int64_t b = rp_now();
    if (b - a < best) {
      best = b - a;
      delta = (int64_t)r.tv_sec * 1000000000LL + r.tv_nsec - (a + (b - a) / 2);
    }
  }
  return delta;
}

static struct rp_couple *state(struct rp_node *n) {
  if (!n->couple) {
    n->couple = calloc(1, sizeof *n->couple);
    n->couple->tail = &n->couple->head;
  }
  return n->couple;
}

void rp_couple_arrive(struct rp_node *n, struct rp_plan *p) {
  struct rp_couple *cs = state(n);
  struct rp_comm *c = p->comm;
  int ord = cs->ord[c->index]++;
  int ntasks = 0;
  for (struct rp_task *t = p->tasks; t; t = t->next) ntasks++;
  struct rp_pending *pe = calloc(1, sizeof *pe + (size_t)ntasks * sizeof(struct rp_pending_task));
  pe->comm = c;
  pe->ntasks = ntasks;
  int i = 0;
  int64_t off = 0;
  const struct rp_task *first = p->tasks;
  for (struct rp_task *t = p->tasks; t; t = t->next, i++) {
    struct rp_pending_task *pt = &pe->t[i];
    pt->op_id = t->op_id;
    pt->nch = t->nChannels;
    pt->follower = -1;
    if (t->pair && rp_plan_task_follows(t, p)) {
      int j = 0;
      for (const struct rp_task *u = p->tasks; u && u != t->pair; u = u->next) j++;
      pt->follower = j;
      continue;
    }
    memcpy(pt->items, t->items, sizeof pt->items);
    pt->off = off;
    pt->dur = rp_task_dur_ns(n, t);
    off += pt->dur;
  }
  pe->total = off;
  for (struct rp_task *t = p->tasks; t; t = t->next) t->board_ord1 = 0;
  if (ord >= RP_BOARD_INST || c->rank >= RP_BOARD_RANKS || !n->board) {
    cs->overflow++;
  } else {
    /* A lone collective's network steps are coupled step by step with its
     * peers' (rp_couple_link_*): its instance on every rank is this
     * ordinal. Grouped or p2p tasks would share it: left uncoupled. */
    if (ntasks == 1 && !first->is_p2p) p->tasks->board_ord1 = ord + 1;
    struct rp_board_inst *in = &n->board->inst[c->set][ord];
    pe->inst = in;
    if (!atomic_load(&in->is_set)) { /* every rank writes the same values */
      atomic_store(&in->func, first->func);
      atomic_store(&in->nch, first->nChannels);
      atomic_store(&in->seq, first->is_p2p ? -1 : (long long)c->seq[first->func]);
      atomic_store(&in->bytes, (long long)(first->count * first->esize));
      atomic_store(&in->dur, off);
      atomic_store(&in->is_set, 1);
    }
    int64_t extra = rp_job_extra_ns(n, c, off, rp_task_net_steps(n, first));
    if (extra > 0) atomic_fetch_add(&in->extra, extra);
    atomic_store(&in->kstart[c->rank], p->kstart + n->board_delta);
    if (atomic_fetch_add(&in->arrived, 1) + 1 == c->nranks) { /* the last arrival fixes the start of the work */
      int64_t last = 0;
      int lr = 0;
      for (int r = 0; r < c->nranks && r < RP_BOARD_RANKS; r++) {
        int64_t k = atomic_load(&in->kstart[r]);
        if (k > last) last = k, lr = r;
      }
      atomic_store(&in->last_rank, lr);
      atomic_store(&in->s, last);
    }
  }
  *cs->tail = pe;
  cs->tail = &pe->next;
}

/* Ends of one settled plan, as rp_plan_finish_set does for uncoupled ones. */
static void publish(struct rp_node *n, struct rp_pending *pe, int64_t s) {
  struct rp_gpu *g = &n->gpu[pe->comm->local];
  /* an injected slow link: the work starts with the last arrival, and its
   * kernels wait for the link's last step (the data), so they end later */
  int64_t extra = pe->inst ? atomic_load(&pe->inst->extra) : 0;
  for (int i = 0; i < pe->ntasks; i++) {
    struct rp_pending_task *pt = &pe->t[i];
    struct rp_truth_op *op = rp_truth_op_at(n->truth, pt->op_id);
    if (pt->follower >= 0) {
      struct rp_truth_op *lead = rp_truth_op_at(n->truth, pe->t[pt->follower].op_id);
      if (op && lead) op->kernel_end = lead->kernel_end;
      continue;
    }
    int64_t end = s + pt->off + pt->dur + extra;
    for (int ch = 0; ch < pt->nch; ch++) {
      struct rp_item *it = rp_gpu_item(g, ch, pt->items[ch]);
      if (it) atomic_store_explicit(&it->end, end + ch * CH_SKEW_NS, memory_order_release);
    }
    if (op) op->kernel_end = end + (pt->nch - 1) * CH_SKEW_NS;
  }
  int64_t free_at = s + pe->total + extra + (int64_t)CH_SKEW_NS * RP_MAX_CH;
  if (free_at > pe->comm->stream_free) pe->comm->stream_free = free_at;
}

void rp_couple_settle(struct rp_node *n) {
  struct rp_couple *cs = n->couple;
  if (!cs) return;
  while (cs->head) {
    struct rp_pending *pe = cs->head;
    int64_t s;
    if (!pe->inst) { /* past the board: runs alone */
      s = rp_now();
      for (int i = 0; i < pe->ntasks; i++) {
        struct rp_truth_op *op = rp_truth_op_at(n->truth, pe->t[i].op_id);
        if (op && op->kernel_start > s) s = op->kernel_start;
      }
    } else {
      /* The other ranks arrive when their apps call: poll the board. A
       * rank that never arrives (its process died) would hang the job as
       * it hangs NCCL; give up after 60 s and run alone. */
      int64_t deadline = rp_now() + 60LL * 1000000000LL;
      while (!(s = atomic_load(&pe->inst->s)) && rp_now() < deadline) rp_sleep_ns(10000);
      s = s ? s - n->board_delta : rp_now();
    }
    publish(n, pe, s);
    cs->head = pe->next;
    if (!cs->head) cs->tail = &cs->head;
    free(pe);
  }
}

void rp_couple_free(struct rp_node *n) {
  if (!n->couple) return;
  rp_couple_settle(n);
  free(n->couple);
  n->couple = NULL;
}

/* ---- step-level coupling of network links ---- */

static struct rp_board_link *link_of(struct rp_node *n, const struct rp_op *op) {
  int src = op->kind == RP_OP_NET_SEND ? op->rank : op->peer;
  if (!n->board || !op->link_ord1 || src < 0 || src >= RP_BOARD_RANKS || op->channel < 0 || op->channel >= RP_MAX_CH ||
      op->link_set < 0 || op->link_set >= RP_MAX_COMMSETS)
    return NULL;
  return &n->board->link[op->link_set][src][op->channel][(op->link_ord1 - 1) % RP_LINK_RING];
}

void rp_couple_link_open(struct rp_node *n, struct rp_op *op) {
  struct rp_board_link *l = link_of(n, op);
  if (!l) return;
  /* closed while cleared, so a receiver never reads an older instance's
   * posts under this instance's tag */
  atomic_store(&l->tag, 0);
  for (int k = 0; k < RP_LINK_STEPS; k++) atomic_store(&l->post[k], 0);
  atomic_store(&l->tag, op->link_ord1);
}

void rp_couple_link_post(struct rp_node *n, struct rp_op *op, int k) {
  struct rp_board_link *l = link_of(n, op);
  if (!l || k < 0 || k >= RP_LINK_STEPS || atomic_load(&l->tag) != op->link_ord1) return;
  atomic_store(&l->post[k], rp_now() + n->board_delta);
}

int rp_couple_link_ready(struct rp_node *n, const struct rp_op *op, int k, int64_t now, int64_t lat_ns) {
  struct rp_board_link *l = link_of(n, op);
  if (!l || k < 0 || k >= RP_LINK_STEPS) return 1; /* not coupled */
  long long t1 = atomic_load(&l->tag);
  if (t1 > op->link_ord1) return 1; /* the sender reached an instance RP_LINK_RING later: it posted this one long ago */
  if (t1 != op->link_ord1) return 0; /* not opened yet (or being reset) */
  long long p = atomic_load(&l->post[k]);
  if (atomic_load(&l->tag) != t1 || !p) return 0;
  return now + n->board_delta >= p + lat_ns;
}

static void jhex(FILE *f, uint64_t v) { fprintf(f, "\"0x%016" PRIx64 "\"", v); } /* docs/cli.md: one vocabulary */

void rp_couple_write_instances(const struct rp_board *b, const struct lens_replay_opts *o, FILE *f) {
  int nranks = o->nodes * o->ranks_per_node;
  if (nranks > RP_BOARD_RANKS) nranks = RP_BOARD_RANKS;
  fputs(",\n\"hosts\":[", f);
  for (int i = 0; i < o->nodes && i < RP_BOARD_NODES; i++) {
    fprintf(f, "%s\"", i ? "," : "");
    for (const char *c = b->host[i]; *c; c++)
      if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
    fputc('"', f);
  }
  fputs("],\n\"instances\":[", f);
  int k = 0;
  for (int set = 0; set < RP_MAX_COMMSETS; set++)
    for (int ord = 0; ord < RP_BOARD_INST; ord++) {
      struct rp_board_inst *in = (struct rp_board_inst *)&b->inst[set][ord];
      if (!atomic_load(&in->is_set)) break;
      int64_t s = atomic_load(&in->s);
      if (!s) continue; /* never completed */
      int nch = atomic_load(&in->nch);
      int64_t last = 0, first = INT64_MAX;
      for (int r = 0; r < nranks; r++) {
        int64_t t = atomic_load(&in->kstart[r]);
        if (t > last) last = t;
        if (t && t < first) first = t;
      }
      int64_t end = s + atomic_load(&in->dur) + atomic_load(&in->extra) + (int64_t)(nch - 1) * CH_SKEW_NS;
      struct rp_job_cause jc = rp_job_truth_cause(o, nranks);
      fprintf(f, "%s\n{\"comm_id\":", k++ ? "," : "");
      jhex(f, rp_job_comm_id(o, set));
      fprintf(f, ",\"set\":%d,\"ordinal\":%d,\"seq\":%lld,\"func\":\"%s\",\"bytes\":%lld,\"nChannels\":%d,", set,
              ord, (long long)atomic_load(&in->seq), rp_func_name(atomic_load(&in->func)),
              (long long)atomic_load(&in->bytes), nch);
      fprintf(f, "\"exec_ns\":%lld,\"extra_ns\":%lld,\"last_rank\":%d,\"cause\":\"%s\",\"straggler\":%d,",
              (long long)(end - last), (long long)atomic_load(&in->extra), atomic_load(&in->last_rank), jc.cause,
              jc.rank);
      fprintf(f, "\"link_peer\":%d,\"injected_ns\":%lld,", jc.peer, (long long)jc.ns);
      /* job-starved-proxy: the instance ran (first arrival to end) while the
       * hogs competed with the straggler's proxy */
      struct rp_board *wb = (struct rp_board *)b;
      int64_t s0 = atomic_load(&wb->starve_start), s1 = atomic_load(&wb->starve_end);
      if (s0) fprintf(f, "\"in_starvation\":%s,", first < (s1 ? s1 : INT64_MAX) && end > s0 ? "true" : "false");
      fputs("\"ranks\":[", f);
      for (int r = 0; r < nranks; r++) {
        int64_t t = atomic_load(&in->kstart[r]);
        fprintf(f, "%s{\"rank\":%d,\"arrival_ns\":%lld,\"span_ns\":%lld,\"wait_ns\":%lld}", r ? "," : "", r,
                (long long)(t - first), (long long)(end - t), (long long)(last - t));
      }
      fputs("]}", f);
    }
  fputs("]", f);
}
