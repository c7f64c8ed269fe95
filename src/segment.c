/* Segments: aligned 4 MiB reservations with out-of-band metadata between two
 * guard regions, and the registry that tells a vigil pointer from any other. */
#include <errno.h>

#include "internal.h"

/* One bit per VG_SEG of address space.  It lives in .bss: untouched words
 * cost no memory.  Writers are the arena that maps or releases the segment,
 * through vg_registry_set (seal.c: read-only between changes at harden >= 2);
 * readers (free, realloc, usable_size) use relaxed loads: a pointer reached
 * the reader through some synchronisation after the segment was published. */
_Atomic uint64_t vg_registry[VG_REGISTRY_WORDS] __attribute__((aligned(VG_ARCH_MAX_PAGE)));
static_assert(sizeof vg_registry % VG_ARCH_MAX_PAGE == 0, "no other variable shares the registry's pages");
_Atomic size_t vg_segments_mapped, vg_segments_total;

/* ---- the fit table: one slot per segment of the arena, with the length
 * of the segment's longest free run, in one array.  A span request walks the
 * array, lowest slot first, and searches only the segments that can hold it:
 * walking the segment headers instead (each on its own page) cost a cache
 * and TLB miss per segment, and with one large span per segment an arena of
 * 64 segments spent most of a span malloc there.  A new segment takes the
 * lowest free slot, so the order stays close to the age of the segments. */
static unsigned longest_free(uint64_t used) {
  unsigned k = 0;
  for (uint64_t f = ~used; f; f &= f >> 1) k++; /* each step shortens every run by one */
  return k;
}

/* A slot for s, growing the table (doubling) when it is full. */
static bool fit_add(struct arena *a, struct segment *s) {
  unsigned i = 0;
  while (i < a->nfit && a->fit[i].seg != NULL) i++;
  if (i == a->fit_cap) {
    unsigned ncap = a->fit_cap ? 2 * a->fit_cap : VG_FIT_FIRST;
    struct fit_slot *nt = vg_os_map(NULL, ncap * sizeof *nt, 1);
    if (nt == NULL) return false;
    if (a->fit) {
      memcpy(nt, a->fit, a->fit_cap * sizeof *nt);
      vg_os_unmap(a->fit, a->fit_cap * sizeof *nt);
    }
    a->fit = nt;
    a->fit_cap = ncap;
  }
  if (i == a->nfit) a->nfit++;
  a->fit[i] = (struct fit_slot){s, longest_free(s->used)};
  s->slot = i;
  return true;
}

static void fit_remove(struct arena *a, struct segment *s) {
  a->fit[s->slot] = (struct fit_slot){NULL, 0};
  while (a->nfit > 0 && a->fit[a->nfit - 1].seg == NULL) a->nfit--;
}

void vg_segment_refit(struct segment *s) { s->arena->fit[s->slot].longest = longest_free(s->used); }

/* The first segment with a free run of n pages at a multiple of
 * align_pages, and that run's first page; NULL when none has one. */
struct segment *vg_segment_fit(struct arena *a, unsigned n, unsigned align_pages, unsigned *first) {
  for (unsigned k = 0; k < a->nfit; k++) {
    if (a->fit[k].longest < n) continue;
    struct segment *s = a->fit[k].seg;
    int i = vg_segment_find_run(s, n, align_pages);
    if (i >= 0) {
      /* The table lives outside the segments: check what it points at. */
      if (s->cookie != (vg_secret ^ (uintptr_t)s) || s->slot != k) vg_fatal(V_CORRUPT_METADATA, s);
      *first = (unsigned)i;
      return s;
    }
  }
  return NULL;
}

struct segment *vg_segment_new(struct arena *a) {
  bool remap = vg_decommit_remap();
  uint8_t *base = vg_os_map_aligned(VG_SEG, VG_SEG, !remap);
  if (base == NULL) return NULL;
  if (((uintptr_t)base >> VG_SEG_SHIFT) >= VG_REGISTRY_WORDS * 64) {
    /* Outside the address range the registry covers: unusable. */
    vg_os_unmap(base, VG_SEG);
    errno = ENOMEM;
    return NULL;
  }
  /* Guards before and after the metadata.  Under remap-decommit the whole
   * reservation starts PROT_NONE and uncharged; only what is used gets
   * committed. */
  if (remap) {
    if (vg_os_commit(base + VG_SEG_META_OFFSET, VG_MAX_OS_PAGE) != 0) {
      vg_os_unmap(base, VG_SEG);
      errno = ENOMEM;
      return NULL;
    }
  } else {
    vg_os_protect(base, VG_MAX_OS_PAGE, 0);
    vg_os_protect(base + 2 * VG_MAX_OS_PAGE, VG_MAX_OS_PAGE, 0);
  }
  struct segment *s = (struct segment *)(base + VG_SEG_META_OFFSET);
  s->cookie = vg_secret ^ (uintptr_t)s;
  s->arena = a;
  s->used = VG_SEG_META_MASK;
  s->dirty = 0;
  s->aged = 0;
  s->guarded = 0;
  if (!fit_add(a, s)) {
    vg_os_unmap(base, VG_SEG);
    errno = ENOMEM;
    return NULL;
  }
  s->decommitted = remap ? ~VG_SEG_META_MASK : 0;
  for (unsigned i = 0; i < VG_SEG_FIRST_PAGE; i++) s->pages[i].kind = PK_META;
  /* Published once its header is whole (the arena lock keeps the list and
   * counters below to this thread). */
  if (!vg_registry_set((uintptr_t)base, true)) {
    fit_remove(a, s);
    vg_os_unmap(base, VG_SEG);
    return NULL;
  }
  s->prev = NULL;
  s->next = a->segs;
  if (a->segs) a->segs->prev = s;
  a->segs = s;
  a->mapped += VG_SEG;
  if (a->mapped > a->mapped_max) a->mapped_max = a->mapped;
  atomic_fetch_add_explicit(&vg_segments_mapped, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&vg_segments_total, 1, memory_order_relaxed);
  VG_PROBE2(segment_map, base, a->index);
  return s;
}

/* Caller holds the arena lock; every page is free.  False, the segment
 * kept, when its registry bit could not be cleared (seal.c: the kernel
 * refused to open the registry's page): unmapped, it would still pass as
 * vigil's. */
bool vg_segment_release(struct segment *s) {
  struct arena *a = s->arena;
  if (s->used != VG_SEG_META_MASK || s->cookie != (vg_secret ^ (uintptr_t)s)) vg_fatal(V_CORRUPT_METADATA, s);
  uintptr_t base = segment_base(s);
  if (!vg_registry_set(base, false)) return false;
  if (s->prev) s->prev->next = s->next;
  else a->segs = s->next;
  if (s->next) s->next->prev = s->prev;
  fit_remove(a, s);
  a->mapped -= VG_SEG;
  uint64_t dirty = s->dirty & ~s->decommitted;
  a->dirty -= (size_t)__builtin_popcountll(dirty) * VG_PAGE;
  atomic_fetch_sub_explicit(&vg_segments_mapped, 1, memory_order_relaxed);
  VG_PROBE2(segment_unmap, base, a->index);
  vg_os_unmap((void *)base, VG_SEG);
  return true;
}

/* First run of n free pages starting at a multiple of align_pages, or -1.
 * Bit i of f stands for "pages i..i+len-1 are free"; f & f >> k extends len
 * by k (k <= len), so log2(n) steps find every start at once, and the zeros
 * shifted in at the top keep runs inside the segment. */
int vg_segment_find_run(struct segment *s, unsigned n, unsigned align_pages) {
  if (n == 0 || n > VG_SEG_PAGES - VG_SEG_FIRST_PAGE) return -1;
  uint64_t f = ~s->used & ~run_mask(0, VG_SEG_FIRST_PAGE);
  for (unsigned len = 1; len < n && f;) {
    unsigned k = n - len < len ? n - len : len;
    f &= f >> k;
    len += k;
  }
  if (align_pages > 1) {
    uint64_t at = 0;
    for (unsigned i = 0; i < VG_SEG_PAGES; i += align_pages) at |= (uint64_t)1 << i;
    f &= at;
  }
  return f ? (int)__builtin_ctzll(f) : -1;
}
