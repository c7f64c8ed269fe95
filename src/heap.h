/* The thread heap's fast paths: no lock, no atomic read-modify-write.
 * malloc: pop the class's thread cache, or else the current page's free
 * list and set the slot's bit.  free: find the page by masking, check the
 * slot boundary, the tag and the bit, hold the block back in place of the
 * one held before, which goes on the thread cache, or else on the page's
 * free list.  Everything else is a call into heap.c. */
#ifndef VIGIL_HEAP_H
#define VIGIL_HEAP_H

#include "internal.h"

/* A page's allocation bits are written by the heap that owns it (or under
 * the arena lock), and read by other threads' frees (heap.c): single-copy
 * atomic stores, which are plain moves on every target. */
static ALWAYS_INLINE void bits_store(uint64_t *w, uint64_t v) { __atomic_store_n(w, v, __ATOMIC_RELAXED); }
static ALWAYS_INLINE uint64_t bits_load(const uint64_t *w) { return __atomic_load_n(w, __ATOMIC_RELAXED); }

/* The mark of a freed block on its way back: from the moment a thread puts a
 * block in its thread cache, or frees a block it does not own, until the
 * block is handed out again or its owner takes it back, the block's first
 * word holds this tag, which every free, realloc and malloc_usable_size check.
 * So a double free across threads is found at the second call, wherever it
 * is made.  The tag is odd, so no encoded link equals it; a live block holds
 * it only if its user wrote a value that depends on vg_secret. */
#define VG_REMOTE_TAG ((uintptr_t)0x5a17)
static ALWAYS_INLINE uintptr_t remote_tag(const struct block *b) { return encode((void *)VG_REMOTE_TAG, b); }
static ALWAYS_INLINE bool remote_freed(const struct block *b) { return blk_load(&b->next) == remote_tag(b); }

/* The descriptor of the VG_PAGE holding p (maybe a run's tail), or NULL
 * when p is in no live segment. */
static ALWAYS_INLINE struct page *page_at(const void *p) {
  struct segment *s = segment_of(p);
  if (unlikely(s == NULL)) return NULL;
  return &s->pages[((uintptr_t)p - segment_base(s)) >> VG_PAGE_SHIFT];
}

/* The page run holding p, or NULL when p is in no live segment. */
static ALWAYS_INLINE struct page *page_of(const void *p) {
  struct page *pg = page_at(p);
  if (pg != NULL && pg->kind == PK_TAIL) pg = &segment_of_page(pg)->pages[pg->head];
  return pg;
}

/* The thread cache: the first place a free puts a block of up to 1 KiB, and
 * the first place malloc looks, whichever heap owns the block.  A thread that
 * frees another thread's block reuses it while it is hot, instead of sending
 * it home through a remote list (glibc's tcache does the same; without it a
 * ring of threads freeing each other's blocks ran at 0.93 of glibc).
 * Its entries are in the heap (tc_slot), not in the blocks, so a write after
 * free cannot redirect a malloc: each entry is a block a free checked.
 * A cached block, like a held one (small_free), keeps its allocation bit and
 * carries the remote tag, so a second free, realloc or malloc_usable_size of
 * it is a double free wherever it is made; the tag is checked again when the
 * block leaves the cache, so a write after free over it is reported then. */
static ALWAYS_INLINE struct block *tc_take(struct block *b) {
  if (unlikely(!remote_freed(b))) vg_fatal(V_CORRUPT_FREELIST, b);
  blk_store(&b->next, 0);
  return b;
}
/* The i-th oldest cached block of class cls (at harden = 0 tc_head is 0 and
 * tc_mask VG_TC_ROWS - 1). */
static ALWAYS_INLINE struct block **tc_row(struct heap *h, unsigned cls, unsigned i) {
  return &h->tc_slot[(h->tc_head[cls] + i) & h->tc_mask][cls];
}

static ALWAYS_INLINE void *heap_pop(struct page *pg, struct block *b) {
  /* The head must be a free slot of this page: a forged or corrupted link
   * fails one of these. */
  uint32_t idx = slot_index(pg, b);
  if (unlikely(idx == UINT32_MAX || (pg->bits[idx / 64] & slot_bit(idx)))) vg_fatal(V_CORRUPT_FREELIST, b);
  bits_store(&pg->bits[idx / 64], pg->bits[idx / 64] | slot_bit(idx));
  pg->free = decode(blk_load(&b->next), b);
  store_relaxed(&pg->used, load_relaxed(&pg->used) + 1);
  return b;
}

/* Free of a validated slot `idx` of a page this heap owns, once it is known
 * not to carry the remote tag (heap_free_local, or the drain). */
static ALWAYS_INLINE void heap_free_slot(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  uint64_t *w = &pg->bits[idx / 64];
  if (unlikely(!(*w & slot_bit(idx)))) vg_fatal(slot_clear_why(pg, idx), b);
  bits_store(w, *w & ~slot_bit(idx));
  struct block *head = pg->free;
  blk_store(&b->next, encode(head, b));
  pg->free = b;
  uint32_t used = load_relaxed(&pg->used) - 1;
  store_relaxed(&pg->used, used);
  if (unlikely(used == 0 || pg->in_full)) vg_heap_page_refill(h, pg);
}

static ALWAYS_INLINE void heap_free_local(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  if (unlikely(remote_freed(b))) vg_fatal(V_DOUBLE_FREE, b); /* another thread freed it */
  heap_free_slot(h, pg, b, idx);
}

/* malloc of class cls: the thread cache, else the current page's free list.
 * The block of the class this thread freed last is in neither (small_free).
 * heap_alloc_fast returns NULL where heap_alloc calls into heap.c, so it
 * calls nothing but the fatal report (vigil_malloc's fast path). */
static ALWAYS_INLINE void *heap_alloc_fast(struct heap *h, unsigned cls) {
  unsigned n = h->tc_n[cls];
  if (n != 0) {
    h->tc_n[cls] = (uint8_t)(n - 1);
    return tc_take(h->tc_slot[n - 1][cls]);
  }
  struct page *pg = h->cur[cls];
  struct block *b = pg->free;
  if (unlikely(b == NULL)) return NULL;
  return heap_pop(pg, b);
}
static ALWAYS_INLINE void *heap_alloc(struct heap *h, unsigned cls) {
  void *p = heap_alloc_fast(h, cls);
  return likely(p != NULL) ? p : vg_heap_alloc_slow(h, cls);
}

/* A validated block, not tagged, back to its page: locally if this thread
 * owns the page, else through the owner's remote list. */
static ALWAYS_INLINE void free_to_page(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  if (likely(h != NULL && load_relaxed(&pg->owner) == h)) heap_free_local(h, pg, b, idx);
  else vg_heap_free_remote(pg, b, idx);
}

/* A block small_free held, its tag cleared, back to its page. */
static ALWAYS_INLINE void held_to_page(struct heap *h, struct block *b) {
  blk_store(&b->next, 0);
  struct page *pg = page_of(b);
  free_to_page(h, pg, b, slot_index(pg, b));
}

/* Free a block of a small page.  It is held out of reach, tagged, as the
 * class's last freed block (tc_held), so the next malloc does not hand it
 * out: a free, a malloc of the same size and a second free of the pointer
 * would free the new owner's block; this way the second free is a double
 * free.  The block it replaces goes into the thread cache, or to its page
 * when the class has no cache.  When the cache is full the block goes to
 * its page at once: malloc takes the cache's blocks first.  A page's block
 * goes back locally if this thread owns the page, else through the owner's
 * remote list.
 * small_hold is the first case: slot idx of pg, class cls, when the cache
 * has room (n blocks of cap, read once) or the class has none.  With room
 * known it makes no call but the fatal one (vigil_free's fast path). */
static ALWAYS_INLINE void small_hold(struct heap *h, struct page *pg, struct block *b, uint32_t idx, unsigned cls,
                                     unsigned n, unsigned cap) {
  /* Freed already: by some thread (the tag), or into its page (the bit). */
  if (unlikely(remote_freed(b) || !(bits_load(&pg->bits[idx / 64]) & slot_bit(idx))))
    vg_fatal(remote_freed(b) ? V_DOUBLE_FREE : slot_clear_why(pg, idx), b);
  blk_store(&b->next, remote_tag(b));
  struct block *old = h->tc_held[cls];
  h->tc_held[cls] = b;
  if (old == NULL) return;
  /* A write after free over the held block's tag is seen here, or as a
   * double free if that block is the one freed again. */
  if (unlikely(old == b || !remote_freed(old))) vg_fatal(old == b ? V_DOUBLE_FREE : V_CORRUPT_FREELIST, old);
  if (likely(n < cap)) {
    h->tc_slot[n][cls] = old;
    h->tc_n[cls] = (uint8_t)(n + 1);
  } else {
    held_to_page(h, old);
  }
}

/* Free slot idx of the small page pg; h is the thread's heap, maybe NULL. */
static ALWAYS_INLINE void small_free_at(struct heap *h, struct page *pg, struct block *b, uint32_t idx) {
  if (likely(h != NULL)) {
    unsigned cls = pg->cls, n = h->tc_n[cls], cap = h->tc_cap[cls];
    if (likely(n < cap) || cap == 0) {
      small_hold(h, pg, b, idx, cls, n, cap);
      return;
    }
  }
  free_to_page(h, pg, b, idx);
}
static ALWAYS_INLINE void small_free(struct page *pg, void *p, enum violation bad) {
  uint32_t idx = slot_index(pg, p);
  if (unlikely(idx == UINT32_MAX)) vg_fatal(bad, p);
  small_free_at(vg_tl_heap, pg, p, idx);
}

#endif
