/* Arenas: the shared pools behind the thread heaps (segments, free page
 * runs, abandoned pages), the heap pool, and the allocator's locks.
 *
 * The number of arenas comes from the CPUs the system has, never from the
 * affinity mask (seed 001: glibc 2.34-2.38 counted the mask, so a pinned
 * process with many threads shared a handful of arenas).  arena_max caps it. */
#include <errno.h>

#include "heap.h"

/* ---- metadata memory: heaps and arenas, never freed -------------------- */
struct vg_lock vg_meta_lock = VG_LOCK_INIT;
static uint8_t *meta_cur, *meta_end;

static void *meta_alloc(size_t size) {
  size = align_up(size, 64);
  vg_lock(&vg_meta_lock);
  if ((size_t)(meta_end - meta_cur) < size) {
    size_t chunk = size > VG_PAGE ? align_up(size, VG_PAGE) : VG_PAGE;
    uint8_t *p = vg_os_map(NULL, chunk, 1);
    if (p == NULL) {
      vg_unlock(&vg_meta_lock);
      return NULL;
    }
    meta_cur = p;
    meta_end = p + chunk;
  }
  void *r = meta_cur;
  meta_cur += size;
  vg_unlock(&vg_meta_lock);
  return r;
}

/* ---- arenas ---------------------------------------------------------------- */
struct arena *_Atomic vg_arenas[VG_ARENAS_MAX];
_Atomic unsigned vg_narenas;
static _Atomic unsigned next_arena;
static unsigned cpu_count;

unsigned vg_arena_count(void) {
  if (cpu_count == 0) cpu_count = vg_os_cpu_count();
  size_t n = vg_option(OPT_arena_max);
  if (n == 0) n = cpu_count;
  return n > VG_ARENAS_MAX ? VG_ARENAS_MAX : (unsigned)n;
}

/* Called with the heap pool lock held (lock order: pool, then arenas). */
static struct arena *arena_get(unsigned i) {
  struct arena *a = load_relaxed(&vg_arenas[i]); /* writers hold the pool lock */
  if (a == NULL) {
    a = meta_alloc(sizeof *a);
    if (a == NULL) return i > 0 ? arena_get(0) : NULL;
    memset(a, 0, sizeof *a); /* the lock word too: free */
    a->index = i;
    store_release(&vg_arenas[i], a);
    if (i + 1 > load_relaxed(&vg_narenas)) store_relaxed(&vg_narenas, i + 1);
  }
  return a;
}

/* Threads are spread round-robin.  Never onto an arena whose lock this
 * thread holds: that only happens in a fork child made by a signal handler
 * that interrupted the arena's critical section (fork.c), and the arena is
 * then mid-update until the interrupted code resumes.  If every arena is
 * such, the child gets one more. */
static struct arena *arena_pick_locked(void) {
  unsigned n = vg_arena_count(), i = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % n;
  struct arena *a = arena_get(i);
  for (unsigned k = 1; k < n && a && vg_lock_mine(&a->lock); k++) a = arena_get((i + k) % n);
  if (a && vg_lock_mine(&a->lock)) a = n < VG_ARENAS_MAX ? arena_get(n) : NULL;
  if (a && vg_lock_mine(&a->lock)) a = NULL;
  if (a) atomic_fetch_add_explicit(&a->threads, 1, memory_order_relaxed);
  return a;
}

static void take_dirty(struct arena *a, struct segment *s, unsigned first, unsigned n) {
  uint64_t mask = run_mask(first, n);
  uint64_t was_dirty = s->dirty & mask & ~s->decommitted;
  a->dirty -= (size_t)__builtin_popcountll(was_dirty) * VG_PAGE;
  s->dirty &= ~mask;
  s->aged &= ~mask;
}

/* A free run of n pages (aligned to align_pages) in arena a, mapping a new
 * segment when none has room.  Returns the segment and sets *first. */
static struct segment *arena_run(struct arena *a, unsigned n, unsigned align_pages, unsigned *first) {
  struct segment *s = vg_segment_fit(a, n, align_pages, first);
  if (s != NULL) return s;
  vg_decommit_refault(a); /* a segment is needed: was one released too soon? */
  s = vg_segment_new(a);
  if (s == NULL) return NULL;
  int i = vg_segment_find_run(s, n, align_pages);
  if (i < 0) return NULL;
  *first = (unsigned)i;
  return s;
}

static bool claim_run(struct arena *a, struct segment *s, unsigned first, unsigned n) {
  uint64_t mask = run_mask(first, n);
  take_dirty(a, s, first, n);
  if (s->guarded & mask) {
    /* Former guard pages become usable: the whole run is made RW. */
    if (vg_os_commit(page_addr(s, first), (size_t)n * VG_PAGE) != 0) return false;
    s->guarded &= ~mask;
    s->decommitted &= ~mask;
  }
  if (s->decommitted & run_mask(first, n)) {
    vg_decommit_refault(a);
    if (!vg_commit_run(s, first, n)) return false;
  }
  return true;
}

/* Guard slabs (harden >= 2): a run of small pages is claimed with one more
 * page after it, PROT_NONE, so an overflow running off the end of the run
 * faults before it reaches the next run (another class's blocks, or a
 * span).  A freed run's guard stays PROT_NONE (s->guarded): the next run
 * that puts its guard there pays no syscall, and one that takes the page as
 * a usable page commits it (claim_run).  Each guard costs address space and
 * a VMA boundary, no memory: a dirty page that becomes one is returned.
 * Small runs live long, so their guards are cheap.  Spans have none: spans
 * of mixed lengths move the boundaries on almost every claim, and the
 * mprotect and madvise per claim made the churn of 64 KiB-1 MiB spans 3.4x
 * slower at level 2 and a fork storm with spans churning in the background
 * ten times slower at level 3 (README.md, Hardening). */
static unsigned guard_pages(void) { return harden_level() >= HARDEN_QUARANTINE; }

static bool guard_prepare(struct arena *a, struct segment *s, unsigned g) {
  uint64_t bit = (uint64_t)1 << g;
  if (s->guarded & bit) return true;
  if (!(vg_decommit_remap() && (s->decommitted & bit))) { /* a remapped page is PROT_NONE already */
    if (vg_os_protect(page_addr(s, g), VG_PAGE, 0) != 0) return false;
    if (s->dirty & bit & ~s->decommitted) vg_os_decommit(page_addr(s, g), VG_PAGE, 0);
  }
  take_dirty(a, s, g, 1);
  s->decommitted &= ~bit;
  s->guarded |= bit;
  return true;
}

/* After the run at first (n pages) is initialised: its guard is page first + n. */
static void guard_attach(struct segment *s, unsigned first, unsigned n) {
  struct page *gp = &s->pages[first + n];
  gp->kind = PK_GUARD;
  gp->head = (uint8_t)first;
  s->pages[first].guard = 1;
  s->used |= (uint64_t)1 << (first + n);
  vg_segment_refit(s);
}

struct page *vg_arena_page(struct arena *a, struct heap *h, unsigned cls) {
  vg_lock(&a->lock);
  struct page *pg = a->abandoned[cls];
  if (pg != NULL) {
    a->abandoned[cls] = pg->next;
    if (pg->next) pg->next->prev = NULL;
    pg->next = pg->prev = NULL;
    pg->in_full = 0;
  } else {
    unsigned first, n = class_pages(cls), g = guard_pages();
    struct segment *s = arena_run(a, n + g, 1, &first);
    if (s == NULL || (g && !guard_prepare(a, s, first + n)) || !claim_run(a, s, first, n)) {
      vg_unlock(&a->lock);
      return NULL;
    }
    vg_page_init_small(s, first, cls);
    if (g) guard_attach(s, first, n);
    pg = &s->pages[first];
  }
  atomic_store_explicit(&pg->owner, h, memory_order_release);
  vg_decommit_tick(a);
  vg_unlock(&a->lock);
  return pg;
}

/* Pages first..first+n-1 become free (a guard among them stays PROT_NONE,
 * and is not dirty).  Caller holds the arena lock. */
static void free_pages(struct segment *s, unsigned first, unsigned n) {
  struct arena *a = s->arena;
  for (unsigned i = 0; i < n; i++) s->pages[first + i].kind = PK_FREE;
  uint64_t mask = run_mask(first, n), mem = mask & ~s->guarded;
  s->used &= ~mask;
  vg_segment_refit(s);
  a->dirty += (size_t)__builtin_popcountll(mem & ~s->dirty & ~s->decommitted) * VG_PAGE;
  s->dirty |= mem;
  s->decommitted &= ~mask;
  vg_decommit_after_free(a);
}

void vg_arena_free_run(struct segment *s, unsigned first) {
  free_pages(s, first, s->pages[first].npages + s->pages[first].guard);
}

/* The abandoned list of a class holds only pages with room. */
static void abandoned_push(struct arena *a, struct page *pg) {
  pg->in_full = 0;
  pg->prev = NULL;
  pg->next = a->abandoned[pg->cls];
  if (pg->next) pg->next->prev = pg;
  a->abandoned[pg->cls] = pg;
}

/* A block of a page no thread owns: freed under the arena lock. */
void vg_arena_free_abandoned(struct page *pg, struct block *b) {
  struct segment *s = segment_of_page(pg);
  struct arena *a = s->arena;
  vg_lock(&a->lock);
  if (load_relaxed(&pg->owner) != NULL) {
    /* Adopted since the caller looked.  Not into a batch: an exiting
     * thread's last flush may come here. */
    vg_unlock(&a->lock);
    vg_heap_free_remote_now(pg, b);
    return;
  }
  uint32_t idx = slot_index(pg, b);
  if (pg->kind != PK_SMALL || idx == UINT32_MAX) vg_fatal(V_INVALID_POINTER, b);
  if (!(pg->bits[idx / 64] & slot_bit(idx))) vg_fatal(slot_clear_why(pg, idx), b);
  bits_store(&pg->bits[idx / 64], pg->bits[idx / 64] & ~slot_bit(idx));
  blk_store(&b->next, encode(pg->free, b));
  pg->free = b;
  uint32_t used = load_relaxed(&pg->used) - 1;
  store_relaxed(&pg->used, used);
  if (pg->in_full) abandoned_push(a, pg); /* it has room now */
  if (used == 0) {
    if (pg->prev) pg->prev->next = pg->next;
    else a->abandoned[pg->cls] = pg->next;
    if (pg->next) pg->next->prev = pg->prev;
    pg->next = pg->prev = NULL;
    vg_arena_free_run(s, page_index(s, pg));
  }
  vg_unlock(&a->lock);
}

/* Thread exit: the page leaves its heap.  Empty pages are freed, others wait
 * on the arena's abandoned list for a heap to adopt them. */
void vg_arena_abandon_page(struct page *pg) {
  struct segment *s = segment_of_page(pg);
  struct arena *a = s->arena;
  vg_lock(&a->lock);
  atomic_store_explicit(&pg->owner, NULL, memory_order_release);
  if (load_relaxed(&pg->used) == 0) {
    vg_arena_free_run(s, page_index(s, pg));
  } else if (pg->free == NULL && pg->reserved == pg->capacity) {
    /* Full: on no list until a free gives it room (in_full marks that). */
    pg->in_full = 1;
  } else {
    abandoned_push(a, pg);
  }
  vg_unlock(&a->lock);
}

/* ---- spans: page-multiple blocks between the small classes and the mmap
 * threshold.  They never enter a thread heap. */
/* A span's owner is NULL while it is in use.  A freed span is claimed with
 * one CAS on it, so two frees of one span (even in two threads at once)
 * find it claimed: double free.  A thread with a heap keeps up to
 * SPAN_CACHE of the spans it frees (owner = its heap, at most
 * SPAN_CACHE_BYTES, or a trim threshold the user set), and its next span request of the same length takes
 * one without the arena lock: a loop that mallocs and frees one span (BZ
 * 17195's fixed loop) then takes no lock at all.  The rest go back to the
 * arena (owner = SPAN_FREED until the run is reused). */
#define SPAN_FREED ((struct heap *)1)
#define SPAN_HELD ((struct heap *)2) /* held back (vg_span_free) or quarantined (harden.c) */
#define SPAN_CACHE_BYTES ((size_t)1 << 20)

void *vg_span_alloc(size_t size, size_t align) {
  struct heap *h = vg_heap_get();
  if (h == NULL) return NULL;
  struct arena *a = h->arena;
  size_t n = size ? (size + VG_PAGE - 1) / VG_PAGE : 1;
  size_t ap = align > VG_PAGE ? align / VG_PAGE : 1;
  if (n > VG_SEG_PAGES - VG_SEG_FIRST_PAGE || ap > VG_SEG_PAGES / 2) return NULL;
  for (unsigned i = 0; ap == 1 && i < h->nspans; i++) {
    struct page *pg = h->spans[i];
    if (pg->npages != n) continue;
    h->spans[i] = h->spans[--h->nspans];
    h->span_bytes -= pg->bsize;
    store_relaxed(&pg->owner, NULL);
    return pg->start;
  }
  vg_lock(&a->lock);
  unsigned first;
  struct segment *s = arena_run(a, (unsigned)n, (unsigned)ap, &first);
  if (s == NULL || !claim_run(a, s, first, (unsigned)n)) {
    vg_unlock(&a->lock);
    errno = ENOMEM;
    return NULL;
  }
  vg_page_init_span(s, first, (unsigned)n);
  vg_decommit_tick(a);
  vg_unlock(&a->lock);
  return page_addr(s, first);
}

/* Grow a span into the free pages after it, or give back its tail. */
void *vg_span_resize(struct page *pg, size_t size) {
  struct segment *s = segment_of_page(pg);
  struct arena *a = s->arena;
  size_t want = size ? (size + VG_PAGE - 1) / VG_PAGE : 1;
  unsigned first = page_index(s, pg), n = pg->npages;
  if (want > VG_SEG_PAGES - first) return NULL;
  unsigned w = (unsigned)want;
  if (w == n) return pg->start;
  vg_lock(&a->lock);
  if (pg->kind != PK_SPAN) vg_fatal(V_INVALID_POINTER, pg->start);
  bool ok = true;
  if (w < n) {
    free_pages(s, first + w, n - w);
  } else {
    uint64_t more = run_mask(first + n, w - n);
    ok = (s->used & more) == 0 && claim_run(a, s, first + n, w - n);
    if (ok) {
      s->used |= more;
      vg_segment_refit(s);
      for (unsigned i = first + n; i < first + w; i++) {
        s->pages[i].kind = PK_TAIL;
        s->pages[i].head = (uint8_t)first;
      }
    }
  }
  if (ok) {
    pg->npages = (uint8_t)w;
    pg->bsize = (uint32_t)(w * VG_PAGE);
    pg->magic = (uint32_t)((((uint64_t)1 << 32) + pg->bsize - 1) / pg->bsize);
  }
  vg_unlock(&a->lock);
  return ok ? pg->start : NULL;
}

/* A claimed span's run goes back to its arena. */
static void span_release(struct page *pg) {
  struct segment *s = segment_of_page(pg);
  struct arena *a = s->arena;
  vg_lock(&a->lock);
  if (pg->kind != PK_SPAN) vg_fatal(V_DOUBLE_FREE, pg->start);
  vg_arena_free_run(s, page_index(s, pg));
  vg_unlock(&a->lock);
}

/* A span whose owner is `was` (NULL: live; SPAN_HELD) is freed, with one
 * CAS; any other owner is fatal, as `bad`. */
static void span_free_from(struct page *pg, struct heap *was, enum violation bad) {
  struct heap *h = vg_tl_heap;
  /* A trim threshold the user set bounds what is kept, too. */
  size_t cap = SPAN_CACHE_BYTES;
  if (load_relaxed(&vg_opt_thresholds_fixed) && vg_trim_threshold() < cap) cap = vg_trim_threshold();
  bool keep = h != NULL && h->nspans < VG_SPAN_CACHE && h->span_bytes + pg->bsize <= cap;
  if (!atomic_compare_exchange_strong_explicit(&pg->owner, &was, keep ? h : SPAN_FREED, memory_order_relaxed,
                                               memory_order_relaxed))
    vg_fatal(bad, pg->start);
  if (keep) {
    h->spans[h->nspans++] = pg;
    h->span_bytes += pg->bsize;
  } else {
    span_release(pg);
  }
}
/* free of a live span: it is held back (owner SPAN_HELD, claimed with one
 * CAS, so a second free is a double free) in place of the heap's previous
 * one, which is freed for real.  So the span just freed is not the next
 * one handed out: a free, a malloc of the same size and a second free of
 * the pointer would free the new owner's span. */
void vg_span_free(struct page *pg) {
  struct heap *h = vg_tl_heap;
  if (h == NULL) {
    span_free_from(pg, NULL, V_DOUBLE_FREE);
    return;
  }
  vg_span_hold(pg);
  struct page *old = h->span_held;
  h->span_held = pg;
  if (old != NULL) vg_span_unhold(old);
}

/* Thread exit and malloc_trim: the heap's held and kept spans go back. */
void vg_span_cache_flush(struct heap *h) {
  struct page *held = h->span_held;
  h->span_held = NULL;
  if (held != NULL) vg_span_unhold(held);
  while (h->nspans > 0) {
    struct page *pg = h->spans[--h->nspans];
    h->span_bytes -= pg->bsize;
    store_relaxed(&pg->owner, SPAN_FREED);
    span_release(pg);
  }
}

bool vg_span_is_free(const struct page *pg) { return load_relaxed(&pg->owner) != NULL; }

/* The quarantine (harden.c) holds a freed span: marked as not live, so a
 * second free is a double free, but not yet anyone's to reuse. */
void vg_span_hold(struct page *pg) {
  struct heap *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&pg->owner, &none, SPAN_HELD, memory_order_relaxed,
                                               memory_order_relaxed))
    vg_fatal(V_DOUBLE_FREE, pg->start);
}
void vg_span_unhold(struct page *pg) { span_free_from(pg, SPAN_HELD, V_CORRUPT_METADATA); }

/* ---- the heap pool ---------------------------------------------------------- */
struct vg_lock vg_heap_pool_lock = VG_LOCK_INIT;
struct heap *vg_all_heaps;
static struct heap *free_heaps;
static pthread_key_t exit_key;

static void thread_exit(void *arg) {
  struct heap *h = arg;
  vg_ann_enter();
  if (load_relaxed(&h->state) == HEAP_LIVE) vg_heap_abandon(h);
  vg_ann_leave();
}

void vg_heap_pool_put(struct heap *h) {
  vg_lock(&vg_heap_pool_lock);
  store_relaxed(&h->state, HEAP_FREE);
  h->next_free = free_heaps;
  free_heaps = h;
  vg_unlock(&vg_heap_pool_lock);
}

/* The thread cache's size, for an empty cache: tcache_count blocks per
 * class, and at harden = 1 the newest blocks it holds back (harden.h), in a
 * ring of the fewest rows that hold them all. */
void vg_heap_tc_size(struct heap *h) {
  size_t cap = vg_option(OPT_tcache_count), hold = harden_level() == HARDEN_CANARY ? VG_QFIFO_CANARY : 0;
  if (cap + hold > UINT8_MAX) cap = UINT8_MAX - hold;
  unsigned rows = 1;
  while (hold != 0 && rows < cap + hold) rows *= 2;
  h->tc_mask = (uint8_t)((hold != 0 ? rows : VG_TC_ROWS) - 1);
  for (unsigned c = 0; c < VG_NCLASSES; c++) {
    h->tc_n[c] = 0;
    h->tc_cap[c] = c < VG_TC_CLASSES ? (uint8_t)(cap + hold) : 0;
    if (c < VG_TC_CLASSES) h->tc_head[c] = 0;
  }
}

static struct heap *heap_new(void) {
  vg_lock(&vg_heap_pool_lock);
  struct heap *h = free_heaps;
  if (h != NULL) {
    free_heaps = h->next_free;
  } else if ((h = meta_alloc(sizeof *h)) != NULL) {
    h->next_all = vg_all_heaps;
    vg_all_heaps = h;
  }
  if (h != NULL) {
    for (unsigned c = 0; c < VG_NCLASSES; c++) {
      h->tc_held[c] = NULL;
      h->cur[c] = &vg_empty_page;
      h->avail[c] = NULL;
      h->spare[c] = NULL;
    }
    vg_heap_tc_size(h);
    h->full = NULL;
    h->rb_owner = NULL;
    h->rb_n = 0;
    h->q_head = h->q_nfifo = h->q_npool = 0;
    h->q_bytes = 0;
    h->nspans = 0;
    h->span_bytes = 0;
    h->span_held = NULL;
    h->next_free = NULL;
    store_relaxed(&h->remote, 0);
    h->arena = arena_pick_locked();
    store_relaxed(&h->state, HEAP_LIVE);
    if (h->arena == NULL) {
      store_relaxed(&h->state, HEAP_FREE);
      h->next_free = free_heaps;
      free_heaps = h;
      h = NULL;
    }
  }
  vg_unlock(&vg_heap_pool_lock);
  return h;
}

struct heap *vg_heap_get(void) {
  struct heap *h = vg_tl_heap;
  if (likely(h != NULL)) return h;
  vg_init();
  h = heap_new();
  if (h == NULL) return NULL;
  vg_tl_heap = h;
  /* May allocate (keys past the first 32): the heap is already in place. */
  pthread_setspecific(exit_key, h);
  return h;
}

void vg_arena_init(void) { pthread_key_create(&exit_key, thread_exit); }
