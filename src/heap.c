/* Thread heaps: the slow paths behind heap.h, remote frees and abandonment.
 *
 * A free of a block of up to 1 KiB goes to the thread cache first (heap.h),
 * whoever owns the block; only what the cache has no room for takes the
 * paths below, and the cache empties into them at thread exit and trim.
 *
 * Remote frees (seed 002): a thread freeing a block it does not own tags it
 * (remote_tag, heap.h) and puts it in a batch of up to VG_RB_MAX blocks of
 * one owner, kept in its own heap.  The batch goes on the owner heap's
 * `remote` stack as one chain with one release CAS when it is full, when a
 * block of another owner is freed, and when the thread takes its slow malloc
 * path, trims or exits (a CAS per block was a quarter of
 * the time of a ring of threads freeing each other's blocks).  A thread
 * without a heap pushes each block at once.  The owner takes the whole stack
 * with one acquire exchange.  There is no pop of single entries, so there is
 * no ABA problem and no CAS on the owner's side.  The tag is written at the
 * free, so the batch delays only the reuse of a block, never the detection
 * of its double free.
 *
 * Lifetimes (seed 000): heap structs are never unmapped, only reused, so a
 * stale owner pointer always points at a heap.  On thread exit the heap first
 * gives its pages to the arena (owner = NULL, under the arena lock), then
 * closes its remote stack by exchanging in VG_REMOTE_CLOSED.  A freer that
 * sees CLOSED frees under the arena lock instead; one that pushed before the
 * close is drained by the exiting thread.  Entries pushed to a heap that has
 * since been reused are forwarded by its new owner. */
#include <errno.h>

#include "heap.h"

__thread struct heap *vg_tl_heap __attribute__((tls_model("initial-exec")));
__thread unsigned vg_tl_busy __attribute__((tls_model("initial-exec")));

static void list_remove(struct page **head, struct page *pg) {
  if (pg->prev) pg->prev->next = pg->next;
  else *head = pg->next;
  if (pg->next) pg->next->prev = pg->prev;
  pg->next = pg->prev = NULL;
}
static void list_push(struct page **head, struct page *pg) {
  pg->prev = NULL;
  pg->next = *head;
  if (*head) (*head)->prev = pg;
  *head = pg;
}

/* An empty page of h's that is not its class's current one goes back to
 * the arena. */
static void release_page(struct heap *h, struct page *pg) {
  list_remove(&h->avail[pg->cls], pg);
  struct segment *s = segment_of_page(pg);
  struct arena *a = s->arena;
  vg_lock(&a->lock);
  vg_arena_free_run(s, page_index(s, pg));
  vg_unlock(&a->lock);
}

/* Called by free when a local free left the page empty, or the page was on
 * the full list. */
void vg_heap_page_refill(struct heap *h, struct page *pg) {
  unsigned cls = pg->cls;
  if (pg->in_full) {
    list_remove(&h->full, pg);
    pg->in_full = 0;
    /* Behind the current page, so the current page stays hot. */
    struct page *cur = h->avail[cls];
    if (cur) {
      pg->prev = cur;
      pg->next = cur->next;
      if (cur->next) cur->next->prev = pg;
      cur->next = pg;
    } else {
      list_push(&h->avail[cls], pg);
      h->cur[cls] = pg;
    }
  }
  if (load_relaxed(&pg->used) == 0 && h->cur[cls] != pg) {
    /* Keep one empty page per class, so a working set that breathes does
     * not move pages to and from the arena on every swing. */
    struct page *sp = h->spare[cls];
    if (sp == NULL || sp == pg || load_relaxed(&sp->used) != 0) {
      h->spare[cls] = pg;
      return;
    }
    release_page(h, pg); /* another empty page */
  }
}

void vg_heap_release_spares(struct heap *h) {
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    struct page *sp = h->spare[c];
    h->spare[c] = NULL;
    if (sp != NULL && load_relaxed(&sp->used) == 0 && h->cur[c] != sp) release_page(h, sp);
  }
}

static NOINLINE void to_full(struct heap *h, struct page *pg) {
  list_remove(&h->avail[pg->cls], pg);
  pg->in_full = 1;
  list_push(&h->full, pg);
}

void *vg_heap_alloc_slow(struct heap *h, unsigned cls) {
  if (unlikely(load_relaxed(&vg_unusable))) {
    errno = ENOMEM;
    return NULL;
  }
  vg_heap_flush_remote(h);
  if (load_relaxed(&h->remote) != 0) {
    vg_heap_drain(h);
    struct page *cur = h->cur[cls];
    if (cur->free) return heap_pop(cur, cur->free);
  }
  /* The current page is always the head of the class list. */
  struct page *pg;
  while ((pg = h->avail[cls]) != NULL) {
    if (pg->free == NULL && pg->reserved < pg->capacity) vg_page_extend(pg);
    if (pg->free) {
      h->cur[cls] = pg;
      return heap_pop(pg, pg->free);
    }
    to_full(h, pg);
  }
  h->cur[cls] = &vg_empty_page;
  pg = vg_arena_page(h->arena, h, cls);
  if (pg == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  list_push(&h->avail[cls], pg);
  h->cur[cls] = pg;
  if (pg->free == NULL) vg_page_extend(pg);
  return heap_pop(pg, pg->free);
}

/* Push the chain first..last, linked through rnext, on o's remote stack;
 * false when o is closed. */
static bool remote_push(struct heap *o, struct block *first, struct block *last) {
  vg_ann_sync_word(&o->remote, sizeof o->remote);
  uintptr_t head = load_relaxed(&o->remote);
  while (head != VG_REMOTE_CLOSED) {
    blk_store(&last->rnext, encode((void *)head, last));
    vg_ann_release(&o->remote); /* after the last write the owner will see */
    if (atomic_compare_exchange_weak_explicit(&o->remote, &head, (uintptr_t)first, memory_order_release,
                                              memory_order_relaxed))
      return true;
  }
  return false;
}

/* One block, now: tagged on its owner's stack, or freed under the arena
 * lock when its page has no owner. */
void vg_heap_free_remote_now(struct page *pg, struct block *b) {
  struct heap *o = load_relaxed(&pg->owner);
  if (o != NULL) {
    blk_store(&b->next, remote_tag(b));
    if (remote_push(o, b, b)) return;
  }
  vg_arena_free_abandoned(pg, b);
}

void vg_heap_flush_remote(struct heap *h) {
  unsigned n = h->rb_n;
  if (n == 0) return;
  h->rb_n = 0;
  struct block **rb = h->rb;
  for (unsigned i = 0; i + 1 < n; i++) blk_store(&rb[i]->rnext, encode(rb[i + 1], rb[i]));
  if (remote_push(h->rb_owner, rb[0], rb[n - 1])) return;
  /* The owner exited: each block goes wherever its page is now. */
  for (unsigned i = 0; i < n; i++) vg_heap_free_remote_now(page_of(rb[i]), rb[i]);
}

/* A free of slot idx of a page this thread does not own.  Both checks are
 * exact: the tag means another free of it is on its way to the owner, and a
 * clear bit means the owner has it back already (the owner cleared the bit
 * before anything that let this thread see the free). */
void vg_heap_free_remote(struct page *pg, struct block *b, uint32_t idx) {
  if (unlikely(remote_freed(b) || !(bits_load(&pg->bits[idx / 64]) & slot_bit(idx))))
    vg_fatal(remote_freed(b) ? V_DOUBLE_FREE : slot_clear_why(pg, idx), b);
  struct heap *h = vg_tl_heap, *o = load_relaxed(&pg->owner);
  if (h == NULL || o == NULL || o == h) {
    vg_heap_free_remote_now(pg, b);
    return;
  }
  blk_store(&b->next, remote_tag(b));
  if (o != h->rb_owner) {
    vg_heap_flush_remote(h);
    h->rb_owner = o;
  }
  h->rb[h->rb_n++] = b;
  if (h->rb_n == VG_RB_MAX) vg_heap_flush_remote(h);
}

/* Each cached or held block goes back to its page: this heap's, or its
 * owner's through the remote batch.  At thread exit, and for malloc_trim. */
void vg_heap_tc_flush(struct heap *h) {
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    struct block *held = h->tc_held[c];
    h->tc_held[c] = NULL;
    if (held != NULL) held_to_page(h, held);
  }
  for (unsigned c = 0; c < VG_TC_CLASSES; c++) {
    for (unsigned i = 0; i < h->tc_n[c]; i++) {
      struct block *b = tc_take(*tc_row(h, c, i));
      struct page *pg = page_of(b);
      free_to_page(h, pg, b, slot_index(pg, b));
    }
    h->tc_n[c] = h->tc_head[c] = 0;
  }
}

/* Every entry is checked before its link is read: a slot of a small page,
 * carrying the tag.  A use-after-free write over a queued block fails this
 * with a report, instead of sending the drain through the user's data. */
static void drain_list(struct heap *h, uintptr_t list) {
  if (list != 0) vg_ann_acquire(&h->remote);
  while (list != 0) {
    struct block *b = (struct block *)list;
    struct page *pg = page_of(b);
    uint32_t idx = pg != NULL && pg->kind == PK_SMALL ? slot_index(pg, b) : UINT32_MAX;
    if (unlikely(idx == UINT32_MAX || !remote_freed(b))) vg_fatal(V_CORRUPT_REMOTE, b);
    list = (uintptr_t)decode(blk_load(&b->rnext), b);
    __builtin_prefetch((void *)list, 1); /* its words are read next, after b's free */
    if (load_relaxed(&pg->owner) == h) heap_free_slot(h, pg, b, idx);
    else vg_heap_free_remote_now(pg, b); /* its page changed hands: forward it */
  }
}

void vg_heap_drain(struct heap *h) {
  drain_list(h, atomic_exchange_explicit(&h->remote, 0, memory_order_acquire));
}

static void abandon_list(struct page *pg) {
  while (pg != NULL) {
    struct page *next = pg->next;
    pg->next = pg->prev = NULL;
    pg->in_full = 0;
    vg_arena_abandon_page(pg);
    pg = next;
  }
}

void vg_heap_abandon(struct heap *h) {
  vg_quarantine_flush(h);
  vg_heap_tc_flush(h);
  vg_heap_flush_remote(h);
  vg_span_cache_flush(h);
  vg_heap_drain(h);
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    abandon_list(h->avail[c]);
    h->avail[c] = NULL;
    h->spare[c] = NULL;
    h->cur[c] = &vg_empty_page;
  }
  abandon_list(h->full);
  h->full = NULL;
  /* Every page now has owner NULL (or a new owner): the blocks still on the
   * stack are freed through the arena. */
  if (vg_tl_heap == h) vg_tl_heap = NULL;
  drain_list(h, atomic_exchange_explicit(&h->remote, VG_REMOTE_CLOSED, memory_order_acq_rel));
  atomic_fetch_sub_explicit(&h->arena->threads, 1, memory_order_relaxed);
  vg_decommit_thread_exit(h->arena);
  vg_heap_pool_put(h);
}
