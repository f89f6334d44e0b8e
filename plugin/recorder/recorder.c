/* The flight recorder's store (recorder.h): two FIFO lists of copied
 * chunks, numbered in store order so a dump interleaves them as written. */
#include "recorder.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nccl-lens/trace_format.h"

struct rchunk {
  struct rchunk *next;
  uint64_t order;
  uint32_t len, session;
  uint16_t type;
  uint8_t payload[];
};

struct rlist {
  struct rchunk *head, *tail;
};

static int g_on;
static uint64_t g_bound, g_order;
static struct rlist g_meta, g_data; /* kept / evictable */
static struct lens_rec_stats g_st;

#define RCHUNK_OVERHEAD (sizeof(struct rchunk) + 16) /* the allocator's own bytes, roughly */

void lens_rec_configure(int on, uint64_t bytes) {
  g_on = on;
  g_bound = bytes;
  g_st.bound = bytes;
}

int lens_rec_on(void) { return g_on; }

static int kept_type(uint16_t type) {
  return type == LENS_CHUNK_SESSION || type == LENS_CHUNK_COMM || type == LENS_CHUNK_COMM_FINI ||
         type == LENS_CHUNK_THREAD || type == LENS_CHUNK_STRINGS;
}

static uint64_t cost(const struct rchunk *c) { return c->len + RCHUNK_OVERHEAD; }

static void evict_one(void) {
  struct rchunk *c = g_data.head;
  g_data.head = c->next;
  if (!g_data.head) g_data.tail = NULL;
  g_st.bytes -= cost(c);
  g_st.evicted_chunks++;
  if ((c->type == LENS_CHUNK_EVENTS || c->type == LENS_CHUNK_EVENTS_PACKED) && c->len >= sizeof(struct lens_events_hdr)) {
    struct lens_events_hdr eh;
    memcpy(&eh, c->payload, sizeof eh);
    g_st.evicted_event_records += eh.count;
  }
  free(c);
}

int lens_rec_store(uint16_t type, uint32_t session, const struct iovec *parts, int n) {
  uint32_t len = 0;
  for (int i = 0; i < n; i++) len += (uint32_t)parts[i].iov_len;
  int keep = kept_type(type);
  uint64_t need = len + RCHUNK_OVERHEAD;
  if (!keep && need > g_bound / 2) { /* never let one chunk empty the store */
    g_st.refused++;
    return -1;
  }
  while (!keep && g_data.head && g_st.bytes + need > g_bound) evict_one();
  struct rchunk *c = malloc(sizeof *c + len);
  if (!c) {
    g_st.refused++;
    return -1;
  }
  c->next = NULL;
  c->order = g_order++;
  c->len = len;
  c->session = session;
  c->type = type;
  uint32_t off = 0;
  for (int i = 0; i < n; i++) {
    memcpy(c->payload + off, parts[i].iov_base, parts[i].iov_len);
    off += (uint32_t)parts[i].iov_len;
  }
  struct rlist *l = keep ? &g_meta : &g_data;
  if (l->tail) l->tail->next = c;
  else l->head = c;
  l->tail = c;
  g_st.bytes += cost(c);
  if (g_st.bytes > g_st.peak_bytes) g_st.peak_bytes = g_st.bytes;
  g_st.chunks++;
  return 0;
}

void lens_rec_foreach(void (*fn)(void *ctx, uint16_t type, uint32_t session, const void *payload, uint32_t len),
                      void *ctx) {
  const struct rchunk *a = g_meta.head, *b = g_data.head;
  while (a || b) {
    const struct rchunk **p = !b || (a && a->order < b->order) ? &a : &b;
    fn(ctx, (*p)->type, (*p)->session, (*p)->payload, (*p)->len);
    *p = (*p)->next;
  }
}

static void free_list(struct rlist *l) {
  while (l->head) {
    struct rchunk *c = l->head;
    l->head = c->next;
    free(c);
  }
  l->tail = NULL;
}

void lens_rec_clear(void) {
  free_list(&g_meta);
  free_list(&g_data);
  g_st.bytes = 0;
}

void lens_rec_stats(struct lens_rec_stats *s) { *s = g_st; }
