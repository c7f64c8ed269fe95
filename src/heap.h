/* The thread heap's fast paths: no lock, no atomic read-modify-write.
 * malloc: one load of the class's current page, pop its free list, set the
 * slot's bit.  free: find the page by masking, check the slot boundary and
 * the bit, push.  Everything else is a call into heap.c. */
#ifndef VIGIL_HEAP_H
#define VIGIL_HEAP_H

#include "internal.h"

static ALWAYS_INLINE void *heap_pop(struct page *pg, struct block *b) {
  /* The head must be a free slot of this page: a forged or corrupted link
   * fails one of these. */
  uint32_t idx = slot_index(pg, b);
  if (unlikely(idx == UINT32_MAX || (pg->bits[idx / 64] & slot_bit(idx)))) vg_fatal(V_CORRUPT_FREELIST, b);
  pg->bits[idx / 64] |= slot_bit(idx);
  pg->free = decode(b->next, b);
  store_relaxed(&pg->used, load_relaxed(&pg->used) + 1);
  return b;
}

static ALWAYS_INLINE void *heap_alloc(struct heap *h, unsigned cls) {
  struct page *pg = h->cur[cls];
  struct block *b = pg->free;
  if (unlikely(b == NULL)) return vg_heap_alloc_slow(h, cls);
  return heap_pop(pg, b);
}

/* Free of a validated slot `idx` of a page this heap owns. */
static ALWAYS_INLINE void heap_free_local(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  uint64_t *w = &pg->bits[idx / 64];
  if (unlikely(!(*w & slot_bit(idx)))) vg_fatal(V_DOUBLE_FREE, b);
  *w &= ~slot_bit(idx);
  struct block *head = pg->free;
  b->next = encode(head, b);
  pg->free = b;
  uint32_t used = load_relaxed(&pg->used) - 1;
  store_relaxed(&pg->used, used);
  if (unlikely(used == 0 || pg->in_full)) vg_heap_page_refill(h, pg);
}

/* The page run holding p, or NULL when p is in no live segment. */
static ALWAYS_INLINE struct page *page_of(const void *p) {
  struct segment *s = segment_of(p);
  if (unlikely(s == NULL)) return NULL;
  struct page *pg = &s->pages[((uintptr_t)p - segment_base(s)) >> VG_PAGE_SHIFT];
  if (pg->kind == PK_TAIL) pg = &s->pages[pg->head];
  return pg;
}

/* Free a block of a small page: locally if this thread owns the page,
 * otherwise through the owner's remote list. */
static ALWAYS_INLINE void small_free(struct page *pg, void *p, enum violation bad) {
  uint32_t idx = slot_index(pg, p);
  if (unlikely(idx == UINT32_MAX)) vg_fatal(bad, p);
  struct heap *h = vg_tl_heap;
  if (likely(h != NULL && load_relaxed(&pg->owner) == h)) heap_free_local(h, pg, p, idx);
  else vg_heap_free_remote(pg, p);
}

#endif
