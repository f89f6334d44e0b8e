/* Open addressing on the pointer value; a few dozen distinct strings in
 * practice. When the table is full a string is re-sent with a new id each
 * time (correct, just larger). */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#define TAB 4096
#define PENDING_CAP (64 * 1024)

static struct {
  uint64_t ptr;
  uint32_t id;
} g_tab[TAB];
static uint32_t g_next_id = 1;
static uint32_t g_used;
static uint8_t g_pending[PENDING_CAP];
static uint32_t g_pending_len;

void lens_strtab_reset(void) {
  memset(g_tab, 0, sizeof g_tab);
  g_used = 0;
  g_pending_len = 0;
}

static uint32_t add_text(uint64_t ptr) {
  const char *s = (const char *)(uintptr_t)ptr;
  uint16_t len = (uint16_t)strnlen(s, LENS_STR_MAX);
  if (g_pending_len + 6 + len > PENDING_CAP) return 0; /* caller flushes first; see lens_strtab_room */
  uint32_t id = g_next_id++;
  memcpy(g_pending + g_pending_len, &id, 4);
  memcpy(g_pending + g_pending_len + 4, &len, 2);
  memcpy(g_pending + g_pending_len + 6, s, len);
  g_pending_len += 6 + len;
  return id;
}

uint32_t lens_strtab_intern(uint64_t ptr) {
  if (!ptr) return 0;
  uint64_t h = (ptr * 0x9E3779B97F4A7C15ull) >> 52; /* 12 bits */
  for (uint32_t i = 0; i < TAB; i++) {
    uint32_t k = (uint32_t)((h + i) & (TAB - 1));
    if (g_tab[k].ptr == ptr) return g_tab[k].id;
    if (g_tab[k].ptr == 0) {
      if (g_used >= TAB / 2) break; /* keep probes short */
      uint32_t id = add_text(ptr);
      if (!id) return 0;
      g_tab[k].ptr = ptr;
      g_tab[k].id = id;
      g_used++;
      return id;
    }
  }
  return add_text(ptr);
}

const void *lens_strtab_pending(uint32_t *len) {
  *len = g_pending_len;
  return g_pending_len ? g_pending : NULL;
}

void lens_strtab_clear_pending(void) { g_pending_len = 0; }

int lens_strtab_room(void) { return g_pending_len + 6 + LENS_STR_MAX * 4 <= PENDING_CAP; }
