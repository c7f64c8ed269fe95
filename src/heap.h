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
 * A cached block, like a held one (small_free), keeps its allocation bit and
 * carries the remote tag, so a second free, realloc or malloc_usable_size of
 * it is a double free wherever it is made.  Its link is the second word,
 * encoded, and a pop checks the block as the drain checks a remote entry,
 * before it reads the link.
 * tc_entry gives b's page if b can be a cached block of class cls, else NULL. */
static ALWAYS_INLINE struct page *tc_entry(unsigned cls, const struct block *b) {
  struct page *pg = page_at(b); /* a run of these classes is one page long: no tail */
  bool ok = pg != NULL && pg->kind == PK_SMALL && pg->cls == cls && slot_index(pg, b) != UINT32_MAX && remote_freed(b);
  return ok ? pg : NULL;
}
static ALWAYS_INLINE struct page *tc_check(unsigned cls, const struct block *b) {
  struct page *pg = tc_entry(cls, b);
  if (unlikely(pg == NULL)) vg_fatal(V_CORRUPT_FREELIST, b);
  return pg;
}

static ALWAYS_INLINE void *tc_pop(struct heap *h, unsigned cls, struct block *b) {
  (void)tc_check(cls, b);
  h->tc[cls] = decode(blk_load(&b->rnext), b);
  h->tc_room[cls]++;
  blk_store(&b->next, 0);
  return b;
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
 * The block of the class this thread freed last is in neither (small_free). */
static ALWAYS_INLINE void *heap_alloc(struct heap *h, unsigned cls) {
  struct block *b = h->tc[cls];
  if (b != NULL) return tc_pop(h, cls, b);
  struct page *pg = h->cur[cls];
  b = pg->free;
  if (unlikely(b == NULL)) return vg_heap_alloc_slow(h, cls);
  return heap_pop(pg, b);
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
 * remote list. */
static ALWAYS_INLINE void small_free(struct page *pg, void *p, enum violation bad) {
  uint32_t idx = slot_index(pg, p);
  if (unlikely(idx == UINT32_MAX)) vg_fatal(bad, p);
  struct heap *h = vg_tl_heap;
  struct block *b = p;
  unsigned cls = pg->cls;
  if (likely(h != NULL) && (likely(h->tc_room[cls] != 0) || h->tc[cls] == NULL)) {
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
    if (likely(h->tc_room[cls] != 0)) {
      blk_store(&old->rnext, encode(h->tc[cls], old));
      h->tc[cls] = old;
      h->tc_room[cls]--;
    } else {
      held_to_page(h, old);
    }
    return;
  }
  free_to_page(h, pg, b, idx);
}

#endif
