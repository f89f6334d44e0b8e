/* The agent's model: pages plus the job view's split across local ranks
 * (agent_model.h). */
#include "agent_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PENDING_EXPIRE_NS 10000000000ull
/* A communicator only partly on this node is split with the ranks that are
 * here once its instance is this old: a page that appears late (a rank that
 * started a moment after the others) still brings its instances in time. */
#define PENDING_SETTLE_NS 1000000000ull

void agent_size_label(int bucket, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bucket < 0 || bucket > 63) {
    snprintf(buf, len, "0B");
    return;
  }
  snprintf(buf, len, "%llu%s", 1ull << (bucket % 10), unit[bucket / 10]);
}

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The communicators of this node's pages and how many of their ranks are
 * here: computed once per refresh (an instance needs it, thousands a second). */
static void scan_comms(struct agent_model *m) {
  m->n_comms = 0;
  for (size_t i = 0; i < m->pages.n; i++) {
    const struct lens_live_page *p = m->pages.procs[i].page;
    for (uint32_t c = 0; c < p->n_comms; c++) {
      uint32_t k = 0;
      while (k < m->n_comms && m->comms[k].comm_id != p->comms[c].comm_id) k++;
      if (k == m->n_comms) {
        if (m->n_comms == AGENT_SPLITS) continue;
        m->comms[m->n_comms++] = (struct agent_comm){p->comms[c].comm_id, 0, 0};
      }
      m->comms[k].local++;
      m->comms[k].nranks = p->comms[c].nranks;
    }
  }
}

static int local_ranks(const struct agent_model *m, uint64_t comm_id, int *nranks) {
  for (uint32_t k = 0; k < m->n_comms; k++)
    if (m->comms[k].comm_id == comm_id) {
      *nranks = m->comms[k].nranks;
      return m->comms[k].local;
    }
  return 0;
}

static struct agent_split *split_of(struct agent_model *m, uint64_t comm_id, const char *func, const char *name) {
  /* page arrays may lack their terminator: bounded by their size, and a
   * 24-byte name matches the 23 bytes kept of it */
  size_t fn = strnlen(func, LENS_LIVE_FUNC);
  if (fn > sizeof m->splits[0].func - 1) fn = sizeof m->splits[0].func - 1;
  for (uint32_t i = 0; i < m->n_splits; i++)
    if (m->splits[i].comm_id == comm_id && strlen(m->splits[i].func) == fn && !memcmp(m->splits[i].func, func, fn))
      return &m->splits[i];
  if (m->n_splits == AGENT_SPLITS) return NULL;
  struct agent_split *s = &m->splits[m->n_splits++];
  memset(s, 0, sizeof *s);
  s->comm_id = comm_id;
  snprintf(s->func, sizeof s->func, "%.*s", (int)fn, func);
  snprintf(s->comm_name, sizeof s->comm_name, "%.*s", (int)strnlen(name, sizeof s->comm_name), name);
  s->last_rank = -1;
  return s;
}

static struct agent_rank *rank_of(struct agent_model *m, uint64_t comm_id, int32_t rank, uint32_t pid) {
  for (uint32_t i = 0; i < m->n_ranks; i++)
    if (m->ranks[i].comm_id == comm_id && m->ranks[i].rank == rank) return &m->ranks[i];
  if (m->n_ranks == AGENT_RANKS) return NULL;
  struct agent_rank *r = &m->ranks[m->n_ranks++];
  memset(r, 0, sizeof *r);
  r->comm_id = comm_id;
  r->rank = rank;
  r->pid = pid;
  return r;
}

/* nccl-tests' bus bandwidth factor and size (docs/job.md). */
static double busbw_gbs(const char *func, uint64_t bytes, int n, uint64_t exec_ns) {
  if (!exec_ns || n < 1) return 0;
  double f = 1, size = (double)bytes;
  if (!strcmp(func, "AllReduce"))
    f = 2.0 * (n - 1) / n;
  else if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter")) {
    f = (double)(n - 1) / n;
    size *= n;
  } else if (!strcmp(func, "AllToAll") || !strcmp(func, "AlltoAll"))
    f = (double)(n - 1) / n;
  return size * f / (double)exec_ns; /* bytes per ns = GB/s */
}

/* ---- pending instances: an open-addressing table keyed by (comm, split, seq) ---- */
#define PENDING_MASK (AGENT_PENDING - 1u)

static uint32_t pending_hash(uint64_t comm_id, uint16_t split, uint64_t seq) {
  uint64_t h = (comm_id ^ (seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)split << 48)) * 0xFF51AFD7ED558CCDull;
  return (uint32_t)(h >> 40) & PENDING_MASK;
}

/* Removes slot i, shifting later entries of its probe run back (no tombstones). */
static void pending_remove(struct agent_model *m, uint32_t i) {
  m->pending[i].first_real_ns = 0;
  m->n_pending--;
  for (uint32_t j = (i + 1) & PENDING_MASK; m->pending[j].first_real_ns; j = (j + 1) & PENDING_MASK) {
    uint32_t home = pending_hash(m->pending[j].comm_id, m->pending[j].split, m->pending[j].seq);
    /* j's entry may move to the hole i when its home is not in (i, j] (cyclically) */
    if (((j - home) & PENDING_MASK) >= ((j - i) & PENDING_MASK)) {
      m->pending[i] = m->pending[j];
      m->pending[j].first_real_ns = 0;
      i = j;
    }
  }
}

static void complete(struct agent_model *m, struct agent_pending *q) {
  struct agent_split *s = &m->splits[q->split];
  uint64_t exec = UINT64_MAX;
  int last = 0;
  for (int i = 0; i < q->n; i++)
    if (q->span[i] < exec) {
      exec = q->span[i];
      last = i;
    }
  s->instances++;
  s->exec.count++;
  s->exec.sum_ns += exec;
  s->exec.bucket[lens_live_time_bucket(exec)]++;
  s->last_rank = q->rank[last];
  s->last_busbw_gbs = busbw_gbs(s->func, q->bytes, s->nranks, exec);
  for (int i = 0; i < q->n; i++) {
    struct agent_rank *r = rank_of(m, q->comm_id, q->rank[i], q->pid[i]);
    if (!r) continue;
    r->wait_ns += q->span[i] - exec;
    r->exec_ns += exec;
    if (i == last) r->last_count++;
  }
  pending_remove(m, (uint32_t)(q - m->pending));
}

/* Returns 1 when the instance must be read again at a later refresh (the
 * page is new and its communicator's other local pages may not exist yet). */
static int add_instance(struct agent_model *m, uint32_t pid, const struct lens_live_page *p,
                        const struct lens_live_instance *in, uint64_t now, uint64_t page_seen_ns) {
  if (in->series >= p->n_series || in->comm >= p->n_comms || in->gpu_stop_ns <= in->gpu_start_ns) return 0;
  int nranks = 0, local = local_ranks(m, in->comm_id, &nranks);
  if (local < 2) {
    /* One rank here: no split to make on this node, unless the other ranks'
     * pages have not appeared yet (processes start seconds apart on a
     * loaded node). For a page's first second, wait for them rather than
     * drop its instances uncounted. */
    return nranks >= 2 && (now <= page_seen_ns || now - page_seen_ns < PENDING_SETTLE_NS);
  }
  if (local > 8) local = 8;
  const struct lens_live_series *se = &p->series[in->series];
  struct agent_split *s = split_of(m, in->comm_id, se->func, p->comms[in->comm].name);
  if (!s) { /* AGENT_SPLITS (communicator, function) pairs already: counted, not split */
    m->full++;
    return 0;
  }
  s->nranks = nranks;
  s->local_ranks = local;
  uint16_t si = (uint16_t)(s - m->splits);
  struct agent_pending *q = NULL;
  uint32_t i = pending_hash(in->comm_id, si, in->seq);
  for (; m->pending[i].first_real_ns; i = (i + 1) & PENDING_MASK)
    if (m->pending[i].comm_id == in->comm_id && m->pending[i].split == si && m->pending[i].seq == in->seq) {
      q = &m->pending[i];
      break;
    }
  if (!q) {
    if (m->n_pending >= AGENT_PENDING * 3 / 4) { /* keep probe runs short */
      m->full++;
      return 0;
    }
    q = &m->pending[i];
    m->n_pending++;
    memset(q, 0, sizeof *q);
    q->comm_id = in->comm_id;
    q->seq = in->seq;
    q->split = si;
    q->first_real_ns = now;
    q->bytes = in->bytes;
  }
  for (int i = 0; i < q->n; i++)
    if (q->rank[i] == in->rank) return 0; /* seen (a page read twice) */
  if (q->n < 8) {
    q->rank[q->n] = in->rank;
    q->pid[q->n] = pid;
    q->span[q->n] = in->gpu_stop_ns - in->gpu_start_ns;
    q->n++;
  }
  /* every rank of the communicator is here: nothing else can come */
  if (q->n >= nranks || q->n >= 8) complete(m, q);
  return 0;
}

/* A page met for the first time: what its ring still holds is read; what
 * left it before the agent came is not "missed" by the agent. */
static uint64_t backlog_start(const struct lens_live_page *p) {
  return p->recent_total > LENS_LIVE_RECENT ? p->recent_total - LENS_LIVE_RECENT : 0;
}

/* now: the refresh's clock reading, the one add_instance compares seen_real_ns
 * with (a later reading made a new page's age negative, wrapped to 584 years,
 * and its first instances were dropped before the other pages came). */
static struct agent_cursor *cursor_of(struct agent_model *m, const struct lens_live_page *p, uint64_t now) {
  for (uint32_t i = 0; i < m->n_cursors; i++)
    if (m->cursors[i].pid == p->pid) {
      if (m->cursors[i].start_real_ns != p->start_real_ns) { /* a new session (or pid reuse) */
        m->cursors[i].start_real_ns = p->start_real_ns;
        m->cursors[i].consumed = backlog_start(p);
        m->cursors[i].seen_real_ns = now;
      }
      return &m->cursors[i];
    }
  if (m->n_cursors == AGENT_CURSORS) return NULL;
  struct agent_cursor *c = &m->cursors[m->n_cursors++];
  *c = (struct agent_cursor){p->pid, p->start_real_ns, backlog_start(p), 0, now};
  return c;
}

int agent_model_refresh(struct agent_model *m, const char *dir, unsigned keep_s) {
  if (live_read_dir(dir, keep_s, &m->pages) != 0) return -1;
  m->refreshes++;
  uint64_t now = real_ns();
  agent_sched_refresh(m, dir, keep_s);
  scan_comms(m);
  for (size_t i = 0; i < m->pages.n; i++) {
    const struct lens_live_page *p = m->pages.procs[i].page;
    struct agent_cursor *c = cursor_of(m, p, now);
    if (!c) continue;
    uint64_t from = c->consumed;
    if (p->recent_total - from > LENS_LIVE_RECENT) {
      c->missed += p->recent_total - LENS_LIVE_RECENT - from; /* wrapped before we read: counted, not hidden */
      from = p->recent_total - LENS_LIVE_RECENT;
    }
    uint64_t k = from;
    for (; k < p->recent_total; k++)
      if (add_instance(m, p->pid, p, &p->recent[k % LENS_LIVE_RECENT], now, c->seen_real_ns)) break;
    c->consumed = k;
  }
  for (uint32_t i = 0; i < AGENT_PENDING;) {
    struct agent_pending *q = &m->pending[i];
    int nr = 0;
    if (q->first_real_ns && now - q->first_real_ns > PENDING_SETTLE_NS &&
        q->n >= local_ranks(m, q->comm_id, &nr) && q->n >= 2) {
      complete(m, q); /* a later entry may have moved into i: look at it again */
    } else if (q->first_real_ns && now - q->first_real_ns > PENDING_EXPIRE_NS) {
      m->expired++;
      pending_remove(m, i);
    } else
      i++;
  }
  return 0;
}

void agent_model_free(struct agent_model *m) {
  live_set_free(&m->pages);
  free(m->sched);
  m->sched = NULL;
  m->n_sched = 0;
}
