/* Thread heaps: the slow paths behind heap.h, remote frees and abandonment.
 *
 * Remote frees (seed 002): a thread freeing a block it does not own pushes it
 * on the owner heap's `remote` stack with a release CAS.  The owner takes the
 * whole stack with one acquire exchange.  There is no pop of single entries,
 * so there is no ABA problem and no CAS on the owner's side.
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
    /* Another empty page goes back to the arena. */
    list_remove(&h->avail[cls], pg);
    struct segment *s = segment_of_page(pg);
    struct arena *a = s->arena;
    vg_lock(&a->lock);
    vg_arena_free_run(s, page_index(s, pg));
    vg_unlock(&a->lock);
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

void vg_heap_free_remote(struct page *pg, struct block *b) {
  struct heap *o = load_relaxed(&pg->owner);
  if (o != NULL) {
    uintptr_t head = load_relaxed(&o->remote);
    while (head != VG_REMOTE_CLOSED) {
      b->next = encode((void *)head, b);
      if (atomic_compare_exchange_weak_explicit(&o->remote, &head, (uintptr_t)b, memory_order_release,
                                                memory_order_relaxed))
        return;
    }
  }
  vg_arena_free_abandoned(pg, b);
}

static void drain_list(uintptr_t list) {
  while (list != 0) {
    struct block *b = (struct block *)list;
    list = (uintptr_t)decode(b->next, b);
    struct page *pg = page_of(b);
    if (unlikely(pg == NULL || pg->kind != PK_SMALL)) vg_fatal(V_CORRUPT_REMOTE, b);
    small_free(pg, b, V_CORRUPT_REMOTE);
  }
}

void vg_heap_drain(struct heap *h) {
  drain_list(atomic_exchange_explicit(&h->remote, 0, memory_order_acquire));
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
  drain_list(atomic_exchange_explicit(&h->remote, VG_REMOTE_CLOSED, memory_order_acq_rel));
  atomic_fetch_sub_explicit(&h->arena->threads, 1, memory_order_relaxed);
  vg_decommit_thread_exit(h->arena);
  vg_heap_pool_put(h);
}
