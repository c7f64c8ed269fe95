/* vigil's shared types and the inline checks that state their invariants.
 *
 * Memory map of a segment (VG_SEG = 4 MiB, aligned, VG_PAGE = 64 KiB pages):
 *
 *   page 0      guard (PROT_NONE)       catches overflows from the segment below
 *   page 1      struct segment          out-of-band metadata: page descriptors,
 *                                       allocation bitmaps
 *   page 2      guard (PROT_NONE)       catches underflows from page 3
 *   page 3..63  user memory             runs of pages: small-class pages or spans
 *
 * Any pointer finds its segment by masking and is then validated: the
 * segment must be in the registry (a bitmap over the address space), the page
 * must be in use, and the offset must fall on a slot boundary.
 *
 * Allocation call tree:
 *   malloc -> heap_alloc (thread cache, else the page; no lock, no atomic)
 *             `-> vg_heap_alloc_slow: drain remote frees, extend the page,
 *                 next page of the class, or vg_arena_page (arena lock)
 *          -> vg_span_alloc  (64 KiB < size < mmap threshold; arena lock)
 *          -> vg_large_alloc (own mapping with guard pages; large lock)
 */
#ifndef VIGIL_INTERNAL_H
#define VIGIL_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "annotate.h"
#include "arch.h"
#include "options.h"
#include "os.h"
#include "vigil.h"

/* In the standard build each vigil_ entry point is also exported under its
 * standard name; the prefixed build exports only the vigil_ names. */
#ifdef VIGIL_PREFIX
#define VG_EXPORT_STD(name)
#else
#define VG_EXPORT_STD(name) \
  extern __typeof(vigil_##name) name __attribute__((alias("vigil_" #name), visibility("default")));
#endif

/* ---- size classes (page.c) --------------------------------------------- */
/* 16..128 in steps of 16, then four classes per doubling up to 64 KiB. */
#define VG_NCLASSES 44u
#define VG_SMALL_MAX ((size_t)64 << 10)
#define VG_BITMAP_WORDS (VG_PAGE / VG_ALIGN / 64)

/* The class of n, as a constant expression for n <= 1024 (the table below),
 * and computed with one bit scan above that. */
#define VG_LOG2_1K(x) ((x) >= 512 ? 9u : (x) >= 256 ? 8u : 7u)
#define VG_CLASS_1K(n)                                               \
  ((n) <= 128 ? (((n) + 15u) >> 4) - ((n) != 0)                        \
              : 8u + (VG_LOG2_1K((n) - 1) - 7u) * 4u + ((((n) - 1) >> (VG_LOG2_1K((n) - 1) - 2u)) & 3u))
/* Every class boundary up to 1 KiB is a multiple of 16, so the class of n is
 * the class of n rounded up to 16: vg_class_1k[(n + 15) / 16] (page.c). */
extern const uint8_t vg_class_1k[1024 / 16 + 1];

static ALWAYS_INLINE unsigned size_class(size_t n) {
  if (n <= 1024) return vg_class_1k[(n + 15) >> 4];
  unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
  return 8u + (k - 7u) * 4u + (unsigned)(((n - 1) >> (k - 2u)) & 3u);
}
static inline size_t class_size(unsigned c) {
  if (c < 8) return (size_t)(c + 1) * 16u;
  unsigned g = (c - 8) / 4, r = (c - 8) % 4;
  return ((size_t)1 << (7 + g)) + ((size_t)(r + 1) << (5 + g));
}
/* Pages in one run of class c: enough for at least 8 blocks. */
static inline unsigned class_pages(unsigned c) {
  unsigned n = 1;
  while (n * VG_PAGE / class_size(c) < 8) n *= 2;
  return n;
}

/* ---- pages and segments (page.c, segment.c) ---------------------------- */
enum page_kind { PK_FREE, PK_META, PK_SMALL, PK_SPAN, PK_TAIL, PK_GUARD };

struct block {
  uintptr_t next;  /* encoded: see encode(); remote_tag() while on a remote list */
  uintptr_t rnext; /* the remote list's link, encoded (heap.c) */
};

struct heap;
struct arena;

struct page {
  struct block *free;    /* owner's free list */
  _Atomic uint32_t used; /* blocks out of this page, remote frees in flight included */
  uint32_t capacity;     /* slots in the run */
  uint32_t reserved;     /* slots ever put on the free list (lazy extension) */
  uint32_t bsize;        /* block size; for a span, its length */
  uint32_t magic;        /* ceil(2^32 / bsize): slot index without a division */
  uint8_t kind;          /* enum page_kind */
  uint8_t cls;
  uint8_t npages;  /* run length, in pages */
  uint8_t head;    /* PK_TAIL: index of the run's first page */
  uint8_t in_full; /* on the heap's full list */
  uint8_t guard;   /* the page after the run is its guard (PK_GUARD, harden >= 2: arena.c) */
  uint8_t align_pad[2];
  _Atomic(struct heap *) owner; /* NULL: abandoned, guarded by the arena lock */
  uint8_t *start;               /* first slot; with the fields above, the fast paths' one cache line */
  struct page *next, *prev;     /* heap class list / full list, or arena abandoned list */
  uint64_t bits[VG_BITMAP_WORDS]; /* 1 = slot allocated (exact double-free detection) */
} __attribute__((aligned(64))); /* the fields before `next` share one cache line */

struct segment {
  uintptr_t cookie; /* vg_secret ^ address: a forged header does not match */
  struct arena *arena;
  struct segment *next, *prev; /* arena's segment list */
  uint64_t used;               /* bit i: page i is part of a live run (or metadata) */
  uint64_t dirty;              /* bit i: free page whose memory may be resident */
  uint64_t decommitted;        /* bit i: free page returned to the OS */
  uint64_t aged;               /* bit i: dirty page already dirty at the arena's last tick */
  uint64_t guarded;            /* bit i: a guard page, or a free page still PROT_NONE from being one */
  unsigned slot;               /* its place in the arena's fit table */
  struct page pages[VG_SEG_PAGES];
};

#define VG_SEG_META_OFFSET VG_MAX_OS_PAGE
#define VG_SEG_FIRST_PAGE 3u
#define VG_SPAN_MAX ((VG_SEG_PAGES - VG_SEG_FIRST_PAGE) * VG_PAGE) /* the largest span */
#define VG_SEG_META_MASK ((uint64_t)7)
static_assert(sizeof(struct segment) <= VG_MAX_OS_PAGE, "segment header fits its guarded page");
static_assert(VG_SEG_FIRST_PAGE * VG_PAGE == 3 * VG_MAX_OS_PAGE, "layout above");

/* What vigil's checks trust and that never changes after start-up, alone
 * on its own pages, read-only from then on (seal.c).  Its alignment makes
 * its size a whole VG_ARCH_MAX_PAGE: no other variable shares its pages. */
struct vg_ro {
  uintptr_t secret;       /* safe-linking's key; tags, cookies and canaries derive from it */
  _Atomic uint8_t harden; /* the hardening level: harden_level() */
} __attribute__((aligned(VG_ARCH_MAX_PAGE)));
extern struct vg_ro vg_ro HIDDEN;
#define vg_secret (vg_ro.secret)
/* Read-only (on) or writable (off) again: vg_harden_set and the tests. */
void vg_ro_seal(bool on) HIDDEN;

/* The registry: one bit per VG_SEG of address space, on pages of its own
 * (at least one VG_ARCH_MAX_PAGE: 32-bit targets need 16 words), read-only
 * between changes at harden >= 2 (seal.c). */
#define VG_REGISTRY_BITS_WORDS (((size_t)1 << (VG_ADDR_BITS - VG_SEG_SHIFT)) / 64)
#define VG_REGISTRY_WORDS \
  (VG_REGISTRY_BITS_WORDS > VG_ARCH_MAX_PAGE / 8 ? VG_REGISTRY_BITS_WORDS : VG_ARCH_MAX_PAGE / 8)
extern _Atomic uint64_t vg_registry[VG_REGISTRY_WORDS] HIDDEN;
/* Sets (on) or clears the registry bit of the segment at base, opening its
 * page while sealed; false (errno ENOMEM) when the kernel refused that. */
bool vg_registry_set(uintptr_t base, bool on) HIDDEN;
/* Seals the registry at harden >= 2, opens it below (the level's change). */
void vg_registry_seal_level(void) HIDDEN;

/* The bits of pages first..first+n-1 in a segment's page masks. */
static inline uint64_t run_mask(unsigned first, unsigned n) {
  return (n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << first;
}

static ALWAYS_INLINE struct segment *segment_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uintptr_t idx = a >> VG_SEG_SHIFT;
  if (unlikely(idx >= VG_REGISTRY_WORDS * 64)) return NULL;
  uint64_t w = load_relaxed(&vg_registry[idx / 64]);
  if (!(w & ((uint64_t)1 << (idx % 64)))) return NULL;
  return (struct segment *)(align_down(a, VG_SEG) + VG_SEG_META_OFFSET);
}
static ALWAYS_INLINE uintptr_t segment_base(const struct segment *s) {
  return (uintptr_t)s - VG_SEG_META_OFFSET;
}
static ALWAYS_INLINE uint8_t *page_addr(struct segment *s, unsigned i) {
  return (uint8_t *)(segment_base(s) + (uintptr_t)i * VG_PAGE);
}
static ALWAYS_INLINE unsigned page_index(struct segment *s, struct page *pg) {
  return (unsigned)(pg - s->pages);
}
/* Page descriptors live inside their segment's header. */
static ALWAYS_INLINE struct segment *segment_of_page(const struct page *pg) {
  return (struct segment *)(align_down((uintptr_t)pg, VG_SEG) + VG_SEG_META_OFFSET);
}

/* Safe-linking: a free-list link is stored XOR the process secret and the
 * address it is stored at, so a leaked or overwritten link is useless. */
static ALWAYS_INLINE uintptr_t encode(const void *next, const void *at) {
  return (uintptr_t)next ^ vg_secret ^ ((uintptr_t)at >> 12);
}
static ALWAYS_INLINE struct block *decode(uintptr_t v, const void *at) {
  return (struct block *)(v ^ vg_secret ^ ((uintptr_t)at >> 12));
}

/* Slot index of p in page pg, or UINT32_MAX when p is not on a slot boundary
 * of the run.  The multiply by magic may be wrong for an offset off a
 * boundary or far outside the run, but then idx * bsize != off; on a
 * boundary inside the run it is exact (idx * (magic * bsize - 2^32) < 2^32).
 * So one compare of idx with the capacity and one of idx * bsize with off
 * decide it, without a multiply for the run's length. */
static ALWAYS_INLINE uint32_t slot_index(const struct page *pg, const void *p) {
  uintptr_t off = (uintptr_t)p - (uintptr_t)pg->start;
  uint32_t idx = (uint32_t)(((uint64_t)off * pg->magic) >> 32);
  if (unlikely(idx >= pg->capacity || (uintptr_t)idx * pg->bsize != off)) return UINT32_MAX;
  return idx;
}
static ALWAYS_INLINE uint64_t slot_bit(uint32_t idx) { return (uint64_t)1 << (idx % 64); }

/* ---- the fatal path (report.c) ----------------------------------------- */
enum violation {
  V_DOUBLE_FREE,
  V_INVALID_POINTER,
  V_CORRUPT_FREELIST,
  V_CORRUPT_REMOTE,
  V_CORRUPT_METADATA,
  V_CORRUPT_LARGE,
  V_LOCK_REENTERED,
  V_USE_AFTER_FREE, /* realloc or malloc_usable_size of a freed block */
  V_WRONG_SIZE,     /* free_sized with a size the block cannot have */
  V_WRONG_ALIGN,    /* free_aligned_sized with an alignment the block lacks */
  V_WRONG_DELETE_SIZE,  /* C++ sized delete, the same check */
  V_WRONG_DELETE_ALIGN, /* C++ aligned delete */
  V_NO_CXX_RUNTIME,     /* operator new failed, and no C++ runtime to throw */
  V_OVERFLOW,           /* a small block's canary is broken (harden >= 1) */
  V_WRITE_AFTER_FREE,   /* a block held back from reuse was written (harden >= 1) */
  V_COUNT
};
_Noreturn void vg_fatal(enum violation v, const void *p) HIDDEN;
/* The misuse behind a free of slot idx whose allocation bit is clear: a
 * double free, or a free of a slot never handed out (past every slot the
 * page ever put on its free list).  Only on the fatal path. */
static inline enum violation slot_clear_why(const struct page *pg, uint32_t idx) {
  return idx >= pg->reserved ? V_INVALID_POINTER : V_DOUBLE_FREE;
}
extern _Atomic int vg_unusable; /* set by vg_fatal: the heap is not to be trusted */

/* ---- locks (lock.c): a word holding the owner's id; no syscall unless
 * contended, no signal masking.  A signal handler can tell whether its own
 * thread holds a lock (vg_lock_mine), which is what fork.c needs. */
struct vg_lock {
  _Atomic unsigned word;
};
#define VG_LOCK_INIT {0}
void vg_lock(struct vg_lock *l) HIDDEN;
void vg_unlock(struct vg_lock *l) HIDDEN;
bool vg_lock_mine(struct vg_lock *l) HIDDEN;
void vg_lock_reset_child(struct vg_lock *l) HIDDEN; /* fork child: taken by prepare() */
extern _Atomic unsigned vg_fork_gate;
extern __thread unsigned vg_tl_forking __attribute__((tls_model("initial-exec")));
extern struct vg_lock vg_meta_lock;

/* ---- thread heaps (heap.c) --------------------------------------------- */
#define VG_REMOTE_CLOSED ((uintptr_t)1)
#define VG_SPAN_CACHE 4u
#define VG_RB_MAX 32u /* remote frees a thread gathers before one push (heap.c) */
/* Classes up to 1 KiB go through the thread cache (heap.h); each of their
 * runs is one page long (class_pages). */
#define VG_TC_CLASSES (VG_CLASS_1K(1024u) + 1u)
static_assert(VG_PAGE / 1024u >= 8u, "a run of a thread-cache class is one page (class_pages)");
enum heap_state { HEAP_FREE, HEAP_LIVE, HEAP_ORPHANED };
#define VG_QFIFO 32u       /* the quarantine's FIFO at harden >= 2 (harden.c) */
#define VG_QFIFO_CANARY 8u /* ... and at harden = 1 */
#define VG_QPOOL 64u       /* its random pool, harden >= 2 */

/* The thread cache holds at most UINT8_MAX blocks of a class (tcache_count
 * and harden = 1's hold together), in rows of tc_slot. */
#define VG_TC_ROWS 256u

struct heap {
  /* The thread cache (heap.h): freed blocks of any heap, tagged, listed in
   * tc_slot, not linked through the blocks: a write after free can change
   * no entry.  Class c's blocks are rows 0 to tc_n[c] - 1, newest last,
   * except at harden = 1: a ring of tc_mask + 1 rows from tc_head[c],
   * oldest first (harden.h). */
  uint8_t tc_n[VG_NCLASSES];      /* blocks cached */
  uint8_t tc_cap[VG_NCLASSES];    /* the most it takes; 0 above VG_TC_CLASSES */
  uint8_t tc_head[VG_TC_CLASSES]; /* harden = 1: the row of the oldest */
  uint8_t tc_mask;
  struct block *tc_held[VG_NCLASSES]; /* the block of the class this thread freed last, held back (heap.h) */
  struct page *cur[VG_NCLASSES];   /* page to allocate from; &vg_empty_page if none */
  struct page *avail[VG_NCLASSES]; /* pages of the class that may have room */
  struct page *full;               /* pages with no room; any class */
  struct page *spare[VG_NCLASSES]; /* an empty page kept for reuse (if still empty) */
  struct page *spans[VG_SPAN_CACHE]; /* freed spans kept for reuse (arena.c) */
  struct page *span_held;            /* the newest span freed, not reusable yet (arena.c) */
  unsigned nspans;
  size_t span_bytes;
  _Atomic uintptr_t remote;        /* blocks freed by other threads; VG_REMOTE_CLOSED once abandoned */
  struct heap *rb_owner;           /* this thread's batch of remote frees: their owner (heap.c) */
  unsigned rb_n;
  struct block *rb[VG_RB_MAX];
  struct arena *arena;
  /* The quarantine (harden.c): a FIFO, then at harden >= 2 a random pool. */
  void *q_fifo[VG_QFIFO];
  void *q_pool[VG_QPOOL];
  unsigned q_head, q_nfifo, q_npool;
  size_t q_bytes;
  uint64_t q_rng;
  struct heap *next_free; /* pool free list */
  struct heap *next_all;  /* every heap ever made, for stats and fork */
  _Atomic int state;      /* enum heap_state */
  struct block *tc_slot[VG_TC_ROWS][VG_TC_CLASSES]; /* the thread cache's blocks: row, class */
};

extern struct page vg_empty_page;
extern __thread struct heap *vg_tl_heap __attribute__((tls_model("initial-exec")));
extern __thread unsigned vg_tl_busy __attribute__((tls_model("initial-exec")));

void *vg_heap_alloc_slow(struct heap *h, unsigned cls) HIDDEN;
void vg_heap_page_refill(struct heap *h, struct page *pg) HIDDEN;
void vg_heap_free_remote(struct page *pg, struct block *b, uint32_t idx) HIDDEN; /* batched */
void vg_heap_free_remote_now(struct page *pg, struct block *b) HIDDEN;           /* not batched */
void vg_heap_flush_remote(struct heap *h) HIDDEN; /* push this thread's batch */
/* The empty page h keeps per class (vg_heap_page_refill) goes back to the
 * arena: vg_harden_set, so that the runs h uses next are claimed at the new
 * level (with its guard slabs). */
void vg_heap_release_spares(struct heap *h) HIDDEN;
void vg_heap_tc_flush(struct heap *h) HIDDEN;     /* empty the thread cache into the pages */
void vg_heap_tc_size(struct heap *h) HIDDEN;      /* of an empty cache, at the level in force */
void vg_heap_drain(struct heap *h) HIDDEN;
void vg_heap_abandon(struct heap *h) HIDDEN;
struct heap *vg_heap_get(void) HIDDEN; /* this thread's heap, made on first use */

/* ---- arenas (arena.c) ---------------------------------------------------- */
#define VG_ARENAS_MAX 1024u
#define VG_FIT_FIRST 64u /* the fit table's first size: it doubles */
struct fit_slot {
  struct segment *seg; /* NULL: a free slot */
  unsigned longest;    /* pages in its longest free run */
};
struct arena {
  struct vg_lock lock;
  struct segment *segs;
  struct fit_slot *fit;       /* the fit table (segment.c) */
  unsigned nfit, fit_cap;
  struct page *abandoned[VG_NCLASSES];
  size_t dirty;          /* bytes in free pages not yet returned */
  uint64_t tick;         /* when the aged pages were last returned (decay_ms) */
  size_t trim;           /* this arena's self-adjusted trim threshold */
  uint64_t last_purge;   /* when dirty pages last went back */
  size_t purged;         /* bytes the last purge returned */
  size_t mapped;         /* bytes in this arena's segments */
  size_t mapped_max;     /* the most it ever had (malloc_info's system max) */
  unsigned index;
  _Atomic unsigned threads; /* heaps attached */
};
/* Published with a release store once initialised; read with vg_arena_at. */
extern struct arena *_Atomic vg_arenas[VG_ARENAS_MAX];
static inline struct arena *vg_arena_at(unsigned i) { return load_acquire(&vg_arenas[i]); }
extern _Atomic unsigned vg_narenas; /* arenas created so far */
unsigned vg_arena_count(void) HIDDEN; /* arenas threads are spread over */
struct page *vg_arena_page(struct arena *a, struct heap *h, unsigned cls) HIDDEN;
void vg_arena_free_run(struct segment *s, unsigned first) HIDDEN; /* caller holds arena lock */
void vg_arena_free_abandoned(struct page *pg, struct block *b) HIDDEN;
void vg_arena_abandon_page(struct page *pg) HIDDEN;
void *vg_span_alloc(size_t size, size_t align) HIDDEN;
void vg_span_free(struct page *pg) HIDDEN;
void vg_span_cache_flush(struct heap *h) HIDDEN;
bool vg_span_is_free(const struct page *pg) HIDDEN; /* kept by a heap, or on its way back */
void vg_span_hold(struct page *pg) HIDDEN;   /* freed into the quarantine (harden.c) */
void vg_span_unhold(struct page *pg) HIDDEN; /* out of it: vg_span_free */
void *vg_span_resize(struct page *pg, size_t size) HIDDEN; /* NULL: cannot in place */
void vg_heap_pool_put(struct heap *h) HIDDEN;
extern struct heap *vg_all_heaps;
extern struct vg_lock vg_heap_pool_lock;

/* ---- segments (segment.c) ------------------------------------------------ */
struct segment *vg_segment_new(struct arena *a) HIDDEN; /* caller holds a->lock */
bool vg_segment_release(struct segment *s) HIDDEN; /* false: kept (seal.c) */
int vg_segment_find_run(struct segment *s, unsigned n, unsigned align_pages) HIDDEN;
void vg_segment_refit(struct segment *s) HIDDEN; /* after a change to s->used; arena lock held */
struct segment *vg_segment_fit(struct arena *a, unsigned n, unsigned align_pages, unsigned *first) HIDDEN;
void vg_page_init_small(struct segment *s, unsigned first, unsigned cls) HIDDEN;
void vg_page_init_span(struct segment *s, unsigned first, unsigned n) HIDDEN;
void vg_page_extend(struct page *pg) HIDDEN;
extern _Atomic size_t vg_segments_mapped, vg_segments_total;

/* ---- decommit policy (decommit.c) ---------------------------------------- */
void vg_decommit_after_free(struct arena *a) HIDDEN; /* caller holds a->lock */
void vg_decommit_refault(struct arena *a) HIDDEN;    /* caller holds a->lock */
void vg_decommit_tick(struct arena *a) HIDDEN;       /* caller holds a->lock */
void vg_decommit_thread_exit(struct arena *a) HIDDEN;
int vg_decommit_arena(struct arena *a, bool all) HIDDEN; /* purge; caller holds lock */
int vg_decommit_remap(void) HIDDEN;
int vg_trim_all(void) HIDDEN;
size_t vg_trim_threshold(void) HIDDEN;
bool vg_commit_run(struct segment *s, unsigned first, unsigned n) HIDDEN;

/* ---- large blocks (large.c) ---------------------------------------------- */
void *vg_large_alloc(size_t size, size_t align, bool zero) HIDDEN;
bool vg_large_free(void *p) HIDDEN; /* false: p is not a large block */
size_t vg_large_usable(const void *p) HIDDEN; /* 0: not a large block */
bool vg_large_was_freed(const void *p) HIDDEN;
/* free with the size and alignment the caller says the block has (C23's
 * sized frees, C++'s sized and aligned deletes: `cxx` picks the message);
 * VG_ANY_SIZE: no size given. */
#define VG_ANY_SIZE SIZE_MAX
void vg_free_checked(void *p, size_t size, size_t align, bool cxx) HIDDEN; /* one of the last 64 freed or moved */
void *vg_large_realloc(void *p, size_t size) HIDDEN;
size_t vg_mmap_threshold(void) HIDDEN;
int vg_large_trim(void) HIDDEN;
extern struct vg_lock vg_large_lock;
struct vg_large_stats {
  size_t blocks, bytes, cached, cached_bytes;
};
void vg_large_stats(struct vg_large_stats *st) HIDDEN;

/* ---- hardening levels (harden.c) ----------------------------------------- */
enum { HARDEN_BASE, HARDEN_CANARY, HARDEN_QUARANTINE, HARDEN_FILL };
/* The `harden` tunable, fixed at start-up: read with harden_level(), a
 * relaxed load (threads read it while the first one initialises vigil). */
static ALWAYS_INLINE unsigned harden_level(void) { return load_relaxed(&vg_ro.harden); }
void vg_harden_init(void) HIDDEN;
/* Bytes a small block gets beyond the n asked for at harden >= 1: the
 * canary's first two bytes and the keyed n in the slot's last two. */
#define VG_CANARY_ROOM 4u
void vg_quarantine_put(struct heap *h, struct page *pg, void *p) HIDDEN;
void vg_quarantine_flush(struct heap *h) HIDDEN;
void *vg_quarantine_at(const struct heap *h, unsigned i) HIDDEN;
/* For the fuzzers (fuzz/corrupt.c): set the level where no block is live
 * (returns the level in force), whether p carries a canary, and release
 * (so check) what the calling thread's quarantine holds. */
unsigned vg_harden_set(unsigned level);
bool vg_harden_canary_at(const void *p);
void vg_harden_release_mine(void);

/* ---- bootstrap and fork (init.c, fork.c) --------------------------------- */
extern _Atomic int vg_ready;
void vg_init_slow(void) HIDDEN;
static ALWAYS_INLINE void vg_init(void) {
  if (unlikely(!load_acquire(&vg_ready))) vg_init_slow();
}
void vg_fork_register(void) HIDDEN;
void vg_arena_init(void) HIDDEN;
void vg_decommit_init(void) HIDDEN;

/* ---- probes --------------------------------------------------------------- */
#if defined(__has_include)
#if __has_include(<sys/sdt.h>) && !defined(VIGIL_NO_SDT)
#include <sys/sdt.h>
#define VG_PROBE1(name, a) DTRACE_PROBE1(vigil, name, a)
#define VG_PROBE2(name, a, b) DTRACE_PROBE2(vigil, name, a, b)
#endif
#endif
#ifndef VG_PROBE1
#define VG_PROBE1(name, a) ((void)(a))
#define VG_PROBE2(name, a, b) ((void)(a), (void)(b))
#endif

#endif
