/* See timeline_memo.h. The entries are this machine's and this binary's
 * (the key holds the program's identity), so numbers are stored as they lie
 * in memory; every count and index is still checked before use. */
#include "export/timeline_memo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "lens_bytes.h"

#define MAIN_MAGIC "LTMEMO1"
#define SLAB_MAGIC "LTSLAB1"
#define SLAB_ROWS 16384u   /* rows a slab at least: 768 KiB before zstd */
#define MAX_SLABS 128u     /* slabs grow past SLAB_ROWS to stay about under this: a job of 128 host groups keeps
                            * about 257 entries (with its GPU memos) of the cache's 1,024 */
#define MAX_SLAB_ROWS (1u << 22) /* what a slab read may hold (192 MiB of rows): a bigger one is not stored */

struct head {
  char magic[8];
  uint64_t n_inputs, n_procs, n_groups, n_comms, a_procs, n_hosts, n_insts, n_slabs, strings_len;
  int64_t ref, time_base_realtime, sync_dropped, oneway_dropped;
  uint64_t ref_utc_bound_ns, end_spread_ns, sync_instances, rejected_points, oneway_pairs;
};

struct inst_rec {
  uint64_t comm_id;
  int64_t seq;
  uint64_t bytes, exec_ns, rows;
  int32_t last_rank, nranks, ranks_seen, cause;
  uint32_t func; /* offset in the strings, UINT32_MAX none */
  uint32_t reserved;
};

struct row_rec {
  int32_t rank, proc;
  uint64_t kstart, kstop, wait, a, b;
};

struct slab_head {
  char magic[8];
  uint64_t slab, rows;
};

/* ---- writing ---- */

static int slab_key(const struct lens_cache_key *k, size_t s, struct lens_cache_key *out) {
  char part[32];
  snprintf(part, sizeof part, "slab %zu", s);
  return lens_cache_key_part(k, part, out);
}

/* The slab's rows, zstd-compressed, under its own key. */
static int save_slab(const struct lens_cache_key *k, size_t s, const struct lens_job *j,
                     const struct lens_job_row_time *rt, const struct lens_timeline_slab *sl) {
  struct lens_bytes b = {0};
  struct slab_head h = {.slab = s, .rows = sl->rows};
  memcpy(h.magic, SLAB_MAGIC, 8);
  lens_bytes_put(&b, &h, sizeof h);
  for (uint64_t i = sl->inst0; i < sl->inst1; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    for (size_t r = 0; r < in->n_ranks; r++) {
      const struct lens_job_rank *x = &j->ranks[in->first_rank + r];
      const struct lens_job_row_time *t = &rt[in->first_rank + r];
      struct row_rec rec = {x->rank, x->proc, x->kstart_mono_ns, x->kstop_mono_ns, x->wait_ns, t->a, t->b};
      lens_bytes_put(&b, &rec, sizeof rec);
    }
  }
  int rc = -1;
  size_t bound = ZSTD_compressBound(b.n);
  void *z = b.oom ? NULL : malloc(bound);
  if (z) {
    size_t zn = ZSTD_compress(z, bound, b.p, b.n, 1);
    struct lens_cache_key sk;
    if (!ZSTD_isError(zn) && zn <= LENS_CACHE_MAX_ENTRY && slab_key(k, s, &sk) == 0) {
      rc = lens_cache_put(&sk, z, zn);
      lens_cache_key_free(&sk);
    }
  }
  free(z);
  free(b.p);
  return rc;
}

int lens_timeline_memo_save(const struct lens_cache_key *k, size_t n_inputs, const long *group_of_input,
                            const struct lens_model *skel, const struct lens_model_base *bases, size_t n_groups,
                            const uint64_t *min_start, const struct lens_align *a, const struct lens_job *j,
                            const struct lens_job_row_time *rt, const uint8_t *plugin) {
  size_t np = skel->n_procs;
  if (!k->bytes || a->n_procs != np) return -1;
  for (size_t h = 0; h < a->n_hosts; h++) { /* the names point into the evidence: stored by its process */
    const struct lens_align_host *x = &a->hosts[h];
    if (x->first_proc < 0 || (size_t)x->first_proc >= a->n_procs || x->host != a->procs[x->first_proc].host ||
        x->boot_id != a->procs[x->first_proc].boot_id)
      return -1;
  }
  /* Slabs: runs of instances in the job view's order, about the same rows each. */
  size_t per = SLAB_ROWS;
  while (j->n_ranks / per >= MAX_SLABS) per *= 2;
  if (per > MAX_SLAB_ROWS) return -1;
  struct lens_timeline_slab *slabs = calloc(j->n_insts + 1, sizeof *slabs);
  struct lens_bytes strs = {0};
  if (!slabs) return -1;
  size_t n_slabs = 0;
  for (size_t i = 0; i < j->n_insts;) {
    struct lens_timeline_slab *sl = &slabs[n_slabs++];
    *sl = (struct lens_timeline_slab){i, i, 0, INT64_MAX, INT64_MIN};
    while (i < j->n_insts && (sl->rows == 0 || sl->rows + j->insts[i].n_ranks <= per)) {
      const struct lens_job_inst *in = &j->insts[i];
      for (size_t r = 0; r < in->n_ranks; r++) {
        const struct lens_job_rank *x = &j->ranks[in->first_rank + r];
        const struct lens_job_row_time *t = &rt[in->first_rank + r];
        int64_t s, e;
        if (t->a == UINT64_MAX || lens_align_to_job(a, x->proc, t->a, &s, NULL) ||
            lens_align_to_job(a, x->proc, t->b, &e, NULL))
          continue; /* never drawn: not in its group, or its host not placed */
        if (s < sl->lo) sl->lo = s;
        if (e > sl->hi) sl->hi = e;
      }
      sl->rows += in->n_ranks;
      sl->inst1 = ++i;
    }
    if (sl->rows > MAX_SLAB_ROWS) { /* one instance of more ranks than that */
      free(slabs);
      return -1;
    }
  }
  struct head h = {.n_inputs = n_inputs, .n_procs = np, .n_groups = n_groups, .n_comms = skel->n_comms,
                   .a_procs = a->n_procs, .n_hosts = a->n_hosts, .n_insts = j->n_insts, .n_slabs = n_slabs,
                   .ref = a->ref, .time_base_realtime = a->time_base_realtime, .sync_dropped = a->sync_dropped,
                   .oneway_dropped = a->oneway_dropped, .ref_utc_bound_ns = a->ref_utc_bound_ns,
                   .end_spread_ns = a->end_spread_ns, .sync_instances = a->sync_instances,
                   .rejected_points = a->rejected_points, .oneway_pairs = a->oneway_pairs};
  memcpy(h.magic, MAIN_MAGIC, 8);
  struct inst_rec *ir = malloc((j->n_insts + 1) * sizeof *ir);
  struct lens_bytes b = {0};
  int rc = -1;
  if (!ir) goto out;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    uint32_t off = UINT32_MAX;
    if (in->func) { /* consecutive instances mostly share their name: stored once in a row */
      size_t l = strlen(in->func) + 1;
      if (i && j->insts[i - 1].func && !strcmp(j->insts[i - 1].func, in->func)) {
        off = ir[i - 1].func;
      } else {
        if (strs.n + l > UINT32_MAX - 1) goto out;
        off = (uint32_t)strs.n;
        lens_bytes_put(&strs, in->func, l);
      }
    }
    ir[i] = (struct inst_rec){in->comm_id, in->seq, in->bytes, in->exec_ns, in->n_ranks, in->last_rank,
                              in->nranks, in->ranks_seen, in->cause, off, 0};
  }
  h.strings_len = strs.n;
  lens_bytes_put(&b, &h, sizeof h);
  for (size_t i = 0; i < n_inputs; i++) {
    int32_t g = (int32_t)group_of_input[i];
    lens_bytes_put(&b, &g, sizeof g);
  }
  for (size_t g = 0; g <= n_groups; g++) {
    uint64_t p = g < n_groups ? bases[g].proc : np;
    lens_bytes_put(&b, &p, sizeof p);
  }
  for (size_t p = 0; p < np; p++) lens_bytes_put(&b, &skel->procs[p].pid, sizeof(uint32_t));
  lens_bytes_put(&b, min_start, np * sizeof *min_start);
  lens_bytes_put(&b, plugin, np);
  for (size_t c = 0; c < skel->n_comms; c++) {
    struct lens_timeline_comm tc = {.proc = skel->comms[c].proc, .comm_id = skel->comms[c].comm_id};
    memcpy(tc.name, skel->comms[c].name, sizeof tc.name);
    tc.name[sizeof tc.name - 1] = 0;
    lens_bytes_put(&b, &tc, sizeof tc);
  }
  lens_bytes_put(&b, a->procs, a->n_procs * sizeof *a->procs);
  lens_bytes_put(&b, a->host_of_proc, a->n_procs * sizeof *a->host_of_proc);
  for (size_t x = 0; x < a->n_hosts; x++) {
    struct lens_align_host ah = a->hosts[x];
    ah.host = ah.boot_id = NULL;
    lens_bytes_put(&b, &ah, sizeof ah);
  }
  lens_bytes_put(&b, ir, j->n_insts * sizeof *ir);
  lens_bytes_put(&b, slabs, n_slabs * sizeof *slabs);
  lens_bytes_put(&b, strs.p, strs.n);
  if (b.oom || strs.oom || b.n > LENS_CACHE_MAX_ENTRY) goto out;
  /* The slabs first: a main entry is found only when its slabs were stored. */
  for (size_t s = 0; s < n_slabs; s++)
    if (save_slab(k, s, j, rt, &slabs[s])) goto out;
  rc = lens_cache_put(k, b.p, b.n);
out:
  free(ir);
  free(slabs);
  free(b.p);
  free(strs.p);
  return rc;
}

/* ---- reading ---- */

struct rbuf {
  const uint8_t *p;
  size_t n, at;
  int bad;
};

/* n items of size each, NULL (bad) past the end. */
static const void *take(struct rbuf *r, size_t n, size_t size) {
  if (r->bad || (size && n > (r->n - r->at) / size)) {
    r->bad = 1;
    return NULL;
  }
  const void *v = r->p + r->at;
  r->at += n * size;
  return v;
}

/* A copy of n items (malloc'd, at least one byte), NULL when bad. */
static void *take_copy(struct rbuf *r, size_t n, size_t size) {
  const void *v = take(r, n, size);
  size_t bytes = n * size; /* (take checked that it fits the entry) */
  void *c = v ? malloc(bytes + 1) : NULL;
  if (c) memcpy(c, v, bytes);
  if (v && !c) r->bad = 1;
  return c;
}

int lens_timeline_memo_load(const struct lens_cache_key *k, size_t n_inputs, struct lens_timeline_memo *mm) {
  size_t len = 0;
  uint8_t *data = lens_cache_get(k, &len);
  if (!data) {
    memset(mm, 0, sizeof *mm);
    mm->a.ref = -1;
    return -1;
  }
  int rc = lens_timeline_memo_parse(data, len, n_inputs, mm);
  free(data);
  return rc;
}

int lens_timeline_memo_parse(const uint8_t *data, size_t len, size_t n_inputs, struct lens_timeline_memo *mm) {
  memset(mm, 0, sizeof *mm);
  mm->a.ref = -1;
  struct rbuf r = {data, len, 0, 0};
  struct inst_rec *ir = NULL;
  const void *hp = take(&r, 1, sizeof(struct head));
  struct head h;
  if (!hp) goto bad;
  memcpy(&h, hp, sizeof h);
  /* Bounds before anything is allocated: each count is at most what the
   * entry's bytes can hold (take checks the rest). */
  if (memcmp(h.magic, MAIN_MAGIC, 8) || h.n_inputs != n_inputs || h.a_procs != h.n_procs || h.n_groups > len ||
      h.n_procs > len || h.n_hosts > h.n_procs || h.n_insts > len || h.n_slabs > h.n_insts + 1 ||
      h.strings_len > len)
    goto bad;
  mm->n_inputs = n_inputs, mm->n_procs = h.n_procs, mm->n_groups = h.n_groups, mm->n_comms = h.n_comms;
  mm->n_slabs = h.n_slabs;
  mm->group_of_input = take_copy(&r, n_inputs, sizeof *mm->group_of_input);
  mm->group_proc = take_copy(&r, h.n_groups + 1, sizeof *mm->group_proc);
  mm->pid = take_copy(&r, h.n_procs, sizeof *mm->pid);
  mm->min_start = take_copy(&r, h.n_procs, sizeof *mm->min_start);
  mm->plugin = take_copy(&r, h.n_procs, 1);
  mm->comms = take_copy(&r, h.n_comms, sizeof *mm->comms);
  struct lens_align *a = &mm->a;
  a->procs = take_copy(&r, h.n_procs, sizeof *a->procs);
  a->host_of_proc = take_copy(&r, h.n_procs, sizeof *a->host_of_proc);
  a->hosts = take_copy(&r, h.n_hosts, sizeof *a->hosts);
  ir = take_copy(&r, h.n_insts, sizeof *ir); /* (copied: the sections lie unaligned) */
  mm->slabs = take_copy(&r, h.n_slabs, sizeof *mm->slabs);
  const char *sp = take(&r, h.strings_len, 1);
  if (r.bad || r.at != len || !(mm->strings = malloc(h.strings_len + 1))) goto bad;
  memcpy(mm->strings, sp, h.strings_len);
  mm->strings[h.strings_len] = 0;
  if (h.strings_len && mm->strings[h.strings_len - 1]) goto bad;
  a->n_procs = h.n_procs, a->n_hosts = h.n_hosts;
  a->ref = (int)h.ref, a->time_base_realtime = (int)h.time_base_realtime, a->sync_dropped = (int)h.sync_dropped;
  a->oneway_dropped = (int)h.oneway_dropped, a->ref_utc_bound_ns = h.ref_utc_bound_ns;
  a->end_spread_ns = h.end_spread_ns, a->sync_instances = h.sync_instances, a->rejected_points = h.rejected_points;
  a->oneway_pairs = h.oneway_pairs;
  mm->have_a = 1;
  if (a->ref < -1 || a->ref >= (int)h.n_hosts) goto bad;
  for (size_t i = 0; i < n_inputs; i++)
    if (mm->group_of_input[i] < -1 || mm->group_of_input[i] >= (int32_t)h.n_groups) goto bad;
  for (size_t g = 0; g <= h.n_groups; g++)
    if (mm->group_proc[g] > h.n_procs || (g && mm->group_proc[g] < mm->group_proc[g - 1])) goto bad;
  for (size_t p = 0; p < h.n_procs; p++) {
    a->procs[p].host[sizeof a->procs[p].host - 1] = 0;
    a->procs[p].boot_id[sizeof a->procs[p].boot_id - 1] = 0;
    if (a->host_of_proc[p] < -1 || a->host_of_proc[p] >= (int32_t)h.n_hosts) goto bad;
  }
  for (size_t x = 0; x < h.n_hosts; x++) {
    struct lens_align_host *ah = &a->hosts[x];
    if (ah->first_proc < 0 || (size_t)ah->first_proc >= h.n_procs) goto bad;
    ah->host = a->procs[ah->first_proc].host;
    ah->boot_id = a->procs[ah->first_proc].boot_id;
  }
  for (size_t c = 0; c < h.n_comms; c++) {
    mm->comms[c].name[sizeof mm->comms[c].name - 1] = 0;
    if (mm->comms[c].proc < -1 || mm->comms[c].proc >= (int32_t)h.n_procs) goto bad;
  }
  /* The instances (no rows yet), their slabs contiguous over them. */
  mm->j.insts = calloc(h.n_insts + 1, sizeof *mm->j.insts);
  mm->inst_rows = malloc((h.n_insts + 1) * sizeof *mm->inst_rows);
  if (!mm->j.insts || !mm->inst_rows) goto bad;
  mm->j.n_insts = h.n_insts;
  for (size_t i = 0; i < h.n_insts; i++) {
    struct lens_job_inst *in = &mm->j.insts[i];
    if (ir[i].func != UINT32_MAX && ir[i].func >= h.strings_len) goto bad;
    in->comm_id = ir[i].comm_id, in->seq = ir[i].seq, in->bytes = ir[i].bytes, in->exec_ns = ir[i].exec_ns;
    in->last_rank = ir[i].last_rank, in->nranks = ir[i].nranks, in->ranks_seen = ir[i].ranks_seen;
    in->cause = ir[i].cause;
    in->func = ir[i].func == UINT32_MAX ? NULL : mm->strings + ir[i].func;
    mm->inst_rows[i] = ir[i].rows;
  }
  uint64_t at = 0;
  for (size_t s = 0; s < h.n_slabs; s++) {
    const struct lens_timeline_slab *sl = &mm->slabs[s];
    uint64_t rows = 0;
    if (sl->inst0 != at || sl->inst1 < sl->inst0 || sl->inst1 > h.n_insts || sl->rows > MAX_SLAB_ROWS) goto bad;
    for (uint64_t i = sl->inst0; i < sl->inst1; i++)
      rows += mm->inst_rows[i] > MAX_SLAB_ROWS ? MAX_SLAB_ROWS + 1ull : mm->inst_rows[i];
    if (rows != sl->rows) goto bad;
    at = sl->inst1;
  }
  if (at != h.n_insts) goto bad;
  free(ir);
  return 0;
bad:
  free(ir);
  lens_timeline_memo_free(mm);
  memset(mm, 0, sizeof *mm);
  mm->a.ref = -1;
  return -1;
}

/* Slab s's entry (zstd) to its rows, its slab_head checked: a malloc'd
 * array, NULL when it is not slab s of want_rows rows. */
static struct row_rec *slab_rows(const void *z, size_t zlen, size_t s, uint64_t want_rows) {
  struct row_rec *rows = NULL;
  unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
  size_t need = sizeof(struct slab_head) + (size_t)want_rows * sizeof(struct row_rec);
  uint8_t *raw = NULL;
  if (size == need && want_rows <= MAX_SLAB_ROWS && (raw = malloc(need))) {
    size_t got = ZSTD_decompress(raw, need, z, zlen);
    struct slab_head h;
    memcpy(&h, raw, sizeof h);
    if (!ZSTD_isError(got) && got == need && !memcmp(h.magic, SLAB_MAGIC, 8) && h.slab == s && h.rows == want_rows &&
        (rows = malloc(want_rows ? want_rows * sizeof *rows : 1)) && want_rows)
      memcpy(rows, raw + sizeof h, want_rows * sizeof *rows);
  }
  free(raw);
  return rows;
}

/* Slab s read from the cache into rows: NULL on a miss. */
static struct row_rec *read_slab(const struct lens_cache_key *k, size_t s, uint64_t want_rows) {
  struct lens_cache_key sk;
  if (slab_key(k, s, &sk)) return NULL;
  size_t zlen = 0;
  void *z = lens_cache_get(&sk, &zlen);
  lens_cache_key_free(&sk);
  struct row_rec *rows = z ? slab_rows(z, zlen, s, want_rows) : NULL;
  free(z);
  return rows;
}

int lens_timeline_memo_slab_check(const void *z, size_t zlen, uint64_t slab, uint64_t rows, size_t n_procs) {
  if (rows > MAX_SLAB_ROWS) return -1;
  struct row_rec *r = slab_rows(z, zlen, (size_t)slab, rows);
  int rc = r ? 0 : -1;
  for (uint64_t i = 0; r && i < rows; i++)
    if (r[i].proc < -1 || r[i].proc >= (int64_t)n_procs) rc = -1;
  free(r);
  return rc;
}

int lens_timeline_memo_rows(const struct lens_cache_key *k, struct lens_timeline_memo *mm, int64_t lo, int64_t hi) {
  uint64_t total = 0;
  for (size_t s = 0; s < mm->n_slabs; s++)
    if (mm->slabs[s].lo <= hi && mm->slabs[s].hi >= lo) total += mm->slabs[s].rows;
  free(mm->j.ranks);
  free(mm->row_times);
  mm->j.ranks = calloc(total + 1, sizeof *mm->j.ranks);
  mm->row_times = malloc((total + 1) * sizeof *mm->row_times);
  if (!mm->j.ranks || !mm->row_times) return -1;
  size_t at = 0;
  for (size_t s = 0; s < mm->n_slabs; s++) {
    const struct lens_timeline_slab *sl = &mm->slabs[s];
    int in_window = sl->lo <= hi && sl->hi >= lo;
    struct row_rec *rows = in_window ? read_slab(k, s, sl->rows) : NULL;
    if (in_window && !rows) return -1;
    size_t x = 0;
    for (uint64_t i = sl->inst0; i < sl->inst1; i++) {
      struct lens_job_inst *in = &mm->j.insts[i];
      in->first_rank = at, in->n_ranks = in_window ? mm->inst_rows[i] : 0;
      for (size_t r = 0; in_window && r < mm->inst_rows[i]; r++, x++, at++) {
        const struct row_rec *rr = &rows[x];
        if (rr->proc < -1 || rr->proc >= (int32_t)mm->n_procs) {
          free(rows);
          return -1;
        }
        mm->j.ranks[at] = (struct lens_job_rank){.rank = rr->rank, .proc = rr->proc, .event = -1,
                                                 .kstart_mono_ns = rr->kstart, .kstop_mono_ns = rr->kstop,
                                                 .wait_ns = rr->wait};
        mm->row_times[at] = (struct lens_job_row_time){rr->a, rr->b};
      }
    }
    free(rows);
  }
  mm->j.n_ranks = at;
  return 0;
}

void lens_timeline_memo_free(struct lens_timeline_memo *mm) {
  free(mm->group_of_input);
  free(mm->group_proc);
  free(mm->pid);
  free(mm->min_start);
  free(mm->plugin);
  free(mm->comms);
  free(mm->a.procs);
  free(mm->a.host_of_proc);
  free(mm->a.hosts);
  free(mm->j.insts);
  free(mm->j.ranks);
  free(mm->row_times);
  free(mm->slabs);
  free(mm->inst_rows);
  free(mm->strings);
  memset(mm, 0, sizeof *mm);
}
