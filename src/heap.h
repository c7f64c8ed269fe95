/* The thread heap's fast paths: no lock, no atomic read-modify-write.
 * malloc: one load of the class's current page, pop its free list, set the
 * slot's bit.  free: find the page by masking, check the slot boundary and
 * the bit, push.  Everything else is a call into heap.c. */
#ifndef VIGIL_HEAP_H
#define VIGIL_HEAP_H

#include "internal.h"

/* A page's allocation bits are written by the heap that owns it (or under
 * the arena lock), and read by other threads' frees (heap.c): single-copy
 * atomic stores, which are plain moves on every target. */
static ALWAYS_INLINE void bits_store(uint64_t *w, uint64_t v) { __atomic_store_n(w, v, __ATOMIC_RELAXED); }
static ALWAYS_INLINE uint64_t bits_load(const uint64_t *w) { return __atomic_load_n(w, __ATOMIC_RELAXED); }

/* The mark of a remote free: from the moment a thread frees a block it does
 * not own until the owner takes the block back, the block's first word holds
 * this tag, which the owner's free, realloc and malloc_usable_size check.
 * So a double free across threads is found at the second call, wherever it
 * is made.  The tag is odd, so no encoded link equals it; a live block holds
 * it only if its user wrote a value that depends on vg_secret. */
#define VG_REMOTE_TAG ((uintptr_t)0x5a17)
static ALWAYS_INLINE uintptr_t remote_tag(const struct block *b) { return encode((void *)VG_REMOTE_TAG, b); }
static ALWAYS_INLINE bool remote_freed(const struct block *b) { return b->next == remote_tag(b); }

static ALWAYS_INLINE void *heap_pop(struct page *pg, struct block *b) {
  /* The head must be a free slot of this page: a forged or corrupted link
   * fails one of these. */
  uint32_t idx = slot_index(pg, b);
  if (unlikely(idx == UINT32_MAX || (pg->bits[idx / 64] & slot_bit(idx)))) vg_fatal(V_CORRUPT_FREELIST, b);
  bits_store(&pg->bits[idx / 64], pg->bits[idx / 64] | slot_bit(idx));
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

/* Free of a validated slot `idx` of a page this heap owns, once it is known
 * not to carry the remote tag (heap_free_local, or the drain). */
static ALWAYS_INLINE void heap_free_slot(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  uint64_t *w = &pg->bits[idx / 64];
  if (unlikely(!(*w & slot_bit(idx)))) vg_fatal(V_DOUBLE_FREE, b);
  bits_store(w, *w & ~slot_bit(idx));
  struct block *head = pg->free;
  b->next = encode(head, b);
  pg->free = b;
  uint32_t used = load_relaxed(&pg->used) - 1;
  store_relaxed(&pg->used, used);
  if (unlikely(used == 0 || pg->in_full)) vg_heap_page_refill(h, pg);
}

static ALWAYS_INLINE void heap_free_local(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  if (unlikely(remote_freed(b))) vg_fatal(V_DOUBLE_FREE, b); /* another thread freed it */
  heap_free_slot(h, pg, b, idx);
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
  else vg_heap_free_remote(pg, p, idx);
}

#endif
