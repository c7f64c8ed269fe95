/* The one decommit policy, for every arena and thread alike.
 *
 * Free pages stay resident ("dirty") until either the arena holds more than
 * its threshold (trim_threshold, or more where it learnt that it needs more)
 * of dirty bytes, when all of them go back at the next tick (decay_ms) and
 * wholly free segments (but one) are unmapped; or they stay unused for
 * decay_ms, when those go back (tick, vg_decommit_after_free).  Never on every free: glibc's per-thread heaps
 * ignored the trim threshold and called madvise on every free (BZ 17195).
 *
 * Pages go back with MADV_DONTNEED (not MADV_FREE, which leaves RSS high),
 * or, when overcommit_memory=2 (where MADV_DONTNEED does not lower the
 * commit charge), by remapping them PROT_NONE.  Nothing relies on the
 * returned memory reading as zero: qemu-user does not always zero it. */
#include "internal.h"

static int remap_mode;

void vg_decommit_init(void) {
  size_t m = vg_option(OPT_decommit);
  remap_mode = m == DECOMMIT_REMAP || (m == DECOMMIT_AUTO && vg_os_overcommit_mode() == 2);
}

int vg_decommit_remap(void) { return remap_mode; }

size_t vg_trim_threshold(void) { return vg_option(OPT_trim_threshold); }

bool vg_commit_run(struct segment *s, unsigned first, unsigned n) {
  uint64_t mask = run_mask(first, n);
  if (remap_mode && (s->decommitted & mask)) {
    if (vg_os_commit(page_addr(s, first), (size_t)n * VG_PAGE) != 0) return false;
  }
  s->decommitted &= ~mask;
  return true;
}

/* Return the arena's dirty pages (all of them, or only the aged ones), one
 * syscall per contiguous run, and unmap wholly free segments whose pages
 * go, keeping one unless `all`.  Caller holds the arena lock.  Returns
 * whether anything was released; a->purged says how many bytes. */
static int purge(struct arena *a, bool all, bool aged_only) {
  size_t bytes = 0;
  bool kept = false;
  struct segment *next;
  for (struct segment *s = a->segs; s; s = next) {
    next = s->next;
    uint64_t d = s->dirty & ~s->decommitted & (aged_only ? s->aged : ~(uint64_t)0);
    bool empty = s->used == VG_SEG_META_MASK;
    if (empty && (all || kept) && (!aged_only || d == (s->dirty & ~s->decommitted)) && vg_segment_release(s)) {
      bytes += VG_SEG;
      continue;
    }
    if (empty) kept = true;
    uint64_t left = d;
    while (left) {
      unsigned first = (unsigned)__builtin_ctzll(left);
      /* Metadata pages are never dirty, so first > 0 and the shifted-in
       * zeros end the run. */
      unsigned n = (unsigned)__builtin_ctzll(~(left >> first));
      vg_os_decommit(page_addr(s, first), (size_t)n * VG_PAGE, remap_mode);
      VG_PROBE2(decommit, page_addr(s, first), (size_t)n * VG_PAGE);
      left &= ~run_mask(first, n);
    }
    s->decommitted |= d;
    s->dirty &= ~d;
    a->dirty -= (size_t)__builtin_popcountll(d) * VG_PAGE;
    bytes += (size_t)__builtin_popcountll(d) * VG_PAGE;
    s->aged = s->dirty; /* what is left is dirty as of this tick */
  }
  a->purged = bytes;
  return bytes != 0;
}

int vg_decommit_arena(struct arena *a, bool all) { return purge(a, all, false); }

/* The arena's threshold: the tunable, or more where the arena has learnt
 * that it needs more (see vg_decommit_refault). */
static size_t arena_threshold(struct arena *a) {
  size_t t = vg_trim_threshold();
  return load_relaxed(&vg_opt_thresholds_fixed) || a->trim < t ? t : a->trim;
}

/* Memory returned by the last purge is needed again (a decommitted page is
 * claimed, or a segment mapped) within decay_ms: the threshold was too low
 * for this arena's working set.  Raise it to twice what the purge returned
 * (and at least double it), so a working set that breathes by a fixed
 * amount stops being purged after one round, as glibc's dynamic threshold
 * does for mmapped chunks.  The learnt threshold stays under 64 MiB, or half
 * of what the arena has mapped when that is more: a heap of medium blocks
 * holds free pages between them (glibc keeps all of those), and pages left
 * unused still go back after decay_ms. */
#define LEARNED_MIN_CAP ((size_t)64 << 20)
void vg_decommit_refault(struct arena *a) {
  uint64_t decay_ns = (uint64_t)vg_option(OPT_decay_ms) * 1000000u;
  if (load_relaxed(&vg_opt_thresholds_fixed) || a->last_purge == 0 || vg_os_now_ns() - a->last_purge >= decay_ns)
    return;
  size_t t = arena_threshold(a), want = t ? 2 * t : VG_PAGE;
  size_t cap = a->mapped / 2 > LEARNED_MIN_CAP ? a->mapped / 2 : LEARNED_MIN_CAP;
  if (want < 2 * a->purged) want = 2 * a->purged;
  if (want > cap) want = cap;
  if (want > t) {
    a->trim = want;
    VG_PROBE2(threshold, a->index, a->trim);
  }
}

/* A thread left: its working set is gone, so the arena forgets what it
 * learnt and returns what exceeds the tunable. */
void vg_decommit_thread_exit(struct arena *a) {
  vg_lock(&a->lock);
  a->trim = 0;
  if (a->dirty > vg_trim_threshold()) {
    vg_decommit_arena(a, false);
    a->last_purge = vg_os_now_ns();
  }
  vg_unlock(&a->lock);
}

/* Once per decay_ms, at an arena operation: if the arena holds more dirty
 * bytes than its threshold, all of them go back; otherwise the pages that
 * were already dirty at the previous tick, which stayed unused for at least
 * decay_ms.  A working set reused faster than that keeps its pages and costs
 * no syscall, however long it runs.  Caller holds the arena lock. */
static void tick(struct arena *a, uint64_t now) {
  uint64_t decay_ns = (uint64_t)vg_option(OPT_decay_ms) * 1000000u;
  if (now - a->tick < decay_ns) return;
  bool over = a->dirty > arena_threshold(a);
  if (purge(a, false, !over)) a->last_purge = now;
  a->tick = now;
}

void vg_decommit_tick(struct arena *a) { tick(a, vg_os_now_ns()); }

/* After pages were freed.  Over the threshold, the purge waits for the next
 * tick (at most decay_ms), as mimalloc's and jemalloc's delays do: a program
 * that frees its working set and builds it again at once (BZ 17195's rounds)
 * then reuses the pages instead of faulting them back in.  Only past a hard
 * cap, 32 MiB or four times the threshold, do they go back at once, which
 * bounds what a burst of frees leaves resident.  A threshold the user set
 * (trim_threshold, M_TRIM_THRESHOLD) acts at once, as glibc's does. */
#define HARD_CAP_MIN ((size_t)32 << 20)
void vg_decommit_after_free(struct arena *a) {
  uint64_t now = vg_os_now_ns();
  size_t t = arena_threshold(a), cap = t;
  if (!load_relaxed(&vg_opt_thresholds_fixed)) cap = 4 * t > HARD_CAP_MIN ? 4 * t : HARD_CAP_MIN;
  if (a->dirty > cap) {
    purge(a, false, false);
    a->last_purge = a->tick = now;
  } else {
    tick(a, now);
  }
}

/* malloc_trim: everything that can go back, goes back now. */
int vg_trim_all(void) {
  int released = 0;
  struct heap *h = vg_tl_heap;
  if (h) {
    vg_quarantine_flush(h);
    vg_heap_tc_flush(h);
    vg_heap_flush_remote(h);
    vg_span_cache_flush(h);
    vg_heap_drain(h);
  }
  unsigned n = load_relaxed(&vg_narenas);
  for (unsigned i = 0; i < n; i++) {
    struct arena *a = vg_arena_at(i);
    if (a == NULL) continue;
    vg_lock(&a->lock);
    released |= vg_decommit_arena(a, true);
    vg_unlock(&a->lock);
  }
  released |= vg_large_trim();
  VG_PROBE1(trim, released);
  return released;
}
