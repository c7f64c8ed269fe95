/* The entry points.  glibc 2.36's observable semantics live here: NULL and
 * errno for impossible requests, malloc(0), realloc(p, 0), the memalign
 * family's alignment rules, and free keeping errno. */
#include <errno.h>
#include <unistd.h>

#include "harden.h"

/* vg_tl_busy is non-zero while this thread runs inside vigil: a fork from a
 * signal handler that interrupted us then gives the child a fresh heap
 * (fork.c).  Two plain TLS stores; no atomics. */
#define ENTER() (vg_tl_busy++, vg_ann_enter())
#define LEAVE() (vg_ann_leave(), vg_tl_busy--)

static inline unsigned perturb_byte(void) { return (unsigned)vg_option(OPT_perturb); }

/* Smallest class that holds n bytes and whose slots are all aligned to
 * `align` (every slot of a class whose size is a multiple of align is). */
static unsigned aligned_class(size_t n, size_t align) {
  unsigned c = size_class(n);
  while (class_size(c) % align != 0) c++;
  return c;
}

/* What block_size returns for a block that is not live. */
#define VG_NOT_LIVE SIZE_MAX

/* block_size of p in the small page pg. */
static ALWAYS_INLINE size_t small_block_size(struct page *pg, void *p, enum violation *why) {
  uint32_t idx = slot_index(pg, p);
  *why = V_INVALID_POINTER;
  if (idx == UINT32_MAX) return VG_NOT_LIVE;
  *why = V_DOUBLE_FREE;
  /* Freed by another thread (the tag), or by this one (its bit); or,
   * past the slots the page ever handed out, never allocated. */
  if (remote_freed(p)) return VG_NOT_LIVE;
  if (!(bits_load(&pg->bits[idx / 64]) & slot_bit(idx))) {
    *why = slot_clear_why(pg, idx);
    return VG_NOT_LIVE;
  }
  if (!harden_level()) return pg->bsize;
  *why = V_OVERFLOW;
  return canary_check(p, pg->bsize);
}

/* The usable size of the live block p (at harden >= 1, a small block's is
 * the n it was asked with, which may be 0), or VG_NOT_LIVE with what is
 * wrong with p. */
static size_t block_size(void *p, enum violation *why) {
  struct page *pg = page_of(p);
  *why = V_INVALID_POINTER;
  if (pg == NULL) {
    size_t n = vg_large_usable(p);
    if (n == 0 && vg_large_was_freed(p)) *why = V_DOUBLE_FREE;
    return n != 0 ? n : VG_NOT_LIVE;
  }
  if (pg->kind == PK_SMALL) return small_block_size(pg, p, why);
  if (pg->kind == PK_SPAN && p == pg->start) {
    *why = V_DOUBLE_FREE;
    return vg_span_is_free(pg) ? VG_NOT_LIVE : pg->bsize;
  }
  /* A free page: as in free_slow, its blocks were all freed (a span freed
   * by another thread goes back to its arena at once, and merges). */
  if (pg->kind == PK_FREE && (uintptr_t)p % VG_ALIGN == 0) *why = V_DOUBLE_FREE;
  return VG_NOT_LIVE;
}

/* Usable size of a live block; fatal for anything vigil did not hand out,
 * and for a freed block: `freed` says which misuse that is (a second free,
 * or a realloc or malloc_usable_size after the free). */
static size_t usable(void *p, enum violation freed) {
  enum violation why;
  size_t n = block_size(p, &why);
  if (n == VG_NOT_LIVE) vg_fatal(why == V_DOUBLE_FREE ? freed : why, p);
  return n;
}

/* Describing blocks to memory checkers (annotate.h); nothing otherwise. */
/* The size a live block is described with: never fatal, and never less
 * than the n asked for.  A wrong size is the oracle's to report, the same
 * way in the annotated builds as in the release one (a fatal here made
 * triage's ASan row fail differently from the rest). */
static inline size_t ann_size(void *p, size_t n) {
  enum violation why;
  size_t u = block_size(p, &why);
  return u != VG_NOT_LIVE && u > n ? u : n;
}
#if VG_ANNOTATE
static void note_alloc(void *p, size_t n, bool zeroed) {
  if (p != NULL) vg_ann_alloc(p, n, ann_size(p, n), zeroed);
}
/* pg: p's page, NULL for a large block (vg_ann_free says why it is not
 * poisoned here). */
static void note_free(void *p, const struct page *pg) {
  enum violation why;
  size_t n = block_size(p, &why);
  if (n != VG_NOT_LIVE) vg_ann_free(p, n, pg != NULL); /* else the free itself reports it */
}
#else
static ALWAYS_INLINE void note_alloc(void *p, size_t n, bool zeroed) { (void)p, (void)n, (void)zeroed; }
static ALWAYS_INLINE void note_free(void *p, const struct page *pg) { (void)p, (void)pg; }
#endif

static void *alloc_any(size_t n, size_t align, bool zero) {
  if (n > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  struct heap *h = vg_heap_get();
  if (h == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  void *p;
  if (n <= VG_SMALL_MAX && align <= VG_PAGE) {
    unsigned cls = align <= VG_ALIGN ? size_class(n) : aligned_class(n, align);
    p = harden_level() ? harden_heap_alloc(h, cls) : heap_alloc(h, cls);
  } else {
    p = NULL;
    int saved = errno;
    if (n < vg_mmap_threshold()) p = vg_span_alloc(n, align);
    if (p == NULL) {
      errno = saved; /* a span that does not fit is not an error */
      p = vg_large_alloc(n, align, zero);
      note_alloc(p, n, zero); /* zeroed already, by the kernel or large.c */
      return p;
    }
  }
  note_alloc(p, n, false);
  if (p && zero) memset(p, 0, n);
  return p;
}

/* harden >= 1: a small block is asked with room for its canary (harden.c),
 * and for `cap` bytes in all (realloc's room to grow in place; cap >= n).
 * A size the canary's room would push past VG_SMALL_MAX gets a one-page
 * span, which has none. */
static void *alloc_hardened_cap(size_t n, size_t cap, size_t align, bool zero) {
  size_t ask = n; /* past VG_SMALL_MAX: no canary */
  if (cap <= VG_SMALL_MAX - VG_CANARY_ROOM) ask = cap + VG_CANARY_ROOM;
  else if (n <= VG_SMALL_MAX) ask = n + VG_CANARY_ROOM;
  if (ask > VG_SMALL_MAX && n <= VG_SMALL_MAX && align <= VG_PAGE) {
    void *p = vg_span_alloc(n, align);
    if (p != NULL && zero) memset(p, 0, n);
    if (p != NULL) return p;
  }
  void *p = alloc_any(ask, align, zero);
  if (p != NULL && ask <= VG_SMALL_MAX && align <= VG_PAGE) canary_set(p, n, page_of(p)->bsize);
  return p;
}
static NOINLINE void *alloc_hardened(size_t n, size_t align, bool zero) {
  return alloc_hardened_cap(n, n, align, zero);
}

/* Every allocation but malloc's fast path; the first one of the process
 * comes here, and initialises vigil before the level is read. */
static NOINLINE void *alloc_slow(size_t n, size_t align, bool zero) {
  vg_init();
  return unlikely(harden_level()) ? alloc_hardened(n, align, zero) : alloc_any(n, align, zero);
}

static ALWAYS_INLINE void *alloc(size_t n) {
  struct heap *h = vg_tl_heap;
  if (likely(n <= VG_SMALL_MAX && h != NULL)) {
    void *p = heap_alloc(h, size_class(n));
    note_alloc(p, n, false);
    return p;
  }
  return alloc_slow(n, VG_ALIGN, false);
}

/* malloc at harden >= 1: a small block with its canary (harden.h). */
static ALWAYS_INLINE void *alloc_canary(size_t n) {
  struct heap *h = vg_tl_heap;
  if (likely(n <= VG_SMALL_MAX - VG_CANARY_ROOM && h != NULL)) {
    unsigned cls = size_class(n + VG_CANARY_ROOM);
    void *p = harden_heap_alloc(h, cls);
    if (likely(p != NULL)) canary_set(p, n, class_size(cls));
    return p;
  }
  return alloc_slow(n, VG_ALIGN, false);
}

/* malloc and free at level 0 without a perturb byte: a small block from or
 * to the thread, in code whose only calls are the fatal report and, last,
 * the rest of the work, so it saves few registers or none; everything else
 * is malloc_any and free_leave. */
static inline bool fast_level(void) { return !harden_level() && !perturb_byte(); }

static NOINLINE void *malloc_any(size_t n) {
  ENTER();
  void *p = likely(!harden_level()) ? alloc(n) : alloc_canary(n);
  if (unlikely(perturb_byte()) && p) memset(p, (int)(perturb_byte() ^ 0xff), n);
  LEAVE();
  return p;
}

void *vigil_malloc(size_t n) {
  struct heap *h = vg_tl_heap;
  if (likely(n <= VG_SMALL_MAX && h != NULL && fast_level())) {
    ENTER();
    void *p = heap_alloc_fast(h, size_class(n));
    if (likely(p != NULL)) {
      note_alloc(p, n, false);
      LEAVE();
      return p;
    }
    LEAVE();
  }
  return malloc_any(n);
}

static NOINLINE void free_slow(void *p, struct page *pg) {
  if (pg == NULL) {
    if (!vg_large_free(p)) vg_fatal(vg_large_was_freed(p) ? V_DOUBLE_FREE : V_INVALID_POINTER, p);
  } else if (pg->kind == PK_SPAN && p == pg->start) {
    vg_span_free(pg);
  } else if (pg->kind == PK_FREE && ((uintptr_t)p % VG_ALIGN) == 0) {
    /* Every block of a free page has been freed already. */
    vg_fatal(V_DOUBLE_FREE, p);
  } else {
    vg_fatal(V_INVALID_POINTER, p);
  }
}

/* free at harden >= 1: a small block's canary is checked; the block is held
 * back from reuse, in the thread cache at level 1 (harden.h) or else in the
 * thread's quarantine (harden.c), as is a span. */
static NOINLINE void free_hardened(void *p, struct page *pg) {
  bool small = pg != NULL && pg->kind == PK_SMALL;
  struct heap *h = vg_tl_heap;
  if (likely(small && h != NULL)) {
    enum violation why;
    if (unlikely(small_block_size(pg, p, &why) == VG_NOT_LIVE)) vg_fatal(why, p);
    if (harden_level() == HARDEN_CANARY && pg->cls < VG_TC_CLASSES) tcq_free(h, pg, p);
    else vg_quarantine_put(h, pg, p);
    return;
  }
  if (!small && !(pg != NULL && pg->kind == PK_SPAN && p == pg->start)) {
    free_slow(p, pg);
    return;
  }
  (void)usable(p, V_DOUBLE_FREE);
  if (h != NULL) vg_quarantine_put(h, pg, p);
  else if (small) small_free(pg, p, V_INVALID_POINTER);
  else vg_span_free(pg);
}

/* The rest of vigil_free's fast path, which calls it after ENTER: slot idx
 * of pg when the thread cache of its class is full, or absent. */
static NOINLINE void free_small_leave(struct heap *h, struct page *pg, void *p, uint32_t idx) {
  small_free_at(h, pg, p, idx);
  LEAVE();
}

/* free of p (maybe NULL), in the page run pg (page_of), after ENTER:
 * everything but vigil_free's fast path.  It LEAVEs. */
static NOINLINE void free_leave(void *p, struct page *pg) {
  if (p != NULL) {
    /* Like glibc, mapped blocks are not perturbed: they are about to go. */
    if (unlikely(perturb_byte()) && pg != NULL) {
      size_t n = usable(p, V_DOUBLE_FREE);
      vg_ann_open(p, n);
      memset(p, (int)perturb_byte(), n);
    }
    note_free(p, pg);
    if (unlikely(harden_level())) free_hardened(p, pg);
    else if (likely(pg != NULL && pg->kind == PK_SMALL)) small_free(pg, p, V_INVALID_POINTER);
    else free_slow(p, pg);
  }
  LEAVE();
}

void vigil_free(void *p) {
  ENTER(); /* before the first read of vigil's metadata (memcheck: annotate.h) */
  struct page *pg = page_of(p); /* NULL for NULL */
  struct heap *h = vg_tl_heap;
  if (likely(pg != NULL && pg->kind == PK_SMALL && h != NULL && fast_level())) {
    note_free(p, pg);
    uint32_t idx = slot_index(pg, p);
    if (unlikely(idx == UINT32_MAX)) vg_fatal(V_INVALID_POINTER, p);
    unsigned cls = pg->cls, n = h->tc_n[cls], cap = h->tc_cap[cls];
    if (unlikely(n >= cap)) {
      free_small_leave(h, pg, p, idx);
      return;
    }
    small_hold(h, pg, p, idx, cls, n, cap);
    LEAVE();
    return;
  }
  free_leave(p, pg);
}

void *vigil_calloc(size_t nmemb, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(nmemb, size, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  ENTER();
  void *p = alloc_slow(n, VG_ALIGN, true);
  LEAVE();
  return p;
}

void *vigil_realloc(void *p, size_t n) {
  if (p == NULL) return vigil_malloc(n);
  if (n == 0) {
    /* glibc (REALLOC_ZERO_BYTES_FREES): free and return NULL. */
    vigil_free(p);
    return NULL;
  }
  if (n > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  ENTER();
  size_t old = usable(p, V_USE_AFTER_FREE);
  struct page *pg = page_of(p);
  void *q = NULL;
  /* What p holds in place: its usable size, or with a canary (harden >= 1)
   * its slot less the canary's room. */
  bool canary = harden_level() && pg != NULL && pg->kind == PK_SMALL;
  size_t fit = canary ? pg->bsize - VG_CANARY_ROOM : old;
  if (n <= fit && (n > fit / 2 || fit <= 128)) {
    q = p; /* fits, and wastes at most half */
    if (canary) canary_set(p, n, pg->bsize);
  } else if (pg == NULL || pg->kind == PK_SPAN) {
    /* A shrink, which always succeeds, gives the tail away at once: a
     * span's tail pages to whichever thread asks next, a mapped block's
     * address space past twice its new size to the kernel (src/large.c),
     * where another thread may map.  The tail is described as gone first. */
    if (VG_ANNOTATE) {
      size_t len = align_up(n, pg == NULL ? vg_os_page_size() : VG_PAGE);
      if (len < old) vg_ann_resize(p, old, len, n), old = len;
    }
    q = pg == NULL ? vg_large_realloc(p, n)   /* in place, or its pages move: no copy */
                   : vg_span_resize(pg, n);   /* in place when the next pages are free */
  }
  if (VG_ANNOTATE && q == p) vg_ann_resize(p, old, ann_size(p, n), n);
  else if (VG_ANNOTATE && q != NULL) vg_ann_moved(p, q, old, ann_size(q, n), n);
  if (q == NULL) {
    /* A block that moves to grow gets half as much again, so one grown in
     * small steps moves O(log n) times, not once per step. */
    size_t room = n > old && old <= PTRDIFF_MAX / 2 ? old + old / 2 : 0;
    /* ... but not past the kind n itself gets: a span does not become a
     * mapped block for the sake of room (it would cost syscalls). */
    size_t t = vg_mmap_threshold();
    if (n < t && room >= t) room = t - 1;
    if (n <= VG_SPAN_MAX && room > VG_SPAN_MAX) room = VG_SPAN_MAX;
    int saved = errno;
    /* With a canary (harden >= 1), the room is in the slot past it. */
    if (room > n) q = harden_level() && n <= VG_SMALL_MAX ? alloc_hardened_cap(n, room, VG_ALIGN, false)
                                                     : alloc_slow(room, VG_ALIGN, false);
    if (q == NULL) {
      errno = saved;
      q = alloc_slow(n, VG_ALIGN, false);
    }
    if (q != NULL) {
      vg_ann_open(p, old);
      memcpy(q, p, old < n ? old : n);
      vigil_free(p);
    }
  }
  LEAVE();
  return q;
}

void *vigil_reallocarray(void *p, size_t nmemb, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(nmemb, size, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return vigil_realloc(p, n);
}

/* glibc's _mid_memalign: small alignments are plain malloc, absurd ones are
 * EINVAL, and a non-power-of-two alignment is rounded up to one. */
void *vigil_memalign(size_t align, size_t n) {
  if (align <= VG_ALIGN) return vigil_malloc(n);
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  if (!is_pow2(align)) align = (size_t)1 << (64 - __builtin_clzll((unsigned long long)align));
  ENTER();
  void *p = alloc_slow(n, align, false);
  LEAVE();
  return p;
}

/* In glibc 2.36 aligned_alloc is memalign (2.38 started to reject
 * non-power-of-two alignments). */
void *vigil_aligned_alloc(size_t align, size_t n) { return vigil_memalign(align, n); }

int vigil_posix_memalign(void **memptr, size_t align, size_t n) {
  if (align % sizeof(void *) != 0 || !is_pow2(align / sizeof(void *)) || align == 0) return EINVAL;
  int saved = errno;
  void *p = vigil_memalign(align, n);
  if (p == NULL) return ENOMEM;
  errno = saved;
  *memptr = p;
  return 0;
}

void *vigil_valloc(size_t n) { return vigil_memalign(vg_os_page_size(), n); }

void *vigil_pvalloc(size_t n) {
  size_t ps = vg_os_page_size(), r;
  if (__builtin_add_overflow(n, ps - 1, &r)) {
    errno = ENOMEM;
    return NULL;
  }
  return vigil_memalign(ps, r & ~(ps - 1));
}

size_t vigil_malloc_usable_size(void *p) {
  if (p == NULL) return 0;
  ENTER();
  size_t n = usable(p, V_USE_AFTER_FREE);
  vg_ann_open(p, n); /* the caller may now use all n bytes */
  LEAVE();
  return n;
}

/* C23's sized frees.  A size the block cannot have been asked with is
 * fatal, as is an alignment the block does not have.  What a block of
 * usable size u may have been asked with: at most u; and, unless it came
 * from the memalign family, more than u/2, since every small class is at
 * most twice the one below and realloc keeps a block in place only when
 * the new size is more than half of it (under 128 bytes, any size fits);
 * for a large block more than u/4, since a cached mapping serves requests
 * down to a quarter of its size (large.c).  A span or a large block rounds
 * up to its page (64 KiB, or the system's) on top: realloc can shrink one
 * to a page for a few bytes.  tests/unit_sized.c tries every way a block
 * comes to be, so that a change of these rules cannot make a false alarm.
 * C++'s sized and aligned deletes (cxx.c) come here too, with their own
 * messages. */
void vg_free_checked(void *p, size_t size, size_t align, bool cxx) {
  if (p == NULL) return;
  ENTER();
  /* As memalign: up to 16 is plain malloc, and a non-power-of-two
   * alignment is rounded up. */
  if (align > SIZE_MAX / 2 + 1) vg_fatal(cxx ? V_WRONG_DELETE_ALIGN : V_WRONG_ALIGN, p);
  if (align <= VG_ALIGN) align = 1;
  else if (!is_pow2(align)) align = (size_t)1 << (64 - __builtin_clzll((unsigned long long)align));
  struct page *pg = page_of(p);
  size_t u = usable(p, V_DOUBLE_FREE);
  size_t slack = pg == NULL ? vg_os_page_size() : pg->kind == PK_SPAN ? VG_PAGE : 0;
  size_t floor = pg == NULL ? u / 4 : u / 2;
  if (((uintptr_t)p & (align - 1)) != 0) vg_fatal(cxx ? V_WRONG_DELETE_ALIGN : V_WRONG_ALIGN, p);
  bool too_small = align == 1 && u > 128 && size <= floor && u - size >= slack;
  if (size != VG_ANY_SIZE && (size > u || too_small)) vg_fatal(cxx ? V_WRONG_DELETE_SIZE : V_WRONG_SIZE, p);
  LEAVE();
  vigil_free(p);
}

void vigil_free_sized(void *p, size_t size) { vg_free_checked(p, size, 1, false); }
void vigil_free_aligned_sized(void *p, size_t align, size_t size) { vg_free_checked(p, size, align, false); }

int vigil_malloc_trim(size_t pad) {
  (void)pad;
  vg_init();
  ENTER();
  int r = vg_trim_all();
  LEAVE();
  return r;
}

VG_EXPORT_STD(malloc)
VG_EXPORT_STD(free)
VG_EXPORT_STD(calloc)
VG_EXPORT_STD(realloc)
VG_EXPORT_STD(reallocarray)
VG_EXPORT_STD(memalign)
VG_EXPORT_STD(aligned_alloc)
VG_EXPORT_STD(posix_memalign)
VG_EXPORT_STD(valloc)
VG_EXPORT_STD(pvalloc)
VG_EXPORT_STD(malloc_usable_size)
VG_EXPORT_STD(free_sized)
VG_EXPORT_STD(free_aligned_sized)
VG_EXPORT_STD(malloc_trim)
