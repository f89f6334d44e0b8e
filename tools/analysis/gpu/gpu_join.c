/* Reading CUPTI records and joining them to the trace:
 *   ext id (CUSTOM2) -> correlation id (ext-corr record)
 *   correlation id   -> kernel record (CONCURRENT_KERNEL)
 *   ext id           =  KernelLaunch event id (the plugin pushes its own id)
 *   KernelLaunch     -> Coll/P2p (their launch_id) -> KernelCh (children).
 * Kernels replayed from a CUDA graph carry cuGraphLaunch's correlation id
 * instead; they are joined to the capture-time launches by graph node order
 * when the counts agree, else left to KernelCh alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_state.h"
#include "gpu_walk.h"

struct ext_rec { int32_t proc; uint32_t corr; uint64_t ext; };

struct collect {
  int32_t proc;
  struct lens_kernel *k; size_t nk, capk;
  struct ext_rec *x; size_t nx, capx;
  size_t api, oom;
};

static int grow(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 64;
  void *p = realloc(*v, c * elem);
  if (!p) return -1;
  *v = p;
  *cap = c;
  return 0;
}

static int visit(void *ctx, const CUpti_Activity *rec) {
  struct collect *c = ctx;
  if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    if (grow((void **)&c->k, &c->capk, c->nk, sizeof(*c->k))) return c->oom = 1;
    c->k[c->nk++] = (struct lens_kernel){
        .proc = c->proc, .start_mono_ns = k->start, .end_mono_ns = k->end, .correlation_id = k->correlationId,
        .device_id = k->deviceId, .context_id = k->contextId, .stream_id = k->streamId,
        .grid_x = (uint32_t)k->gridX, .graph_id = k->graphId, .graph_node_id = k->graphNodeId,
        .launch_event = -1, .name = NULL /* a pointer in the producing process: meaningless here */};
  } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
    const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;
    if (x->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) return 0; /* Kineto's, not ours */
    if (grow((void **)&c->x, &c->capx, c->nx, sizeof(*c->x))) return c->oom = 1;
    c->x[c->nx++] = (struct ext_rec){c->proc, x->correlationId, x->externalId};
  } else if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER || rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    c->api++;
  }
  return 0;
}

static int32_t find_launch(const struct lens_gpu_state *s, int32_t proc, uint64_t id) {
  long i = lens_gpu_index_find(&s->launches, proc, id);
  return i < 0 ? -1 : s->launches.v[i].val;
}

int32_t lens_gpu_next_op_of_launch(const struct lens_model *m, int32_t launch, int32_t after) {
  struct lens_gpu_state *s = lens_gpu_state(m, 0);
  if (!s || launch < 0) return -1;
  const struct lens_event *l = &m->events[launch];
  long i = lens_gpu_index_find(&s->ops, l->proc, l->id);
  if (i < 0) return -1;
  int past = after < 0;
  for (; (size_t)i < s->ops.n && s->ops.v[i].key == l->id && s->ops.v[i].proc == l->proc; i++) {
    if (past) return s->ops.v[i].val;
    if (s->ops.v[i].val == after) past = 1;
  }
  return -1;
}

static uint64_t op_launch_id(const struct lens_event *op) {
  if (op->type == LENS_T_COLL) return op->p.coll.launch_id;
  if (op->type == LENS_T_P2P) return op->p.p2p.launch_id;
  return 0;
}

int32_t lens_gpu_kernel_of_kch(const struct lens_model *m, const struct lens_event *e) {
  return lens_gpu_state_kernel_of_kch(m, lens_gpu_state(m, 0), e);
}

int32_t lens_gpu_state_kernel_of_kch(const struct lens_model *m, const struct lens_gpu_state *s,
                                     const struct lens_event *e) {
  if (!s || e->parent < 0) return -1;
  uint64_t lid = op_launch_id(&m->events[e->parent]);
  if (!lid) return -1;
  int32_t l = find_launch(s, e->proc, lid);
  return l < 0 ? -1 : m->events[l].acc.cupti_kernel;
}

static int cmp_ext(const void *pa, const void *pb) {
  const struct ext_rec *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  return (a->corr > b->corr) - (a->corr < b->corr);
}

static const struct ext_rec *find_ext(const struct collect *c, int32_t proc, uint32_t corr) {
  struct ext_rec key = {proc, corr, 0};
  return c->nx ? bsearch(&key, c->x, c->nx, sizeof(*c->x), cmp_ext) : NULL;
}

static int build_indices(struct lens_model *m, struct lens_gpu_state *s) {
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int rc = 0;
    if (e->type == LENS_T_KERNEL_LAUNCH) {
      rc = lens_gpu_index_add(&s->launches, e->proc, e->id, (int32_t)i);
      /* The pushed id is the launch id; a different pushed id is indexed too. */
      if (!rc && e->p.kernel_launch.ext_corr_id && e->p.kernel_launch.ext_corr_id != e->id)
        rc = lens_gpu_index_add(&s->launches, e->proc, e->p.kernel_launch.ext_corr_id, (int32_t)i);
    } else if (op_launch_id(e)) {
      rc = lens_gpu_index_add(&s->ops, e->proc, op_launch_id(e), (int32_t)i);
    }
    if (rc) return -1;
  }
  lens_gpu_index_sort(&s->launches);
  lens_gpu_index_sort(&s->ops);
  return 0;
}

static void walk_blob(struct lens_gpu_report *r, struct collect *c, const struct lens_cupti_blob *b) {
  char werr[256];
  size_t n = 0;
  c->proc = b->proc;
  size_t nk0 = c->nk, nx0 = c->nx, api0 = c->api;
  int rc = lens_gpu_walk(b->data, b->len, visit, c, &n, werr, sizeof(werr));
  r->blobs++;
  r->records += n;
  r->kernel_records += c->nk - nk0;
  r->ext_records += c->nx - nx0;
  r->api_records += c->api - api0;
  if (rc == LENS_GPU_WALK_CORRUPT) {
    r->blob_errors++;
    if (!r->cupti_note[0]) snprintf(r->cupti_note, sizeof(r->cupti_note), "%s", werr);
  }
}

/* Graph replays: the k-th distinct graph node (by first replay) of a process
 * is the k-th capture-time launch of that process, when the counts agree.
 * Sorting keeps it O(n log n) for long graph-heavy runs. */
static _Thread_local const struct lens_kernel *sort_kernels; /* per thread: job maps run in parallel */

static int cmp_node(const void *pa, const void *pb) { /* by proc, graph, node, start */
  const struct lens_kernel *a = &sort_kernels[*(const size_t *)pa], *b = &sort_kernels[*(const size_t *)pb];
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  if (a->graph_id != b->graph_id) return a->graph_id < b->graph_id ? -1 : 1;
  if (a->graph_node_id != b->graph_node_id) return a->graph_node_id < b->graph_node_id ? -1 : 1;
  return (a->start_mono_ns > b->start_mono_ns) - (a->start_mono_ns < b->start_mono_ns);
}

struct node { int32_t proc; uint64_t first_start; size_t from, to; /* range in the sorted kernel list */ };

static int cmp_first(const void *pa, const void *pb) {
  const struct node *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  return (a->first_start > b->first_start) - (a->first_start < b->first_start);
}

static void join_graph_nodes(struct lens_model *m, struct lens_gpu_report *r) {
  size_t n = 0;
  size_t *ix = malloc((m->n_kernels + 1) * sizeof(*ix));
  struct node *nodes = malloc((m->n_kernels + 1) * sizeof(*nodes));
  if (!ix || !nodes) goto out;
  for (size_t k = 0; k < m->n_kernels; k++)
    if (m->kernels[k].graph_id && m->kernels[k].proc >= 0) ix[n++] = k;
  sort_kernels = m->kernels; /* qsort has no context argument; single-threaded here */
  qsort(ix, n, sizeof(*ix), cmp_node);
  size_t nn = 0;
  for (size_t i = 0; i < n;) {
    const struct lens_kernel *a = &m->kernels[ix[i]];
    size_t j = i + 1;
    while (j < n && m->kernels[ix[j]].proc == a->proc && m->kernels[ix[j]].graph_id == a->graph_id &&
           m->kernels[ix[j]].graph_node_id == a->graph_node_id)
      j++;
    nodes[nn++] = (struct node){a->proc, a->start_mono_ns, i, j};
    i = j;
  }
  qsort(nodes, nn, sizeof(*nodes), cmp_first);
  for (size_t p0 = 0; p0 < nn;) {
    int32_t proc = nodes[p0].proc;
    size_t p1 = p0;
    while (p1 < nn && nodes[p1].proc == proc) p1++;
    /* Capture-time launches of this process, in order. */
    size_t n_cap = 0;
    for (size_t i = 0; i < m->n_events; i++) {
      const struct lens_event *e = &m->events[i];
      n_cap += e->proc == proc && e->type == LENS_T_KERNEL_LAUNCH && (e->flags & LENS_EVF_GRAPH) && e->acc.cupti_kernel < 0;
    }
    if (n_cap == p1 - p0) {
      size_t nd = p0;
      for (size_t i = 0; i < m->n_events && nd < p1; i++) {
        struct lens_event *l = &m->events[i];
        if (l->proc != proc || l->type != LENS_T_KERNEL_LAUNCH || !(l->flags & LENS_EVF_GRAPH) || l->acc.cupti_kernel >= 0)
          continue;
        size_t first = ix[nodes[nd].from];
        l->acc.cupti_kernel = (int32_t)first;
        l->acc.time_source = LENS_TS_CUPTI;
        l->acc.gpu_start_mono_ns = m->kernels[first].start_mono_ns;
        l->acc.gpu_stop_mono_ns = m->kernels[first].end_mono_ns;
        /* Every replay of that node belongs to the same capture-time launch. */
        for (size_t k = nodes[nd].from; k < nodes[nd].to; k++) {
          m->kernels[ix[k]].launch_event = (int32_t)i;
          r->kernel_flags[ix[k]] |= LENS_GPU_K_GRAPH_NODE_JOIN;
          r->kernels_graph_joined++;
        }
        nd++;
      }
    }
    p0 = p1;
  }
out:
  free(ix);
  free(nodes);
}

int lens_gpu_join(struct lens_model *m, struct lens_gpu_report *r, char *err, size_t err_len) {
  struct lens_gpu_state *s = lens_gpu_state(m, 1);
  if (!s || build_indices(m, s)) {
    snprintf(err, err_len, "out of memory indexing events");
    return -1;
  }
  r->graph_join = "none";
  char why[256];
  r->cupti_available = lens_gpu_walker_available(why, sizeof(why));
  const struct lens_cupti_blob *extra;
  size_t n_extra = lens_gpu_state_extra(s, &extra);
  if (!r->cupti_available) {
    if (m->n_cupti || n_extra) snprintf(r->cupti_note, sizeof(r->cupti_note), "%s", why);
    return 0;
  }
  struct collect c;
  memset(&c, 0, sizeof(c));
  for (size_t i = 0; i < m->n_cupti; i++) walk_blob(r, &c, &m->cupti[i]);
  for (size_t i = 0; i < n_extra; i++) walk_blob(r, &c, &extra[i]);
  if (c.oom) {
    free(c.k);
    free(c.x);
    snprintf(err, err_len, "out of memory reading CUPTI records");
    return -1;
  }
  if (c.nx) qsort(c.x, c.nx, sizeof(*c.x), cmp_ext);
  m->kernels = c.k;
  m->n_kernels = c.nk;
  r->kernel_flags = calloc(c.nk + 1, sizeof(uint32_t));
  if (!r->kernel_flags) {
    free(c.x);
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  /* Foreign ids: CUSTOM2 records naming no KernelLaunch of that process. */
  for (size_t i = 0; i < c.nx; i++)
    if (find_launch(s, c.x[i].proc, c.x[i].ext) < 0) r->foreign_ext_ids++;
  for (size_t k = 0; k < m->n_kernels; k++) {
    struct lens_kernel *kk = &m->kernels[k];
    if (!kk->start_mono_ns || !kk->end_mono_ns) r->kernel_flags[k] |= LENS_GPU_K_NO_TIMES;
    if (kk->graph_id) {
      r->kernel_flags[k] |= LENS_GPU_K_GRAPH;
      r->kernels_graph++;
    }
    const struct ext_rec *x = find_ext(&c, kk->proc, kk->correlation_id);
    if (!x) {
      if (!kk->graph_id) r->kernel_flags[k] |= LENS_GPU_K_NO_EXT_ID;
      continue;
    }
    kk->ext_id = x->ext;
    int32_t l = find_launch(s, kk->proc, x->ext);
    if (l < 0) {
      r->kernel_flags[k] |= LENS_GPU_K_FOREIGN_EXT_ID;
      continue;
    }
    if (kk->proc < 0) kk->proc = m->events[l].proc; /* a --cupti-buffer file: now we know whose */
    kk->launch_event = l;
    struct lens_event *le = &m->events[l];
    if (le->acc.cupti_kernel < 0) {
      le->acc.cupti_kernel = (int32_t)k;
      le->acc.time_source = LENS_TS_CUPTI;
      le->acc.gpu_start_mono_ns = kk->start_mono_ns;
      le->acc.gpu_stop_mono_ns = kk->end_mono_ns;
    }
    r->kernels_joined++;
  }
  if (r->kernels_graph) {
    join_graph_nodes(m, r);
    r->graph_join = r->kernels_graph_joined ? "graph node" : "KernelCh only";
  }
  /* Launches that pushed an id but got no kernel (not graph captures). */
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_LAUNCH || !e->p.kernel_launch.ext_corr_id) continue;
    r->launches_with_ext++;
    if (e->acc.cupti_kernel < 0 && !(e->flags & LENS_EVF_GRAPH) && (m->n_cupti || n_extra)) {
      e->acc.flags |= LENS_ACC_NO_KERNEL_RECORD;
      r->launches_no_kernel++;
    }
  }
  free(c.x);
  return 0;
}
