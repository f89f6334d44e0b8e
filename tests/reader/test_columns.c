/* The bulk columnar reader (tools/reader/columns.h) against the general
 * model (lensread.h), event by event, on the traces the real plugin writes
 * for the replay's `all` scenario, in fixed (none), packed and zstd form,
 * and on lens-gen-job's synthetic job (zstd and packed; the columns decode
 * packed chunks themselves, the model unpacks them to fixed records):
 * - the same events per type, and every column event is the model's event
 *   of the same (process, session, id): type, thread slot and tid, start,
 *   stop or none, second stops, STATE record count, KernelCh/KernelPhase
 *   stop pTimer, communicator, Coll sequence number and function name;
 * - the same parent (the event the model links, by id), none where the
 *   model has none, and a PXN ProxyOp's foreign parent left unresolved;
 * - the same orphans and unreadable records;
 * - a trace cut inside a chunk reads up to the same chunk, with the same
 *   cut reported;
 * - a bit flipped in the payload, or in the header, of an EVENTS chunk in the
 *   middle of a trace costs that chunk only: both readers read every other
 *   chunk's events (the same as the trace with that chunk cut out) and
 *   report exactly its bytes and one chunk as damaged, and summary says so;
 * - a column set cleared (lens_cols_clear) and read again compares the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "reader/columns.h"
#include "reader/lensread.h"
#include "../lens_test_file.h"
#include "../lens_test_tmp.h"

static size_t list(const char *dir, char names[][600], size_t max) {
  char cmd[700], path[600];
  snprintf(cmd, sizeof cmd, "ls %s/*.lens", dir);
  FILE *ls = popen(cmd, "r");
  size_t n = 0;
  while (n < max && fgets(path, sizeof path, ls)) {
    path[strcspn(path, "\n")] = 0;
    snprintf(names[n++], 600, "%s", path);
  }
  pclose(ls);
  return n;
}

static int32_t proc_of(const struct lens_model *m, const char *path) {
  for (size_t p = 0; p < m->n_procs; p++)
    if (!strcmp(m->files[m->procs[p].file].path, path)) return (int32_t)p;
  return -1;
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* Every column event against the model; returns how many were compared. */
static size_t compare(const struct lens_model *m, const struct lens_cols *c) {
  size_t compared = 0;
  uint64_t model_by_type[LENS_T_COUNT] = {0};
  for (size_t i = 0; i < m->n_events; i++) model_by_type[m->events[i].type]++;
  for (unsigned t = 0; t < LENS_T_COUNT; t++) {
    const struct lens_cols_type *x = &c->t[t];
    if (x->n != model_by_type[t]) fail_msg("type %u: %zu column events, %llu model events", t, x->n,
                                           (unsigned long long)model_by_type[t]);
    for (size_t i = 0; i < x->n; i++) {
      const struct lens_cols_thread *th = &c->threads[x->thread[i]];
      int32_t p = proc_of(m, c->files[th->file].path);
      assert_true(p >= 0);
      int32_t ei = lens_model_find_in_session(m, p, th->session, x->id[i]);
      if (ei < 0) fail_msg("type %u event %zu (id %llx) not in the model", t, i, (unsigned long long)x->id[i]);
      const struct lens_event *e = &m->events[ei];
      assert_int_equal(e->type, t);
      assert_int_equal(m->threads[e->thread].slot, th->slot);
      if (th->tid) assert_int_equal(m->threads[e->thread].tid, th->tid);
      assert_int_equal(e->start_mono_ns, x->start[i]);
      if (x->flags[i] & LENS_COLF_STOPPED) {
        assert_false(e->flags & LENS_EVF_NO_STOP);
        assert_int_equal(e->stop_mono_ns, x->stop[i]);
      } else {
        assert_true(e->flags & LENS_EVF_NO_STOP);
      }
      assert_int_equal(!!(e->flags & LENS_EVF_DUP_STOP), !!(x->flags[i] & LENS_COLF_DUP_STOP));
      assert_int_equal(!!(e->flags & LENS_EVF_REMOTE), !!(x->flags[i] & LENS_COLF_REMOTE));
      uint64_t records = 0;
      for (uint32_t s = 0; s < e->n_states; s++) records += m->states[e->first_state + s].count;
      assert_int_equal(records, x->n_states[i]);
      if (t == LENS_T_KERNEL_CH) assert_int_equal(e->p.kernel_ch.stop_gpu_ns, x->stop_gpu[i]);
      if (t == LENS_T_KERNEL_PHASE) assert_int_equal(e->p.kernel_phase.stop_gpu_ns, x->stop_gpu[i]);
      /* Parents. */
      int64_t cp = x->parent[i];
      if (x->flags[i] & LENS_COLF_PARENT_REMOTE) {
        assert_int_equal(cp, LENS_COL_NONE);
        assert_true(e->parent < 0 || m->events[e->parent].proc != p);
      } else if (cp == LENS_COL_NONE) {
        assert_true(e->parent < 0);
        assert_int_equal(!!(e->flags & LENS_EVF_PARENT_MISSING), !!(x->flags[i] & LENS_COLF_PARENT_MISSING));
      } else {
        assert_true(e->parent >= 0);
        const struct lens_event *pe = &m->events[e->parent];
        assert_int_equal(pe->type, LENS_COL_REF_TYPE(cp));
        assert_int_equal(pe->id, c->t[LENS_COL_REF_TYPE(cp)].id[LENS_COL_REF_INDEX(cp)]);
        assert_int_equal(pe->proc, p);
      }
      /* Communicator from the START's own context (the model may inherit one more). */
      if (x->comm[i] >= 0) {
        assert_true(e->comm >= 0);
        assert_int_equal(m->comms[e->comm].comm_id, c->comms[x->comm[i]].comm_id);
      }
      if (t == LENS_T_COLL) {
        const struct lens_p_coll *pc = (const void *)(x->payload + i * x->payload_size);
        assert_int_equal(e->p.coll.seq, pc->seq);
        assert_true(same_str(e->p.coll.func, lens_cols_str(c, x->thread[i], pc->func)));
        assert_true(same_str(e->p.coll.algo, lens_cols_str(c, x->thread[i], pc->algo)));
      }
      compared++;
    }
  }
  uint64_t orphans = 0, bad = 0;
  for (size_t f = 0; f < c->n_files; f++) orphans += c->files[f].orphan_stops, bad += c->files[f].bad_records;
  assert_int_equal(orphans, m->orphan_stops);
  assert_int_equal(bad, m->bad_records);
  assert_int_equal(compared, m->n_events);
  return compared;
}

/* pxn: the traces have PXN proxy ops (the replay's), whose parents are in
 * another process. */
static void check_dir(const char *dir, int pxn) {
  char names[64][600];
  const char *paths[64];
  size_t n = list(dir, names, 64);
  assert_true(n >= 2);
  for (size_t i = 0; i < n; i++) paths[i] = names[i];
  char err[512];
  struct lens_model *m = lens_model_load(paths, n, err, sizeof err, NULL);
  if (!m) fail_msg("load: %s", err);
  struct lens_cols *c = lens_cols_new();
  assert_non_null(c);
  for (size_t i = 0; i < n; i++)
    if (lens_cols_read(c, paths[i], err, sizeof err)) fail_msg("columns: %s", err);
  assert_int_equal(c->n_files, m->n_files);
  size_t k = compare(m, c);
  assert_true(k > 1000);
  /* The run has PXN ops, parents resolved and missing, and stopped events. */
  size_t with_parent = 0;
  for (size_t i = 0; i < c->t[LENS_T_PROXY_STEP].n; i++) with_parent += c->t[LENS_T_PROXY_STEP].parent[i] >= 0;
  assert_true(with_parent > 0);
  size_t remote = 0, missing = 0, stopped = 0;
  for (unsigned t = 0; t < LENS_T_COUNT; t++)
    for (size_t i = 0; i < c->t[t].n; i++) {
      remote += !!(c->t[t].flags[i] & LENS_COLF_PARENT_REMOTE);
      missing += !!(c->t[t].flags[i] & LENS_COLF_PARENT_MISSING);
      stopped += !!(c->t[t].flags[i] & LENS_COLF_STOPPED);
    }
  print_message("%zu files, %zu events compared: %zu stopped, %zu ProxySteps with a parent, %zu PXN parents, "
                "%zu missing parents, %llu orphans\n",
                n, k, stopped, with_parent, remote, missing, (unsigned long long)m->orphan_stops);
  if (pxn) assert_true(remote > 0); /* the pxn part of the scenario */
  assert_true(c->t[LENS_T_KERNEL_CH].n > 0 && c->t[LENS_T_COLL].n > 0);
  /* A cleared set reads as a new one: the files again, in the opposite
   * order first (other thread and communicator indexes, strings), then
   * cleared once more and read in order, compare the same. */
  lens_cols_clear(c);
  assert_int_equal(lens_cols_events(c), 0);
  assert_int_equal(c->n_files, 0);
  for (size_t i = n; i-- > 0;)
    if (lens_cols_read(c, paths[i], err, sizeof err)) fail_msg("columns: %s", err);
  assert_int_equal(lens_cols_events(c), k);
  assert_int_equal(compare(m, c), k); /* files are matched by path */
  lens_cols_clear(c);
  for (size_t i = 0; i < n; i++)
    if (lens_cols_read(c, paths[i], err, sizeof err)) fail_msg("columns: %s", err);
  assert_int_equal(compare(m, c), k);
  lens_cols_free(c);
  lens_model_free(m);
}

static void run_replay(const char *dir, const char *mode) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "rm -rf %s/*; NCCL_LENS_COMPRESS=%s %s/bin/nccl-lens replay --scenario all --nodes 2 --iters 2 --out %s "
           "--quiet",
           dir, mode, LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
}

static void test_replay_fixed(void **state) {
  (void)state;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "cols-none");
  run_replay(dir, "none");
  check_dir(dir, 1);
  lens_test_rmtree(dir);
}

static void test_replay_zstd(void **state) {
  (void)state;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "cols-zstd");
  run_replay(dir, "zstd");
  check_dir(dir, 1);
  lens_test_rmtree(dir);
}

static void test_replay_packed(void **state) {
  (void)state;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "cols-packed");
  run_replay(dir, "packed");
  check_dir(dir, 1);
  lens_test_rmtree(dir);
}

/* The synthetic job's full 256 KiB chunks, zstd and packed: the same
 * events, each against the model, and the same count in both forms. */
static void test_gen_job(void **state) {
  (void)state;
  char dir[256], cmd[1024];
  lens_test_tmpdir(dir, sizeof dir, "cols-gen");
  size_t events[2];
  const char *modes[2] = {"zstd", "packed"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "rm -f %s/*.lens; %s/bin/lens-gen-job -o %s --ranks 4 --hosts 2 --events 200000 "
                              "--stragglers 2 --compress %s >/dev/null",
             dir, LENS_BUILD_DIR, dir, modes[i]);
    assert_int_equal(system(cmd), 0);
    char names[64][600], err[512];
    size_t n = list(dir, names, 64);
    assert_int_equal(n, 4);
    check_dir(dir, 0);
    struct lens_cols *c = lens_cols_new();
    for (size_t k = 0; k < n; k++)
      if (lens_cols_read(c, names[k], err, sizeof err)) fail_msg("columns: %s", err);
    events[i] = lens_cols_events(c);
    lens_cols_free(c);
  }
  assert_int_equal(events[0], events[1]);
  assert_true(events[0] > 150000);
  lens_test_rmtree(dir);
}

/* A trace cut inside a chunk: both readers stop at the same chunk and say so. */
static void test_cut(void **state) {
  (void)state;
  char dir[256], names[64][600], cut[700];
  lens_test_tmpdir(dir, sizeof dir, "cols-cut");
  run_replay(dir, "zstd");
  size_t n = list(dir, names, 64);
  assert_true(n >= 1);
  struct stat st;
  assert_int_equal(stat(names[0], &st), 0);
  snprintf(cut, sizeof cut, "%s/cut.trace", dir);
  char cmd[2000];
  snprintf(cmd, sizeof cmd, "head -c %lld %s > %s", (long long)(st.st_size * 2 / 3), names[0], cut);
  assert_int_equal(system(cmd), 0);
  const char *paths[1] = {cut};
  char err[512];
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fail_msg("load: %s", err);
  struct lens_cols *c = lens_cols_new();
  if (lens_cols_read(c, cut, err, sizeof err)) fail_msg("columns: %s", err);
  assert_non_null(m->files[0].truncation);
  assert_true(m->files[0].truncated_bytes > 0);
  assert_non_null(c->files[0].truncation);
  assert_string_equal(c->files[0].truncation, m->files[0].truncation);
  assert_int_equal(c->files[0].truncated_bytes, m->files[0].truncated_bytes);
  assert_int_equal(c->files[0].lost_chunks, m->files[0].lost_chunks);
  compare(m, c);
  lens_cols_free(c);
  lens_model_free(m);
  /* Not a trace: an error, as the general model says. */
  snprintf(cmd, sizeof cmd, "echo hello > %s", cut);
  assert_int_equal(system(cmd), 0);
  c = lens_cols_new();
  assert_int_equal(lens_cols_read(c, cut, err, sizeof err), -1);
  assert_non_null(strstr(err, "not a .lens trace"));
  lens_cols_free(c);
  lens_test_rmtree(dir);
}

static void spit_file(const char *path, const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(a, 1, na, f), na);
  if (nb) assert_int_equal(fwrite(b, 1, nb, f), nb);
  fclose(f);
}

static struct lens_model *load_one(const char *path) {
  const char *paths[1] = {path};
  char err[512];
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fail_msg("load %s: %s", path, err);
  return m;
}

/* Every event of a is in b (same process, session and id: a and b read one
 * trace each) with the same type, start and stop; with all, b holds no other. */
static void events_in(const struct lens_model *a, const struct lens_model *b, int all) {
  assert_int_equal(a->n_procs, b->n_procs);
  if (all) assert_int_equal(a->n_events, b->n_events);
  for (size_t i = 0; i < a->n_events; i++) {
    const struct lens_event *e = &a->events[i];
    int32_t p = e->proc;
    int32_t j = lens_model_find_in_session(b, p, e->session, e->id);
    if (j < 0) fail_msg("event %zu (id %llx) missing", i, (unsigned long long)e->id);
    assert_int_equal(b->events[j].type, e->type);
    assert_int_equal(b->events[j].start_mono_ns, e->start_mono_ns);
    if (all) assert_int_equal(b->events[j].stop_mono_ns, e->stop_mono_ns);
  }
}

/* One bit flipped in an EVENTS chunk in the middle of a trace: in its payload
 * (header valid: that chunk skipped) or in its header's length (resync on the
 * next header). Either way every other chunk is read. */
static void test_damaged(void **state) {
  (void)state;
  char dir[256], names[64][600], bad[700], ref[700], cmd[2000];
  lens_test_tmpdir(dir, sizeof dir, "cols-damaged");
  run_replay(dir, "zstd");
  size_t n = list(dir, names, 64);
  assert_true(n >= 1);
  size_t len;
  uint8_t *orig = (uint8_t *)lens_test_slurp(names[0], &len);
  assert_non_null(orig);
  /* The EVENTS chunks, and the one in the middle of them. */
  size_t offs[4096], nev = 0, off = sizeof(struct lens_file_hdr);
  while (off + sizeof(struct lens_chunk_hdr) <= len && nev < 4096) {
    struct lens_chunk_hdr h;
    memcpy(&h, orig + off, sizeof h);
    if (h.type == LENS_CHUNK_EVENTS || h.type == LENS_CHUNK_EVENTS_PACKED) offs[nev++] = off;
    off += sizeof h + h.payload_len + ((8 - (h.payload_len & 7)) & 7);
  }
  assert_int_equal(off, len);
  assert_true(nev >= 3);
  size_t at = offs[nev / 2];
  struct lens_chunk_hdr h;
  memcpy(&h, orig + at, sizeof h);
  size_t whole = sizeof h + h.payload_len + ((8 - (h.payload_len & 7)) & 7);
  /* The reference: the same trace with that chunk cut out. */
  snprintf(ref, sizeof ref, "%s/ref.trace", dir);
  snprintf(bad, sizeof bad, "%s/bad.trace", dir);
  spit_file(ref, orig, at, orig + at + whole, len - at - whole);
  struct lens_model *mo = load_one(names[0]), *mr = load_one(ref);
  assert_true(mr->n_events < mo->n_events); /* the chunk held events */
  events_in(mr, mo, 0);
  for (int where = 0; where < 2; where++) {
    uint8_t *b = malloc(len);
    memcpy(b, orig, len);
    if (where == 0) b[at + sizeof h + h.payload_len / 2] ^= 0x10; /* payload */
    else b[at + offsetof(struct lens_chunk_hdr, payload_len)] ^= 0x02; /* header: a wrong length */
    spit_file(bad, b, len, NULL, 0);
    free(b);
    struct lens_model *m = load_one(bad);
    const struct lens_file *f = &m->files[0];
    assert_null(f->truncation);
    assert_int_equal(f->truncated_bytes, 0);
    assert_int_equal(f->damaged_bytes, whole);
    assert_int_equal(f->damaged_chunks, 1);
    assert_int_equal(f->lost_chunks, mo->files[0].lost_chunks);
    assert_int_equal(f->clean_end, mo->files[0].clean_end);
    events_in(m, mr, 1); /* every event but the damaged chunk's */
    events_in(m, mo, 0);
    struct lens_cols *c = lens_cols_new();
    char err[512];
    if (lens_cols_read(c, bad, err, sizeof err)) fail_msg("columns: %s", err);
    assert_null(c->files[0].truncation);
    assert_int_equal(c->files[0].truncated_bytes, 0);
    assert_int_equal(c->files[0].damaged_bytes, whole);
    assert_int_equal(c->files[0].damaged_chunks, 1);
    assert_int_equal(c->files[0].lost_chunks, f->lost_chunks);
    compare(m, c);
    lens_cols_free(c);
    lens_model_free(m);
    /* summary says it: a warning line, and the figures in --json. */
    snprintf(cmd, sizeof cmd,
             "%s/bin/nccl-lens summary %s 2>&1 | grep -q 'damaged: .*1 chunks (%zu bytes)' && "
             "%s/bin/nccl-lens summary --json %s 2>/dev/null | grep -q '\"damaged_bytes\":%zu,\"damaged_chunks\":1'",
             LENS_BUILD_DIR, bad, whole, LENS_BUILD_DIR, bad, whole);
    if (system(cmd) != 0) fail_msg("summary does not report the damage (%s)", where ? "header" : "payload");
  }
  free(orig);
  lens_model_free(mo);
  lens_model_free(mr);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_fixed),
      cmocka_unit_test(test_replay_zstd),
      cmocka_unit_test(test_replay_packed),
      cmocka_unit_test(test_gen_job),
      cmocka_unit_test(test_cut),
      cmocka_unit_test(test_damaged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
