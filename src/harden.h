/* The hardening levels' inline parts (harden.c has the rest, and the
 * description of each level): a small block's canary at harden >= 1. */
#ifndef VIGIL_HARDEN_H
#define VIGIL_HARDEN_H

#include "heap.h"

static ALWAYS_INLINE uint64_t canary_key(const void *p) {
  uint64_t k = ((uint64_t)vg_secret ^ (uint64_t)(uintptr_t)p) * 0x9E3779B97F4A7C15ull;
  return k ^ (k >> 29);
}
/* The canary as a word whose bytes, in memory order, are: a key byte with
 * the top bit set (never zero), a zero, then key bytes. */
static ALWAYS_INLINE uint64_t canary_word(uint64_t k) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return (k | 0x80) & ~(uint64_t)0xff00;
#else
  return (k | ((uint64_t)0x80 << 56)) & ~((uint64_t)0xff << 48);
#endif
}
static ALWAYS_INLINE size_t canary_len(size_t n, size_t bsize) {
  size_t room = bsize - 2 - n;
  return room < 8 ? room : 8;
}
static ALWAYS_INLINE uint64_t low_bytes(unsigned k) { return ((uint64_t)1 << (8 * k)) - 1; } /* 0 < k < 8 */

/* A canary shorter than 8 bytes (len, 2..7) ends where the slot's last two
 * bytes begin: it is read and written as the last len bytes of the word
 * that ends there, whose first 8 - len bytes are the block's own. */
static ALWAYS_INLINE uint64_t short_canary(uint64_t c, unsigned len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return c & low_bytes(len); /* c's first len bytes, as the word's last len */
#else
  return c >> (8 * (8 - len));
#endif
}
static ALWAYS_INLINE uint64_t short_part(uint64_t w, unsigned len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return w >> (8 * (8 - len));
#else
  return w & low_bytes(len);
#endif
}
static ALWAYS_INLINE uint64_t short_merge(uint64_t w, uint64_t part, unsigned len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return (w & low_bytes(8 - len)) | (part << (8 * (8 - len)));
#else
  return (w & ~low_bytes(len)) | part;
#endif
}

static ALWAYS_INLINE void canary_set(void *p, size_t n, size_t bsize) {
  uint8_t *u = p;
  uint64_t k = canary_key(p), c = canary_word(k);
  size_t len = canary_len(n, bsize);
  if (likely(len == 8)) {
    memcpy(u + n, &c, 8); /* one store */
  } else {
    uint64_t w;
    memcpy(&w, u + bsize - 10, 8);
    w = short_merge(w, short_canary(c, (unsigned)len), (unsigned)len);
    memcpy(u + bsize - 10, &w, 8);
  }
  uint16_t t = (uint16_t)(n ^ (k >> 48));
  memcpy(u + bsize - 2, &t, 2);
}

/* n, or SIZE_MAX when the canary or the keyed n is broken. */
static ALWAYS_INLINE size_t canary_check(const void *p, size_t bsize) {
  const uint8_t *u = p;
  uint64_t k = canary_key(p), c = canary_word(k);
  uint16_t t;
  memcpy(&t, u + bsize - 2, 2);
  size_t n = (uint16_t)(t ^ (k >> 48));
  if (n + VG_CANARY_ROOM > bsize) return SIZE_MAX;
  size_t len = canary_len(n, bsize);
  uint64_t w;
  if (likely(len == 8)) {
    memcpy(&w, u + n, 8);
    return w == c ? n : SIZE_MAX;
  }
  memcpy(&w, u + bsize - 10, 8);
  return short_part(w, (unsigned)len) == short_canary(c, (unsigned)len) ? n : SIZE_MAX;
}

/* ---- harden = 1: the thread cache as a FIFO that holds its newest back ----
 * A freed block of a thread-cache class joins the cache's tail (tagged, as
 * in heap.h); malloc takes the head only while more than VG_QFIFO_CANARY
 * blocks are held, so a block freed into the cache waits behind that many.
 * When the cache is full, the freed block goes to its page instead, where
 * malloc looks only once the cache is down to VG_QFIFO_CANARY: it waits
 * behind more.  The quarantine of harden.c, at no cost beyond the
 * cache's own. */
static ALWAYS_INLINE void tcq_free(struct heap *h, struct page *pg, struct block *b) {
  unsigned cls = pg->cls, n = h->tc_n[cls];
  if (unlikely(n == h->tc_cap[cls])) {
    free_to_page(h, pg, b, slot_index(pg, b));
    return;
  }
  blk_store(&b->next, remote_tag(b));
  *tc_row(h, cls, n) = b;
  h->tc_n[cls] = (uint8_t)(n + 1);
}

/* malloc of class cls at harden = 1. */
static ALWAYS_INLINE void *tcq_alloc(struct heap *h, unsigned cls) {
  unsigned n = h->tc_n[cls];
  if (n > VG_QFIFO_CANARY) {
    struct block *b = *tc_row(h, cls, 0);
    h->tc_head[cls] = (uint8_t)((h->tc_head[cls] + 1u) & h->tc_mask);
    h->tc_n[cls] = (uint8_t)(n - 1);
    return tc_take(b);
  }
  struct page *pg = h->cur[cls];
  struct block *b = pg->free;
  if (unlikely(b == NULL)) return vg_heap_alloc_slow(h, cls);
  return heap_pop(pg, b);
}

/* Any small block at harden >= 1: the FIFO cache at 1, else heap.h's. */
static ALWAYS_INLINE void *harden_heap_alloc(struct heap *h, unsigned cls) {
  return harden_level() == HARDEN_CANARY && cls < VG_TC_CLASSES ? tcq_alloc(h, cls) : heap_alloc(h, cls);
}

#endif
